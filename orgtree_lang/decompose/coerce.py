"""Fit a child's outputs to the block's declared types: exact coercions first, then at most one model reshape."""

from __future__ import annotations

import json
from typing import Any

from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.values import RecordValue, conforms, display, to_plain

RESHAPE_PROMPT = """\
You convert a value into JSON of a given .pipe type without changing its meaning. Types: str, int, float, bool,
list[T], dict[str, T], T? (may be null), and records (JSON objects with the listed fields). Answer with one
```json block holding only the converted value."""


class _NoCoercion(Exception):
    pass


def coerce(value: Any, ptype, records) -> Any:
    """`value` as `ptype` by a lossless rule (numeric text to a number, int to float, a record's fields to a
    record of the same shape, element by element for lists and dicts); raises _NoCoercion if there is none."""
    if conforms(value, ptype):
        return value
    kind = ptype.kind
    if kind == "optional":
        return None if value is None else coerce(value, ptype.arg, records)
    if kind == "float" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if kind == "int" and isinstance(value, float) and value.is_integer():
        return int(value)
    if kind in ("int", "float") and isinstance(value, str):
        try:
            number = float(value.strip()) if kind == "float" else int(value.strip())
        except ValueError:
            raise _NoCoercion from None
        return number
    if kind == "bool" and isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if kind == "list" and isinstance(value, list):
        return [coerce(v, ptype.arg, records) for v in value]
    if kind == "dict" and isinstance(value, dict):
        return {k: coerce(v, ptype.arg, records) for k, v in value.items()}
    if kind == "record" and isinstance(value, (RecordValue, dict)) and ptype.name in records.specs:
        given = value.fields if isinstance(value, RecordValue) else value
        fields = dict(records.specs[ptype.name].fields)
        converted = {k: coerce(v, fields[k], records) if k in fields else v for k, v in given.items()}
        try:
            rebuilt = records.build(ptype.name, [], converted)
        except PipeRuntimeError:
            raise _NoCoercion from None
        if conforms(rebuilt, ptype):
            return rebuilt
    raise _NoCoercion


def fit_outputs(outputs: dict[str, Any], spec, records, reshaper=None) -> dict[str, Any]:
    """The outputs with each value of the declared type; `reshaper(value, ptype)` is the model fallback.

    Raises a PipeRuntimeError naming the output, the type wanted and the value got when nothing fits."""
    fitted = dict(outputs)
    for name, ptype in spec.outputs:
        if name not in outputs:
            continue  # the VM reports a missing output
        value = outputs[name]
        try:
            fitted[name] = coerce(value, ptype, records)
            continue
        except _NoCoercion:
            pass
        reshaped = None
        if reshaper is not None:
            reshaped = reshaper(value, ptype)
            try:
                fitted[name] = coerce(reshaped, ptype, records)
                continue
            except _NoCoercion:
                pass
        tried = " or a model's reshaping" if reshaper is not None else ""
        got = f"; the reshaped value {display(reshaped, True)[:120]} does not fit either" if reshaper else ""
        raise PipeRuntimeError(
            f"output `{name}` of ambiguous block {spec.name} must be {ptype}, but the child returned "
            f"{display(value, True)[:120]}, which no exact conversion{tried} turns into {ptype}{got}",
            kind="ambiguous", catchable=False,
            hint="make the block's outputs or docstring more precise, or fix the saved module")
    return fitted


def model_reshaper(model, records, conversation: str):
    """A reshaper that asks `model` once per value to convert it to JSON of the type, then reads it back."""
    from orgtree_lang.models.base import Message, ModelError

    def reshape(value: Any, ptype) -> Any:
        shape = _describe_type(ptype, records)
        messages = [Message("system", RESHAPE_PROMPT),
                    Message("user", f"Type: {shape}\nValue: {json.dumps(to_plain(value), ensure_ascii=False)}")]
        try:
            text = model.complete(messages, conversation_id=conversation).text
        except ModelError:
            return None
        body = text.strip()
        if "```" in body:
            body = body.split("```", 2)[1]
            body = body[4:] if body.startswith("json") else body
        try:
            return records.from_plain(json.loads(body.strip()), ptype)
        except (json.JSONDecodeError, PipeRuntimeError):
            return None

    return reshape


def _describe_type(ptype, records) -> str:
    """The type as text, with the fields of the records it mentions."""
    text = str(ptype)
    pending, seen = [ptype], set()
    while pending:
        current = pending.pop()
        if current is None:
            continue
        if current.kind == "record" and current.name not in seen and current.name in records.specs:
            seen.add(current.name)
            fields = records.specs[current.name].fields
            text += f"\nrecord {current.name}: " + ", ".join(f"{n}: {t}" for n, t in fields)
            pending.extend(t for _, t in fields)
        if current.arg is not None:
            pending.append(current.arg)
    return text
