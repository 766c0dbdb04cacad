"""Read the entry pipeline's inputs (`-i key=value` text or JSON values) and find every problem with them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from orgtree_lang.runtime.artifacts import BytesValue, guess_media_type
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.values import conforms, display_short
from orgtree_lang.syntax.errors import UsageError


# Lists and dicts nested in one input value; deeper values would exhaust Python's stack on the way in.
MAX_INPUT_DEPTH = 100


class InputError(UsageError):
    """An input that is missing, unknown, unparsable or of the wrong type: a usage error (exit 2)."""


def nesting_depth(value: Any) -> int:
    """How deep lists and dicts nest in `value` (0 for a scalar), counted without recursion."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, (list, dict, tuple)):
            deepest = max(deepest, depth)
            pending.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def json_nesting_depth(text: str) -> int:
    """How deep arrays and objects nest in JSON `text`, read from its brackets outside strings, before any parse
    (json.loads itself fails with a RecursionError on text nested about a thousand deep)."""
    deepest = depth = 0
    for bracket in _BRACKETS.findall(_STRINGS.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


# A JSON string (escapes included), and a bracket: what is left of a JSON text that counts for its nesting.
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_BRACKETS = re.compile(r"[\[\]{}]")


def nesting_problem(what: str, depth: int) -> str | None:
    """The message for `what` (e.g. "input `rows`") nesting `depth` deep, or None within MAX_INPUT_DEPTH."""
    if depth <= MAX_INPUT_DEPTH:
        return None
    return f"{what} nests lists or dicts {depth} deep: expected at most {MAX_INPUT_DEPTH} levels"


def check_nesting(what: str, value: Any, error: type[UsageError] = UsageError,
                  hint: str = "give a flatter value (a list of records, or a text read at run time)") -> Any:
    """Return value, or raise `error` when its lists and dicts nest deeper than MAX_INPUT_DEPTH."""
    problem = nesting_problem(what, nesting_depth(value))
    if problem is not None:
        raise error(problem, hint=hint)
    return value


def load_json(what: str, text: str, error: type[UsageError] = UsageError,
              hint: str = "give a flatter value (a list of records, or a text read at run time)") -> Any:
    """json.loads(text), refusing text nested deeper than MAX_INPUT_DEPTH with `error` before it is parsed;
    an invalid text raises json.JSONDecodeError as json.loads does."""
    problem = nesting_problem(what, json_nesting_depth(text))
    if problem is not None:
        raise error(problem, hint=hint)
    return json.loads(text)


_INPUT_HINT = "give a flatter value, or read the data at run time with fs.read"


def check_depth(name: str, value: Any) -> Any:
    """Return the entry input `name`'s value, or refuse it when it nests deeper than MAX_INPUT_DEPTH."""
    return check_nesting(f"input `{name}`", value, InputError, _INPUT_HINT)


def parse_input(name: str, text: str, ptype) -> Any:
    """Parse a -i value by its parameter's type: str and path as given, bool exactly `true`/`false`, int and float
    as numbers, everything else as JSON (`none`/`null` for an optional parameter)."""
    kind = ptype.arg.kind if ptype.kind == "optional" else ptype.kind
    if ptype.kind == "optional" and text in ("none", "null"):
        return None
    if kind in ("str", "path"):
        return text
    if kind == "bytes":
        return _file_input(name, text)
    if kind == "bool":
        if text in ("true", "false"):
            return text == "true"
        raise InputError(f"input `{name}` ({ptype}): expected true or false, got {text!r}")
    if kind == "int":
        try:
            return int(text)
        except ValueError:
            raise InputError(f"input `{name}` ({ptype}): expected a whole number, got {text!r}") from None
    if kind == "float":
        try:
            return float(text)
        except ValueError:
            raise InputError(f"input `{name}` ({ptype}): expected a number, got {text!r}") from None
    json_text = {"none": "null", "true": "true", "false": "false"}.get(text, text)
    try:
        return load_json(f"input `{name}`", json_text, InputError, _INPUT_HINT)
    except json.JSONDecodeError:
        if kind == "any":
            return text
        raise InputError(f"input `{name}` ({ptype}): expected JSON, e.g. -i '{name}=[1, 2]', got {text!r}") from None


def _file_input(name: str, text: str) -> Any:
    """A bytes input: the file named by `-i name=FILE` (relative to the current folder), its media type guessed from
    its name; `FILE:MEDIA/TYPE` names the type."""
    path, media = text, None
    if ":" in text and "/" in text.rsplit(":", 1)[1] and not Path(text).exists():
        path, media = text.rsplit(":", 1)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"input `{name}` (bytes): cannot read the file {path!r}: {exc.strerror}",
                         hint=f"give a file: -i {name}=photo.png (or photo.png:image/png to name its media type)"
                         ) from None
    return BytesValue(data, media or guess_media_type(path))


def check_inputs(code, inputs: dict[str, Any], records) -> None:
    """Raise InputError for the first input problem of a call of `code` (a CodeObject) with `inputs`.

    Unknown names, missing parameters without a default, values nested deeper than MAX_INPUT_DEPTH (an MCP
    client's arguments too), and values that do not fit their parameter's type
    (records built field by field with `records`, a RecordTypes) are found here, before the run starts."""
    from orgtree_lang.syntax.diagnostics import did_you_mean

    params = {p.name: p for p in code.params}
    signature = ", ".join(f"{p.name}: {p.type}" for p in code.params) or "none"
    for key in inputs:
        if key not in params:
            hint = did_you_mean(key, params)
            raise InputError(f"pipeline {code.name} has no parameter `{key}`{'; ' + hint if hint else ''} "
                             f"(parameters: {signature})")
    for param in code.params:
        if param.name not in inputs:
            if not param.has_default:
                raise InputError(f"pipeline {code.name} needs input `{param.name}` ({param.type}): "
                                 f"pass it with -i {param.name}=VALUE")
            continue
        value = check_depth(param.name, inputs[param.name])  # what -i and --inputs check, for every caller
        try:
            converted = records.from_plain(value, param.type)
        except PipeRuntimeError as err:
            raise InputError(f"input `{param.name}` ({param.type}): {err.message}") from None
        if not conforms(converted, param.type):
            raise InputError(f"input `{param.name}` ({param.type}): got {display_short(value, 60)}")
