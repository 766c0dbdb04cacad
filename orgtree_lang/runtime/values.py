"""Runtime values of .pipe programs: records, display text, and an exact JSON encoding of any value."""

from __future__ import annotations

import math
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Callable

from orgtree_lang.runtime.artifacts import ENCODING_KEY as _BYTES_KEY
from orgtree_lang.runtime.artifacts import BytesValue, describe

if TYPE_CHECKING:
    from orgtree_lang.syntax.types import PipeType


class RecordValue:
    """An instance of a `record` type: a type name and validated field values (plain data)."""

    __slots__ = ("record_name", "fields")

    def __init__(self, record_name: str, fields: dict[str, Any]) -> None:
        self.record_name = record_name
        self.fields = fields

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, RecordValue)
            and other.record_name == self.record_name
            and other.fields == self.fields
        )

    def __hash__(self) -> int:
        return hash(self.record_name)

    def __repr__(self) -> str:
        return display(self)


class Unbound:
    """The marker stored in a local slot that has not been assigned yet."""

    _instance: Unbound | None = None

    def __new__(cls) -> Unbound:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<unbound>"


UNBOUND = Unbound()


def strict_equal(a: Any, b: Any) -> bool:
    """`==` of .pipe: equal values of the same kind, all the way down; `true == 1` is false, `1 == 1.0` true."""
    kind_a, kind_b = type(a), type(b)
    if kind_a is kind_b:
        if kind_a is list:
            return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b))
        if kind_a is dict:
            return a.keys() == b.keys() and all(strict_equal(v, b[k]) for k, v in a.items())
        if kind_a is RecordValue:
            return a.record_name == b.record_name and strict_equal(a.fields, b.fields)
        return a == b
    return kind_a in _NUMBERS and kind_b in _NUMBERS and a == b


_NUMBERS = (int, float)


def strict_contains(container: Any, item: Any) -> bool:
    """`in` of .pipe: a substring of a str, a key of a dict, or an item of a list equal by `strict_equal`."""
    if isinstance(container, list):
        return item in container and any(strict_equal(item, x) for x in container)
    return item in container


# A type test's tag (from the compiler) -> the Python types of the values of that kind.
_KINDS: dict[str, tuple[type, ...]] = {
    "int": (int,), "float": (float,), "str": (str,), "path": (str,), "bool": (bool,), "none": (type(None),),
    "list": (list,), "dict": (dict,), "bytes": (BytesValue,),
}


def is_kind(value: Any, tag: str) -> bool:
    """A type test: `tag` is a kind (`int`, `list`, `none`, ...), a record name, `any`, or one of those plus `?`."""
    if tag.endswith("?"):
        return value is None or is_kind(value, tag[:-1])
    if tag == "any":
        return True
    kinds = _KINDS.get(tag)
    if kinds is not None:
        return type(value) in kinds
    return isinstance(value, RecordValue) and value.record_name == tag


def display(value: Any, nested: bool = False) -> str:
    """How `print` and f-strings show a value: strings bare at top level, quoted inside containers."""
    if value is None:
        return "none"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _quote(value) if nested else value
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return _int_text(value)
    if isinstance(value, list):
        return "[" + ", ".join(display(v, True) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_quote(str(k))}: {display(v, True)}" for k, v in value.items()) + "}"
    if isinstance(value, RecordValue):
        inner = ", ".join(f"{k}={display(v, True)}" for k, v in value.fields.items())
        return f"{value.record_name}({inner})"
    if isinstance(value, BytesValue):
        return describe(value)
    return repr(value)


def display_short(value: Any, limit: int, nested: bool = True) -> str:
    """`display(value, nested)` cut to `limit` characters (the cut ends in "..."), rendering only what is kept:
    a summary of a huge list or string costs what the summary shows, not what the value holds."""
    if not isinstance(value, (list, dict, RecordValue)):  # the common case, a scalar: no generator needed
        text = _quote(value[: limit + 1]) if nested and isinstance(value, str) else (
            value[: limit + 1] if isinstance(value, str) else display(value, nested))
        return text if len(text) <= limit else text[: limit - 3] + "..."
    out: list[str] = []
    size = 0
    for chunk in _chunks(value, nested, limit):
        out.append(chunk)
        size += len(chunk)
        if size > limit:
            break
    text = "".join(out)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _chunks(value: Any, nested: bool, limit: int):
    """display()'s text in pieces, in order; a string is cut past `limit` (escaping is per character, so the
    text up to the cut is the same)."""
    if isinstance(value, str):
        yield _quote(value[: limit + 1]) if nested else value[: limit + 1]
    elif isinstance(value, list):
        yield "["
        for i, item in enumerate(value):
            if i:
                yield ", "
            yield from _chunks(item, True, limit)
        yield "]"
    elif isinstance(value, dict):
        yield "{"
        for i, (key, item) in enumerate(value.items()):
            yield (", " if i else "") + _quote(str(key)[: limit + 1]) + ": "
            yield from _chunks(item, True, limit)
        yield "}"
    elif isinstance(value, RecordValue):
        yield f"{value.record_name}("
        for i, (key, item) in enumerate(value.fields.items()):
            yield (", " if i else "") + f"{key}="
            yield from _chunks(item, True, limit)
        yield ")"
    else:
        yield display(value, nested)


# Python refuses to turn ints of more than ~4300 digits into text (a guard against quadratic work).
# Up to this many bits they are written out through Decimal; beyond it, only their size is shown.
_INT_TEXT_MAX_BITS = 350_000


def _int_text(value: int) -> str:
    try:
        return repr(value)
    except ValueError:
        if value.bit_length() <= _INT_TEXT_MAX_BITS:
            import decimal

            return str(decimal.Decimal(value))
        digits = int(value.bit_length() * math.log10(2)) + 1
        return f"<{'-' if value < 0 else ''}int of about {digits} digits>"


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


def to_plain(value: Any) -> Any:
    """A JSON-friendly view of a value for output (records become dicts with their fields)."""
    if isinstance(value, RecordValue):
        return {k: to_plain(v) for k, v in value.fields.items()}
    if isinstance(value, list):
        return [to_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, BytesValue):
        return {"media_type": value.media_type, "size": value.size, "sha256": value.sha256, "base64": value.base64}
    return value


def bytes_values(value: Any) -> list[BytesValue]:
    """Every bytes value inside `value` (in lists, dicts and record fields), in order, each once."""
    found: dict[str, BytesValue] = {}
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, BytesValue):
            found.setdefault(item.sha256 + item.media_type, item)
        elif isinstance(item, (list, dict, RecordValue)):
            children = item.fields.values() if isinstance(item, RecordValue) else (
                item.values() if isinstance(item, dict) else item)
            pending.extend(reversed(list(children)))
    return list(found.values())


# The exact encoding used for run state. Plain JSON values stand for themselves, except that
# records, the unbound marker, non-finite floats, ints too long for JSON's decimal text, and dicts
# that could be mistaken for one of these are wrapped in a one-key object whose key starts with "$".
_JSON_INT_MAX_BITS = 13_000  # under Python's 4300-digit limit for writing ints as decimal text


# Lists and dicts with at least this many items are encoded once per EncodingMemo while they stay the same object.
MEMO_MIN_ITEMS = 256
_MEMO: ContextVar[EncodingMemo | None] = ContextVar("encoding_memo", default=None)


class IdentityMemo:
    """What `make` gave for a big list or dict, by identity, from one generation (a checkpoint) to the next: an
    entry not used in a generation is dropped at `turn`, so the memo holds only what the state still holds."""

    def __init__(self) -> None:
        self._last: dict[int, tuple[Any, int, Any]] = {}  # id -> (the value, its length, what `make` gave)
        self._now: dict[int, tuple[Any, int, Any]] = {}

    def get(self, value: Any, make: Callable[[Any], Any]) -> Any:
        key = id(value)
        hit = self._now.get(key) or self._last.get(key)
        if hit is None or hit[0] is not value or hit[1] != len(value):
            hit = (value, len(value), make(value))
        self._now[key] = hit
        return hit[2]

    def turn(self) -> None:
        """End a generation: what it did not use is forgotten."""
        self._last, self._now = self._now, {}


class EncodingMemo(IdentityMemo):
    """The encodings of a run state's big lists and dicts, by identity, from one encoding of the state to the next.

    .pipe values are immutable (docs/language.md: skills return new values), so a list that is the same object
    as at the last checkpoint encodes the same: a loop over a million items re-encoded them at every checkpoint
    (each 50,000 steps), which made the loop quadratic. `with memo:` makes `encode` use it in this context; an
    entry not used by one encoding is dropped after it, so the memo holds only what the state still holds."""

    def __init__(self) -> None:
        super().__init__()
        self._token = None

    def __enter__(self) -> EncodingMemo:
        self._token = _MEMO.set(self)
        return self

    def __exit__(self, *exc_info) -> None:
        _MEMO.reset(self._token)
        self.turn()


def _encode_list(value: list) -> list:
    return [encode(v) for v in value]


def _encode_dict(value: dict) -> Any:
    encoded = {k: encode(v) for k, v in value.items()}
    if len(value) == 1 and next(iter(value)).startswith("$"):
        return {"$dict": encoded}
    return encoded


def encode(value: Any) -> Any:
    """Encode a runtime value as JSON-compatible data that `decode` turns back into an equal value."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > _JSON_INT_MAX_BITS:
        return {"$int": format(value, "x")}  # JSON cannot write ints this long as decimal text; hex has no limit
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {"$float": repr(value)}
    if isinstance(value, list):
        if len(value) >= MEMO_MIN_ITEMS:
            memo = _MEMO.get()
            if memo is not None:
                return memo.get(value, _encode_list)
        return [encode(v) for v in value]
    if isinstance(value, dict):
        if len(value) >= MEMO_MIN_ITEMS:
            memo = _MEMO.get()
            if memo is not None:
                return memo.get(value, _encode_dict)
        return _encode_dict(value)
    if isinstance(value, RecordValue):
        return {"$record": [value.record_name, {k: encode(v) for k, v in value.fields.items()}]}
    if isinstance(value, BytesValue):
        return value.encoded()
    if value is UNBOUND:
        return {"$unbound": 0}
    if isinstance(value, range):  # the state of a `for` loop over range(...): never a program's value
        return {"$range": [encode(value.start), encode(value.stop), encode(value.step)]}
    raise TypeError(f"cannot encode a {type(value).__name__} in run state")


def decode(data: Any) -> Any:
    """Inverse of `encode`."""
    if isinstance(data, list):
        return [decode(v) for v in data]
    if isinstance(data, dict):
        if len(data) == 1:
            (key, inner), = data.items()
            if key == "$record":
                name, fields = inner
                return RecordValue(name, {k: decode(v) for k, v in fields.items()})
            if key == "$dict":
                return {k: decode(v) for k, v in inner.items()}
            if key == "$float":
                return float(inner)
            if key == "$unbound":
                return UNBOUND
            if key == "$int":
                return int(inner, 16)
            if key == "$range":
                return range(*(decode(v) for v in inner))
            if key == _BYTES_KEY:
                return BytesValue.from_encoded(inner)
        return {k: decode(v) for k, v in data.items()}
    return data


_EXACT_TYPES = {"str": frozenset({str}), "path": frozenset({str}), "int": frozenset({int}),
                "float": frozenset({int, float}), "bool": frozenset({bool})}


def conforms(value: Any, ptype: "PipeType") -> bool:
    """True if a runtime value belongs to a PipeType (records are matched by name)."""
    kind = ptype.kind
    if kind == "any":
        return True
    exact = _EXACT_TYPES.get(kind)
    if exact is not None and type(value) in exact:
        return True  # the common case at once; a subclass (or a bool for an int) takes the full check below
    if kind == "optional":
        return value is None or conforms(value, ptype.arg)
    if kind == "none":
        return value is None
    if kind in ("str", "path"):
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "list":
        if not isinstance(value, list):
            return False
        if ptype.arg.is_any:
            return True
        exact = _EXACT_TYPES.get(ptype.arg.kind)
        if exact is not None and set(map(type, value)) <= exact:
            return True  # checked at C speed; anything else falls through to the full check
        return all(conforms(v, ptype.arg) for v in value)
    if kind == "dict":
        return isinstance(value, dict) and all(
            isinstance(k, str) and conforms(v, ptype.arg) for k, v in value.items()
        )
    if kind == "record":
        return isinstance(value, RecordValue) and value.record_name == ptype.name
    if kind == "bytes":
        return isinstance(value, BytesValue)
    return False
