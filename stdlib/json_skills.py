"""JSON skills: parse JSON text into .pipe values and dump .pipe values as JSON text."""

from __future__ import annotations

import json
import math
from typing import Any

from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.runtime.skills import skill
from orgtree_lang.runtime.values import to_plain


@skill("json.parse", pure=True)
def parse(text: str) -> Any:
    """Parse JSON text into a value (objects become dicts, arrays lists, null none).

    Example: `json.parse('{"a": [1, null]}')  # {"a": [1, none]}`

    Args:
        text: The JSON document.

    Returns:
        The parsed value.
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        line = exc.doc.splitlines()[exc.lineno - 1] if exc.doc.splitlines() else ""
        raise SkillError(
            f"json.parse: {exc.msg} at line {exc.lineno}, column {exc.colno}",
            hint=f"{line}\n{' ' * (exc.colno - 1)}^",
        ) from None


@skill("json.dump", pure=True)
def dump(value: Any, indent: int | None = None, compact: bool = False) -> str:
    """Write a value as JSON text, keeping the order of dict keys; records are written as their fields.

    Three forms: one line with a space after `,` and `:` (the default), `compact=true` for no spaces at
    all, and `indent=2` for one item per line, nested items indented by 2 spaces.

    Example: `json.dump({"a": [1, none]})  # {"a": [1, null]}; compact=true gives {"a":[1,null]}`

    Args:
        value: Any value made of strings, numbers, booleans, none, lists, dicts and records.
        indent: Spaces per nesting level for readable output; none writes everything on one line.
        compact: On one line without spaces: `{"a":[1,2]}`.

    Returns:
        The JSON text.
    """
    if indent is not None and indent < 0:
        raise SkillError(f"json.dump: indent must be 0 or more, got {indent}")
    plain = to_plain(value)
    try:
        separators = (",", ":") if compact else None
        return json.dumps(plain, indent=indent, separators=separators, ensure_ascii=False, allow_nan=False)
    except ValueError:
        bad = _first_non_finite(plain)
        raise SkillError(
            f"json.dump: {bad} cannot be written as JSON",
            hint="JSON has no inf or nan; replace it (e.g. with none) before dumping",
        ) from None
    except TypeError as exc:
        raise SkillError(f"json.dump: {exc}") from None


def _first_non_finite(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return "inf" if value > 0 else "-inf" if value < 0 else "nan"
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for child in children:
        found = _first_non_finite(child)
        if found:
            return found
    return ""
