"""Build record values: bind constructor arguments and validate field values with pydantic models."""

from __future__ import annotations

from typing import Any, Optional

from orgtree_lang.runtime.artifacts import BytesValue, from_plain
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.values import RecordValue, display
from orgtree_lang.syntax import types as t


class RecordTypes:
    """The record types of one program, with a strict pydantic model built lazily for each."""

    def __init__(self, specs: dict) -> None:
        self.specs = specs  # name -> compile.code.RecordSpec
        self._models: dict[str, Any] = {}

    def build(self, name: str, args: list[Any], kwargs: dict[str, Any]) -> RecordValue:
        spec = self.specs[name]
        field_names = [f for f, _ in spec.fields]
        if len(args) > len(field_names):
            raise PipeRuntimeError(f"record {name} has {len(field_names)} fields, got {len(args)} positional values",
                                   kind="type")
        values = dict(zip(field_names, args))
        for key, value in kwargs.items():
            if key not in field_names:
                raise PipeRuntimeError(f"record {name} has no field `{key}`", kind="type")
            values[key] = value
        for key, default in spec.defaults.items():
            values.setdefault(key, default)
        missing = [f for f in field_names if f not in values]
        if missing:
            raise PipeRuntimeError(f"record {name} is missing field{'s' if len(missing) > 1 else ''} "
                                   f"{', '.join(missing)}", kind="type")
        self._validate(name, values)
        floats = {f for f, ftype in spec.fields if ftype.kind == "float"}
        return RecordValue(name, {f: float(values[f]) if f in floats else values[f] for f in field_names})

    def from_plain(self, value: Any, ptype: t.PipeType) -> Any:
        """Turn JSON-shaped input (dicts) into records where `ptype` asks for them, recursively."""
        kind = ptype.kind
        if kind == "optional":
            return None if value is None else self.from_plain(value, ptype.arg)
        if kind == "record" and isinstance(value, dict) and ptype.name in self.specs:
            fields = dict(self.specs[ptype.name].fields)
            converted = {k: self.from_plain(v, fields[k]) if k in fields else v for k, v in value.items()}
            return self.build(ptype.name, [], converted)
        if kind == "list" and isinstance(value, list):
            return [self.from_plain(v, ptype.arg) for v in value]
        if kind == "dict" and isinstance(value, dict):
            return {k: self.from_plain(v, ptype.arg) for k, v in value.items()}
        if kind == "bytes" and isinstance(value, dict) and "base64" in value:
            try:
                return from_plain(value)
            except ValueError as err:
                raise PipeRuntimeError(f"the bytes value is not valid: {err}", kind="type",
                                       hint='give {"media_type": "image/png", "base64": "..."}') from None
        return value

    def _validate(self, name: str, values: dict[str, Any]) -> None:
        from pydantic import ValidationError

        model = self._model(name)
        try:
            model.model_validate(values)
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            spec_types = dict(self.specs[name].fields)
            expected = spec_types.get(str(first["loc"][0]), "")
            got = display(first.get("input"), True)
            raise PipeRuntimeError(
                f"record {name}: field `{where}` expected {expected}, got {got} ({first['msg'].lower()})",
                kind="type",
            ) from None

    def _model(self, name: str):
        if name not in self._models:
            from pydantic import ConfigDict, create_model

            spec = self.specs[name]
            fields = {f: (self._annotation(ft), ...) for f, ft in spec.fields}
            self._models[name] = create_model(
                f"Record_{name}", __config__=ConfigDict(strict=True, arbitrary_types_allowed=True), **fields
            )
        return self._models[name]

    def _annotation(self, ptype: t.PipeType):
        from typing import Annotated

        from pydantic import AfterValidator, StrictBool, StrictInt, StrictStr

        kind = ptype.kind
        if kind in ("str", "path"):
            return StrictStr
        if kind == "int":
            return StrictInt
        if kind == "float":
            return Annotated[Any, AfterValidator(_check_float)]
        if kind == "bool":
            return StrictBool
        if kind == "none":
            return None
        if kind == "list":
            return list[self._annotation(ptype.arg)]
        if kind == "dict":
            return dict[str, self._annotation(ptype.arg)]
        if kind == "optional":
            return Optional[self._annotation(ptype.arg)]
        if kind == "record":
            return Annotated[Any, AfterValidator(_check_record(ptype.name))]
        if kind == "bytes":
            return Annotated[Any, AfterValidator(_check_bytes)]
        return Any


def _check_float(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError("expected a number")
    return value


def _check_bytes(value: Any) -> Any:
    if not isinstance(value, BytesValue):
        raise ValueError("expected a bytes value")
    return value


def _check_record(name: str):
    def check(value: Any) -> Any:
        if not (isinstance(value, RecordValue) and value.record_name == name):
            raise ValueError(f"expected a {name} record")
        return value

    return check
