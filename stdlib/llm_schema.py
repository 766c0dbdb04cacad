"""Turn the `schema` argument of llm.extract (field -> .pipe type, or a JSON schema) into a strict pydantic model."""

from __future__ import annotations

from typing import Any, Literal, Optional, Union

import orgtree_lang.syntax.types as T
from orgtree_lang.runtime.errors import SkillError

_HINT = ('give the fields and their .pipe types, e.g. {"name": "str", "age": "int", "tags": "list[str]"}, '
         'or a JSON schema with "type": "object" and "properties"')
_JSON_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool, "null": type(None)}


def schema_model(schema: dict[str, Any]) -> type:
    """A pydantic model class for `schema`; SkillError saying what is wrong with it when it cannot be one.

    Two spellings: {"field": ".pipe type", ...} (every field required, `T?` may be none), or a JSON schema
    object ({"type": "object", "properties": {...}, "required": [...]}). Unknown fields are refused.
    """
    if not isinstance(schema, dict) or not schema:
        raise SkillError("llm.extract: the schema must be a non-empty dict", hint=_HINT)
    if "properties" in schema:
        return _object_model(schema, "Extracted", "schema")
    fields = {}
    for name, text in schema.items():
        if not isinstance(text, str):
            raise SkillError(f"llm.extract: field `{name}` of the schema must name a .pipe type as a string, "
                             f"got {text!r}", hint=_HINT)
        try:
            ptype = T.parse(text)
        except Exception as exc:
            raise SkillError(f"llm.extract: field `{name}` has type {text!r}, which is not a .pipe type: {exc}",
                             hint=_HINT) from None
        fields[name] = (_pipe_annotation(ptype, name), ...)
    return _make("Extracted", fields)


def _make(name: str, fields: dict[str, Any]) -> type:
    from pydantic import ConfigDict, create_model

    try:
        return create_model(name, __config__=ConfigDict(strict=True, extra="forbid"), **fields)
    except Exception as exc:  # a field name pydantic refuses, e.g. one starting with "_"
        raise SkillError(f"llm.extract: the schema cannot be used: {exc}", hint=_HINT) from None


def _pipe_annotation(ptype: T.PipeType, where: str) -> Any:
    kind = ptype.kind
    if kind in ("str", "path"):
        return str
    if kind in ("int", "float", "bool"):
        return {"int": int, "float": float, "bool": bool}[kind]
    if kind == "none":
        return type(None)
    if kind == "any":
        return Any
    if kind == "optional":
        return Optional[_pipe_annotation(ptype.arg, where)]
    if kind == "list":
        return list[_pipe_annotation(ptype.arg, where)]
    if kind == "dict":
        return dict[str, _pipe_annotation(ptype.arg, where)]
    raise SkillError(f"llm.extract: field `{where}` has type {ptype}, which is not a .pipe type a schema can use "
                     "(str, int, float, bool, none, any, list[T], dict[str, T], T?; no record names)",
                     hint="spell a record's fields out as a nested JSON schema object")


def _object_model(schema: dict[str, Any], name: str, where: str) -> type:
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        raise SkillError(f"llm.extract: `properties` of {where} must be an object of field schemas", hint=_HINT)
    required = schema.get("required", list(properties))
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise SkillError(f"llm.extract: `required` of {where} must be a list of field names", hint=_HINT)
    unknown = [r for r in required if r not in properties]
    if unknown:
        raise SkillError(f"llm.extract: {where} requires {', '.join(unknown)}, which are not in its properties",
                         hint=_HINT)
    fields = {}
    for field, sub in properties.items():
        annotation = _json_annotation(sub, f"{where}.{field}", f"{name}_{field}")
        fields[field] = (annotation, ...) if field in required else (Optional[annotation], None)
    return _make(name, fields)


def _json_annotation(schema: Any, where: str, name: str) -> Any:
    if schema is True or schema == {}:
        return Any
    if not isinstance(schema, dict):
        raise SkillError(f"llm.extract: {where} must be a JSON schema object, got {schema!r}", hint=_HINT)
    if "$ref" in schema:
        raise SkillError(f"llm.extract: {where} uses $ref, which is not supported", hint="write the object inline")
    if "enum" in schema:
        values = schema["enum"]
        if not isinstance(values, list) or not values:
            raise SkillError(f"llm.extract: `enum` of {where} must be a non-empty list", hint=_HINT)
        return Literal[tuple(values)]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [_json_annotation(s, f"{where}.{key}[{i}]", f"{name}_{i}") for i, s in enumerate(schema[key])]
            return Union[tuple(options)] if options else Any
    kind = schema.get("type")
    if isinstance(kind, list):
        return Union[tuple(_json_annotation({**schema, "type": k}, where, name) for k in kind)]
    if kind in _JSON_TYPES:
        return _JSON_TYPES[kind]
    if kind == "array":
        return list[_json_annotation(schema.get("items", {}), f"{where}[]", f"{name}_item")]
    if kind == "object" or (kind is None and "properties" in schema):
        if "properties" in schema:
            return _object_model(schema, name, where)
        extra = schema.get("additionalProperties", {})
        return dict[str, _json_annotation(extra if extra is not True else {}, f"{where}.*", f"{name}_value")]
    if kind is None:
        return Any
    raise SkillError(f"llm.extract: {where} has the unknown JSON type {kind!r}",
                     hint="use string, integer, number, boolean, null, array or object")
