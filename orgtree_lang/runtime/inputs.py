"""Parse input values given as text (`-i key=value`) by the .pipe type of the parameter they are for."""

from __future__ import annotations

import json
from typing import Any

from orgtree_lang.syntax.errors import UsageError


class InputError(UsageError):
    """An input value that cannot be read as its parameter's type."""


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
        return json.loads(json_text)
    except json.JSONDecodeError:
        if kind == "any":
            return text
        raise InputError(f"input `{name}` is a {ptype}: give it as JSON, got {text!r}") from None
