"""The memory budget (`--max-memory`): no value a run builds may take more bytes than it, checked where values grow."""

from __future__ import annotations

from sys import getsizeof
from typing import Any, Callable

from orgtree_lang.vm.budget import budget_exceeded

_GROWING = (str, list, tuple, dict)


def check_value(value: Any, limit: int, what: str) -> Any:
    """`value` itself if its own size (a string's bytes, a list's or dict's table) is within `limit`."""
    if isinstance(value, _GROWING):
        size = getsizeof(value)
        if size > limit:
            raise budget_exceeded("memory", limit, size, None, f"by {what}")
    return value


def guarded_operators(funcs: dict[str, Callable], limit: int) -> dict[str, Callable]:
    """`funcs` (the BINARY operator table) with `+` and `*` refusing, before they build it, a string or list
    larger than `limit`: the doublings (`s = s + s`, `xs = xs * 2`) that reach gigabytes in a few steps."""
    add, repeat = funcs["+"], funcs["*"]

    def guarded_add(a, b):
        if isinstance(a, _GROWING) and type(a) is type(b):
            needed = getsizeof(a) + getsizeof(b)
            if needed > limit:
                raise budget_exceeded("memory", limit, needed, None, f"before `+` built a {type(a).__name__}")
        return add(a, b)

    def guarded_repeat(a, b):
        sequence, times = (a, b) if isinstance(a, (str, list)) else (b, a)
        if isinstance(sequence, (str, list)) and isinstance(times, int) and times > 1:
            needed = getsizeof(sequence) * times
            if needed > limit:
                raise budget_exceeded("memory", limit, needed, None,
                                      f"before `*` built a {type(sequence).__name__}")
        return repeat(a, b)

    return {**funcs, "+": guarded_add, "*": guarded_repeat}
