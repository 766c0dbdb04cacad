"""Parse input values given as text (`-i key=value`) by the .pipe type of the parameter they are for."""

from __future__ import annotations

import json
from typing import Any

from orgtree_lang.syntax.errors import UsageError


# Lists and dicts nested in one input value; deeper values would exhaust Python's stack on the way in.
MAX_INPUT_DEPTH = 100


class InputError(UsageError):
    """An input value that cannot be read as its parameter's type."""


def check_depth(name: str, value: Any) -> Any:
    """Return value, or refuse it when its lists and dicts nest deeper than MAX_INPUT_DEPTH."""
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, (list, dict)):
            if depth > MAX_INPUT_DEPTH:
                raise too_deep(name)
            pending.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return value


def too_deep(name: str) -> InputError:
    return InputError(f"input `{name}` nests lists or dicts more than {MAX_INPUT_DEPTH} deep",
                      hint="give a flatter value, or read the data at run time with fs.read")


def parse_input(name: str, text: str, ptype) -> Any:
    """Parse a -i value: strings and paths as given, everything else as a .pipe/JSON literal."""
    kind = ptype.arg.kind if ptype.kind == "optional" else ptype.kind
    if ptype.kind == "optional" and text in ("none", "null"):
        return None
    if kind in ("str", "path"):
        return text
    if kind == "bool":
        if text.lower() in ("true", "1", "yes"):
            return True
        if text.lower() in ("false", "0", "no"):
            return False
        raise InputError(f"input `{name}` is a bool: give true or false, got {text!r}")
    if kind == "int":
        try:
            return int(text)
        except ValueError:
            raise InputError(f"input `{name}` is an int, got {text!r}") from None
    if kind == "float":
        try:
            return float(text)
        except ValueError:
            raise InputError(f"input `{name}` is a float, got {text!r}") from None
    json_text = {"none": "null", "true": "true", "false": "false"}.get(text, text)
    try:
        return check_depth(name, json.loads(json_text))
    except RecursionError:
        raise too_deep(name) from None
    except json.JSONDecodeError:
        if kind == "any":
            return text
        raise InputError(f"input `{name}` is a {ptype}: give it as JSON, got {text!r}") from None
