"""Turn type expressions (from .pipe source, Python hints or strings) into PipeType values and compare them."""

from __future__ import annotations

import collections.abc
import types as _pytypes
import typing
from dataclasses import dataclass
from pathlib import PurePath

PRIMITIVES = ("str", "int", "float", "bool", "none", "path", "bytes", "any")


@dataclass(frozen=True)
class PipeType:
    """A .pipe type: a primitive, list[T], dict[str, T], T? or a record by name."""

    kind: str  # one of PRIMITIVES, "list", "dict", "optional", "record"
    arg: PipeType | None = None  # element type for list/dict/optional
    name: str = ""  # record name

    def __str__(self) -> str:
        if self.kind == "list":
            return f"list[{self.arg}]"
        if self.kind == "dict":
            return f"dict[str, {self.arg}]"
        if self.kind == "optional":
            return f"{self.arg}?"
        if self.kind == "record":
            return self.name
        return self.kind

    @property
    def is_any(self) -> bool:
        return self.kind == "any"


ANY = PipeType("any")
STR = PipeType("str")
INT = PipeType("int")
FLOAT = PipeType("float")
BOOL = PipeType("bool")
NONE = PipeType("none")
PATH = PipeType("path")
BYTES = PipeType("bytes")  # binary data with a media type (runtime/artifacts.py BytesValue)
# What `.NAME` reads of a bytes value.
BYTES_FIELDS: dict[str, PipeType] = {"media_type": STR, "size": INT, "sha256": STR}


def list_of(elem: PipeType) -> PipeType:
    return PipeType("list", elem)


def dict_of(value: PipeType) -> PipeType:
    return PipeType("dict", value)


def optional(inner: PipeType) -> PipeType:
    if inner.kind in ("optional", "any", "none"):
        return inner
    return PipeType("optional", inner)


def record(name: str) -> PipeType:
    return PipeType("record", name=name)


def primitive(name: str) -> PipeType:
    if name not in PRIMITIVES:
        raise ValueError(f"unknown type {name!r}")
    return PipeType(name)


def is_assignable(source: PipeType, target: PipeType) -> bool:
    """True if a value of static type `source` may be used where `target` is expected."""
    if source.is_any or target.is_any:
        return True
    if source == target:
        return True
    if target.kind == "optional":
        return source.kind == "none" or is_assignable(_strip_optional(source), target.arg)
    if source.kind == "optional":
        # A maybe-none value may flow anywhere its inner type may; none is checked at run time.
        return is_assignable(source.arg, target)
    if {source.kind, target.kind} == {"str", "path"}:
        return True
    if source.kind == "int" and target.kind == "float":
        return True
    if source.kind == target.kind and source.kind in ("list", "dict"):
        return is_assignable(source.arg, target.arg)
    return False


def _strip_optional(t: PipeType) -> PipeType:
    return t.arg if t.kind == "optional" else t


def join(a: PipeType, b: PipeType) -> PipeType:
    """The narrowest type that holds values of both `a` and `b` (falls back to any)."""
    if a == b:
        return a
    if a.kind == "none":
        return optional(b)
    if b.kind == "none":
        return optional(a)
    if {a.kind, b.kind} <= {"int", "float"}:
        return FLOAT
    if a.kind == b.kind and a.kind in ("list", "dict"):
        inner = join(a.arg, b.arg)
        return PipeType(a.kind, inner)
    if a.kind == "optional" or b.kind == "optional":
        inner = join(_strip_optional(a), _strip_optional(b))
        return ANY if inner.is_any else optional(inner)
    return ANY


def parse(text: str) -> PipeType:
    """Parse the canonical string form (`list[dict[str, int]]?`) back into a PipeType."""
    parser = _TypeText(text)
    result = parser.type()
    parser.expect_end()
    return result


class _TypeText:
    """A tiny recursive-descent reader for serialized type strings."""

    def __init__(self, text: str) -> None:
        self.text = text.replace(" ", "")
        self.pos = 0

    def type(self) -> PipeType:
        name = self._name()
        if name == "list":
            self._eat("[")
            result = list_of(self.type())
            self._eat("]")
        elif name == "dict":
            self._eat("[")
            key = self._name()
            if key != "str":
                raise ValueError(f"dict keys must be str, got {key!r} in {self.text!r}")
            self._eat(",")
            result = dict_of(self.type())
            self._eat("]")
        elif name in PRIMITIVES:
            result = PipeType(name)
        else:
            result = record(name)
        while self.pos < len(self.text) and self.text[self.pos] == "?":
            self.pos += 1
            result = optional(result)
        return result

    def expect_end(self) -> None:
        if self.pos != len(self.text):
            raise ValueError(f"unexpected {self.text[self.pos:]!r} in type {self.text!r}")

    def _name(self) -> str:
        start = self.pos
        while self.pos < len(self.text) and (self.text[self.pos].isalnum() or self.text[self.pos] in "_."):
            self.pos += 1
        if start == self.pos:
            raise ValueError(f"expected a type name at {self.text[start:]!r} in {self.text!r}")
        return self.text[start : self.pos]

    def _eat(self, char: str) -> None:
        if not self.text.startswith(char, self.pos):
            raise ValueError(f"expected {char!r} at {self.text[self.pos:]!r} in {self.text!r}")
        self.pos += 1


def from_python(hint: object) -> PipeType:
    """Map a Python type hint (as used in @skill signatures) to a PipeType."""
    if hint is typing.Any or hint is object:
        return ANY
    if hint is None or hint is type(None):
        return NONE
    if hint is str:
        return STR
    if hint is bool:
        return BOOL
    if hint is int:
        return INT
    if hint is float:
        return FLOAT
    if isinstance(hint, type) and issubclass(hint, PurePath):
        return PATH
    if hint is bytes or getattr(hint, "pipe_kind", None) == "bytes":
        return BYTES
    if hint is list:
        return list_of(ANY)
    if hint is dict:
        return dict_of(ANY)
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (list, collections.abc.Sequence, collections.abc.Iterable):
        return list_of(from_python(args[0]) if args else ANY)
    if origin is tuple:
        return list_of(_join_all(from_python(a) for a in args if a is not Ellipsis))
    if origin is dict:
        return dict_of(from_python(args[1]) if len(args) == 2 else ANY)
    if origin in (typing.Union, _pytypes.UnionType):
        members = [a for a in args if a is not type(None)]
        inner = _join_all(from_python(a) for a in members)
        return optional(inner) if len(members) < len(args) else inner
    if origin is typing.Literal:
        return _join_all(from_python(type(a)) for a in args)
    return ANY


def _join_all(items) -> PipeType:
    result: PipeType | None = None
    for item in items:
        result = item if result is None else join(result, item)
    return result or ANY


def type_of_value(value: object) -> PipeType:
    """The most specific PipeType for a runtime value (used for error messages)."""
    if value is None:
        return NONE
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        return INT
    if isinstance(value, float):
        return FLOAT
    if isinstance(value, str):
        return STR
    if isinstance(value, list):
        return list_of(_join_all(type_of_value(v) for v in value[:20]) if value else ANY)
    if isinstance(value, dict):
        return dict_of(_join_all(type_of_value(v) for v in list(value.values())[:20]) if value else ANY)
    record_name = getattr(value, "record_name", None)
    if record_name:
        return record(record_name)
    if getattr(value, "pipe_kind", None) == "bytes":
        return BYTES
    return ANY


def a(ptype: PipeType | str) -> str:
    """A type name with its article, for messages: `an int`, `a list[str]`."""
    text = str(ptype)
    return ("an " if text[:1] in ("a", "e", "i", "o", "u") else "a ") + text


def mismatch_hint(source: PipeType, target: PipeType) -> str | None:
    """How to fix passing a `source` value where `target` is expected, when a bytes value is one side of it."""
    source = _strip_optional(source)
    target = _strip_optional(target)
    if source.kind == "bytes" and target.kind in ("str", "path"):
        return ("a bytes value is binary data, not text: decode it with `text.from_bytes(value)`, write it to a "
                "file with `fs.write_bytes(path, value)`, or pass one of its fields, `value.media_type`, "
                "`value.size` or `value.sha256`")
    if source.kind in ("str", "path") and target.kind == "bytes":
        return ("read a file's bytes with `fs.read_bytes(path)`, or make bytes of a text with "
                "`text.to_bytes(text, media_type=...)`")
    if "bytes" in (source.kind, target.kind):
        return f"bytes values are binary data with fields {', '.join(f'`.{f}`' for f in BYTES_FIELDS)}"
    return None


def operator_hint(left: PipeType, right: PipeType) -> str | None:
    """How to fix an operator over a bytes value, which takes none but `==`, `!=` and `is`."""
    if "bytes" in (_strip_optional(left).kind, _strip_optional(right).kind):
        return ("bytes values take no arithmetic: use `value.size` for the number of bytes, "
                "and a skill (fs.write_bytes, llm.ask) to do something with the data")
    return None
