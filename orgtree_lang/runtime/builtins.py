"""The built-in functions: one table of signatures (read by the checker) and implementations (run by the VM)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from orgtree_lang.runtime.artifacts import BytesValue
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.values import RecordValue, display
from orgtree_lang.syntax import types as t

# Materialized lists (range, repetition) larger than this are refused rather than exhausting memory.
MAX_SEQUENCE = 10_000_000

Printer = Callable[[str], None]


@dataclass(frozen=True)
class Builtin:
    """A pure built-in: arity limits, keyword names, static return type, and its implementation."""

    name: str
    min_args: int
    max_args: int | None  # None: any number
    keywords: tuple[str, ...]
    signature: str
    returns: Callable[[list[t.PipeType]], t.PipeType]
    impl: Callable[..., Any]  # impl(args, kwargs, printer)


def _err(message: str, hint: str | None = None) -> PipeRuntimeError:
    return PipeRuntimeError(message, kind="type", hint=hint)


def _type_name(value: Any) -> str:
    return str(t.type_of_value(value))


def _iterable(value: Any, builtin: str) -> list:
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        return list(value)
    if isinstance(value, dict):
        return list(value)
    raise _err(f"{builtin}() needs a list, str or dict, got {_type_name(value)}")


def _len(args, kwargs, out):
    value = args[0]
    if isinstance(value, (str, list, dict)):
        return len(value)
    if isinstance(value, RecordValue):
        return len(value.fields)
    if isinstance(value, BytesValue):
        return value.size
    raise _err(f"len() needs a str, list or dict, got {_type_name(value)}")


def range_of(args) -> range:
    """The range `range(*args)` stands for, its arguments checked; a `for` loop runs over it unbuilt."""
    for a in args:
        if not isinstance(a, int) or isinstance(a, bool):
            raise _err(f"range() needs int arguments, got {_type_name(a)}")
    return range(*args)


def _range(args, kwargs, out):
    r = range_of(args)
    if len(r) > MAX_SEQUENCE:
        raise _err(f"range() of {len(r)} items is larger than the limit of {MAX_SEQUENCE}")
    return list(r)


def _str(args, kwargs, out):
    return display(args[0]) if args else ""


def _int(args, kwargs, out):
    value = args[0] if args else 0
    if isinstance(value, str):
        try:
            return int(value.strip().replace("_", ""))
        except ValueError:
            raise _err(f"int() cannot parse {display(value, True)} as an integer") from None
    if isinstance(value, (int, float)):
        return int(value)
    raise _err(f"int() needs a str, int, float or bool, got {_type_name(value)}")


def _float(args, kwargs, out):
    value = args[0] if args else 0.0
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            raise _err(f"float() cannot parse {display(value, True)} as a number") from None
    if isinstance(value, (int, float)):
        return float(value)
    raise _err(f"float() needs a str, int, float or bool, got {_type_name(value)}")


def _bool(args, kwargs, out):
    return bool(args[0]) if args else False


def _list(args, kwargs, out):
    return list(_iterable(args[0], "list")) if args else []


def _dict(args, kwargs, out):
    if not args:
        return {}
    value = args[0]
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, RecordValue):
        return dict(value.fields)
    if isinstance(value, list):
        result = {}
        for item in value:
            if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
                raise _err("dict() needs a list of [key, value] pairs with str keys")
            result[item[0]] = item[1]
        return result
    raise _err(f"dict() needs a dict, a record or a list of pairs, got {_type_name(value)}")


def _extreme(name: str, pick: Callable):
    def impl(args, kwargs, out):
        items = _iterable(args[0], name) if len(args) == 1 else list(args)
        if not items:
            raise _err(f"{name}() of an empty list")
        try:
            return pick(items)
        except TypeError:
            raise _err(f"{name}() cannot compare {', '.join(sorted({_type_name(i) for i in items}))}") from None

    return impl


def _sum(args, kwargs, out):
    items = _iterable(args[0], "sum")
    total = args[1] if len(args) > 1 else kwargs.get("start", 0)
    for item in items:
        if not isinstance(item, (int, float)) or not isinstance(total, (int, float)):
            raise _err(f"sum() adds numbers, got {_type_name(item)}", "join strings with text.join")
        total = total + item
    return total


def _abs(args, kwargs, out):
    if not isinstance(args[0], (int, float)):
        raise _err(f"abs() needs a number, got {_type_name(args[0])}")
    return abs(args[0])


def _round(args, kwargs, out):
    digits = args[1] if len(args) > 1 else kwargs.get("ndigits")
    if not isinstance(args[0], (int, float)):
        raise _err(f"round() needs a number, got {_type_name(args[0])}")
    return round(args[0]) if digits is None else round(args[0], digits)


def _sorted(args, kwargs, out):
    items = _iterable(args[0], "sorted")
    try:
        return sorted(items, reverse=bool(kwargs.get("reverse", False)))
    except TypeError:
        raise _err(f"sorted() cannot compare {', '.join(sorted({_type_name(i) for i in items}))}") from None


def _reversed(args, kwargs, out):
    return list(reversed(_iterable(args[0], "reversed")))


def _enumerate(args, kwargs, out):
    start = args[1] if len(args) > 1 else kwargs.get("start", 0)
    return [[i, item] for i, item in enumerate(_iterable(args[0], "enumerate"), start)]


def _zip(args, kwargs, out):
    return [list(group) for group in zip(*(_iterable(a, "zip") for a in args))]


def _print(args, kwargs, out):
    sep = kwargs.get("sep", " ")
    out(str(sep).join(display(a) for a in args))
    return None


def _same(types: list[t.PipeType]) -> t.PipeType:
    return types[0] if types else t.ANY


def _element(types: list[t.PipeType]) -> t.PipeType:
    if len(types) == 1 and types[0].kind == "list":
        return types[0].arg
    return t.ANY


def _const(result: t.PipeType) -> Callable[[list[t.PipeType]], t.PipeType]:
    return lambda types: result


def _list_result(types: list[t.PipeType]) -> t.PipeType:
    if types and types[0].kind == "list":
        return types[0]
    if types and types[0].kind == "str":
        return t.list_of(t.STR)
    return t.list_of(t.ANY)


def _numeric(types: list[t.PipeType]) -> t.PipeType:
    if types and types[0].kind == "list" and types[0].arg.kind in ("int", "float"):
        return types[0].arg
    return t.ANY


BUILTINS: dict[str, Builtin] = {
    b.name: b
    for b in [
        Builtin("len", 1, 1, (), "len(value) -> int", _const(t.INT), _len),
        Builtin("range", 1, 3, (), "range([start,] stop[, step]) -> list[int]", _const(t.list_of(t.INT)), _range),
        Builtin("str", 0, 1, (), "str(value) -> str", _const(t.STR), _str),
        Builtin("int", 0, 1, (), "int(value) -> int", _const(t.INT), _int),
        Builtin("float", 0, 1, (), "float(value) -> float", _const(t.FLOAT), _float),
        Builtin("bool", 0, 1, (), "bool(value) -> bool", _const(t.BOOL), _bool),
        Builtin("list", 0, 1, (), "list(items) -> list", _list_result, _list),
        Builtin("dict", 0, 1, (), "dict(pairs) -> dict[str, any]", _const(t.dict_of(t.ANY)), _dict),
        Builtin("min", 1, None, (), "min(items) or min(a, b, ...)", _element, _extreme("min", min)),
        Builtin("max", 1, None, (), "max(items) or max(a, b, ...)", _element, _extreme("max", max)),
        Builtin("sum", 1, 2, ("start",), "sum(items, start=0)", _numeric, _sum),
        Builtin("abs", 1, 1, (), "abs(number)", _same, _abs),
        Builtin("round", 1, 2, ("ndigits",), "round(number, ndigits=none)", _const(t.ANY), _round),
        Builtin("sorted", 1, 1, ("reverse",), "sorted(items, reverse=false) -> list", _list_result, _sorted),
        Builtin("reversed", 1, 1, (), "reversed(items) -> list", _list_result, _reversed),
        Builtin("enumerate", 1, 2, ("start",), "enumerate(items, start=0) -> list[list]",
                _const(t.list_of(t.list_of(t.ANY))), _enumerate),
        Builtin("zip", 1, None, (), "zip(a, b, ...) -> list[list]", _const(t.list_of(t.list_of(t.ANY))), _zip),
        Builtin("print", 0, None, ("sep",), "print(values..., sep=\" \")", _const(t.NONE), _print),
    ]
}

# The record bound by `except err:`; user code reads its fields like any record's.
ERROR_RECORD = "Error"
ERROR_FIELDS: dict[str, t.PipeType] = {"message": t.STR, "kind": t.STR, "file": t.STR, "line": t.INT}


# The record `spawn` gives: which task runs the spawned call, its org tree node, and its pipeline.
HANDLE_RECORD = "Handle"
HANDLE_FIELDS: dict[str, t.PipeType] = {"task": t.INT, "node": t.STR, "pipeline": t.STR}

# The record `receive` gives (docs/org.md, Messages): who sent it, its topic, what it carries, and when (the run's
# statement count at the send: a logical clock, the same in a run, its resume and its replay).
MESSAGE_RECORD = "Message"
MESSAGE_FIELDS: dict[str, t.PipeType] = {"sender": t.STR, "topic": t.STR, "body": t.ANY, "sent_at": t.FLOAT}


def error_value(err: PipeRuntimeError) -> RecordValue:
    """The Error record for a caught runtime error."""
    span = err.span
    return RecordValue(
        ERROR_RECORD,
        {"message": err.message, "kind": err.kind, "file": span.file if span else "", "line": span.line if span else 0},
    )
