"""The memory budget (`--max-memory`): no value a run builds may take more bytes than it, checked where values grow."""

from __future__ import annotations

from struct import calcsize
from sys import getsizeof
from typing import Any, Callable

from orgtree_lang.runtime.artifacts import BytesValue
from orgtree_lang.vm.budget import budget_exceeded

_GROWING = (str, list, tuple, dict)
_SEQUENCES = (str, list, tuple)
_POINTER = calcsize("P")


def _str_layouts() -> list[tuple[int, int]]:
    """(header, bytes a character) of each kind of str CPython stores (PEP 393), narrowest first, measured
    here rather than written down, so another build's headers are the ones counted."""
    layouts = []
    for char in ("a", "\xe9", "\u0101", "\U0001f600"):  # ASCII, Latin-1, UCS-2, UCS-4
        width = getsizeof(char * 2) - getsizeof(char)
        layouts.append((getsizeof(char) - width, width))
    return layouts


_STR_LAYOUTS = _str_layouts()


def _str_layout(text: str) -> int:
    """Which of `_STR_LAYOUTS` `text` is stored in, told from its size in O(1) (scanning for its widest
    character would cost a pass over a string the operator is about to copy anyway)."""
    size, length = getsizeof(text), len(text)
    for kind, (header, width) in enumerate(_STR_LAYOUTS):
        if header + length * width == size:
            return kind
    return len(_STR_LAYOUTS) - 1  # an unknown layout: count the widest, so the budget never undercounts


def built_size(parts: list[Any], repeat: int = 1) -> int:
    """The bytes of the sequence that concatenating `parts` (all of one type) `repeat` times builds: one
    header, then each item (a str's characters in the widest kind among the parts, a list's or tuple's
    pointers). Not the sum of the parts' sizes: that counts a header per part, and `"x" * n` 50 times over."""
    items = sum(len(part) for part in parts) * repeat
    if isinstance(parts[0], str):
        header, width = _STR_LAYOUTS[max(_str_layout(part) for part in parts)]
        if items == 0:
            return getsizeof("")
        return header + items * width
    return getsizeof(type(parts[0])()) + items * _POINTER


def check_value(value: Any, limit: int, what: str) -> Any:
    """`value` itself if its own size (a string's bytes, a list's or dict's table, a bytes value's data) is within
    `limit`."""
    if isinstance(value, _GROWING):
        size = getsizeof(value)
    elif isinstance(value, BytesValue):
        size = getsizeof(value.data)
    else:
        return value
    if size > limit:
        raise budget_exceeded("memory", limit, size, None, f"by {what}")
    return value


def guarded_operators(funcs: dict[str, Callable], limit: int) -> dict[str, Callable]:
    """`funcs` (the BINARY operator table) with `+` and `*` refusing, before they build it, a string or list
    larger than `limit`: the doublings (`s = s + s`, `xs = xs * 2`) that reach gigabytes in a few steps."""
    add, repeat = funcs["+"], funcs["*"]

    def guarded_add(a, b):
        if isinstance(a, _SEQUENCES) and type(a) is type(b):
            needed = built_size([a, b])
            if needed > limit:
                raise budget_exceeded("memory", limit, needed, None, f"before `+` built a {type(a).__name__}")
        return add(a, b)

    def guarded_repeat(a, b):
        sequence, times = (a, b) if isinstance(a, _SEQUENCES) else (b, a)
        if isinstance(sequence, _SEQUENCES) and type(times) is int and times > 1:
            needed = built_size([sequence], times)
            if needed > limit:
                raise budget_exceeded("memory", limit, needed, None,
                                      f"before `*` built a {type(sequence).__name__}")
        return repeat(a, b)

    return {**funcs, "+": guarded_add, "*": guarded_repeat}
