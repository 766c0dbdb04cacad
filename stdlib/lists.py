"""List skills: take lists and return new lists or facts about them (the input is never changed)."""

from __future__ import annotations

import json
from typing import Any

from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.runtime.skills import skill
from orgtree_lang.runtime.values import RecordValue, encode


def _key(value: Any) -> Any:
    """An identity for equality checks that keeps true apart from 1 and works for lists and dicts."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (list, dict)):
        return ("json", json.dumps(encode(value), sort_keys=True))
    return ("value", value)


@skill("lists.append", pure=True)
def append(items: list[Any], item: Any) -> list[Any]:
    """A new list with one item added at the end.

    Example: `lists.append([1, 2], 3)  # [1, 2, 3]; or xs += [3]`

    Args:
        items: The list.
        item: The value to add.
    """
    return [*items, item]


@skill("lists.extend", pure=True)
def extend(items: list[Any], more: list[Any]) -> list[Any]:
    """A new list with the items of `more` added at the end.

    Example: `lists.extend([1], [2, 3])  # [1, 2, 3]; same as [1] + [2, 3]`

    Args:
        items: The list.
        more: The values to add, in order.
    """
    return [*items, *more]


@skill("lists.concat", pure=True)
def concat(lists: list[list[Any]]) -> list[Any]:
    """One list made of several lists, one after another.

    Example: `lists.concat([[1], [2, 3], []])  # [1, 2, 3]`

    Args:
        lists: The lists to put together.
    """
    return [item for part in lists for item in part]


def _check_index(skill_name: str, items: list[Any], index: int, allow_end: bool) -> int:
    size = len(items)
    top = size if allow_end else size - 1
    if not -size <= index <= top:
        valid = f"-{size}..{top}" if size or allow_end else "none (the list is empty)"
        raise SkillError(f"{skill_name}: index {index} is out of range for a list of {size} items (valid: {valid})")
    return index if index >= 0 else index + size


@skill("lists.insert", pure=True)
def insert(items: list[Any], index: int, item: Any) -> list[Any]:
    """A new list with an item inserted before position `index` (negative counts from the end).

    Example: `lists.insert(["a", "c"], 1, "b")  # ["a", "b", "c"]`

    Args:
        items: The list.
        index: Where the item goes; 0 is the front, the list's length is the end.
        item: The value to insert.
    """
    at = _check_index("lists.insert", items, index, allow_end=True)
    return [*items[:at], item, *items[at:]]


@skill("lists.remove_at", pure=True)
def remove_at(items: list[Any], index: int) -> list[Any]:
    """A new list without the item at position `index` (negative counts from the end).

    Example: `lists.remove_at(["a", "b", "c"], 0)  # ["b", "c"]`

    Args:
        items: The list.
        index: The position of the item to drop.
    """
    at = _check_index("lists.remove_at", items, index, allow_end=False)
    return [*items[:at], *items[at + 1:]]


@skill("lists.sort", pure=True)
def sort(items: list[Any], reverse: bool = False, key: Any = None) -> list[Any]:
    """A new sorted list (stable: equal items keep their order).

    Example: `lists.sort(people, key="age", reverse=true)  # oldest first`

    `key` says what to sort by: none sorts the items themselves; a field name (str) sorts dicts or
    records by that field; a list of sort values, one per item, sorts the items by those values
    (`lists.sort(words, key=lengths)` with `lengths[i] = len(words[i])`).

    Args:
        items: Values that can be compared with each other (all numbers, or all strings, ...).
        reverse: Largest first.
        key: None, a field name, or a list of sort values as long as `items`.
    """
    if key is None:
        values = items
    elif isinstance(key, list):
        if len(key) != len(items):
            raise SkillError(f"lists.sort: the key list has {len(key)} values for {len(items)} items",
                             hint="give one sort value per item, in the same order")
        values = key
    elif isinstance(key, str):
        values = []
        for i, item in enumerate(items):
            fields = item.fields if isinstance(item, RecordValue) else item
            if not isinstance(fields, dict):
                raise SkillError(f"lists.sort: item {i} is not a dict or record, so it has no key `{key}`")
            if key not in fields:
                raise SkillError(f"lists.sort: item {i} has no key `{key}`", hint=f"its keys are {', '.join(fields)}")
            values.append(fields[key])
    else:
        raise SkillError("lists.sort: key must be none, a field name or a list of sort values",
                         hint='e.g. key="age", or key=ages with one value per item')
    order = list(range(len(items)))
    try:
        order.sort(key=lambda i: values[i], reverse=reverse)
    except TypeError as exc:
        raise SkillError(
            f"lists.sort: cannot compare the items ({exc})",
            hint="all sort values must be of one kind: numbers, strings or booleans",
        ) from None
    return [items[i] for i in order]


@skill("lists.unique", pure=True)
def unique(items: list[Any]) -> list[Any]:
    """A new list without repeated items; the first of each is kept, in order.

    Example: `lists.unique([3, 1, 3, 2, 1])  # [3, 1, 2]`

    Args:
        items: The list.
    """
    seen: set[Any] = set()
    result = []
    for item in items:
        k = _key(item)
        if k not in seen:
            seen.add(k)
            result.append(item)
    return result


@skill("lists.flatten", pure=True)
def flatten(items: list[Any]) -> list[Any]:
    """A new list with nested lists opened up one level; other items are kept as they are.

    Example: `lists.flatten([[1, 2], 3, [4]])  # [1, 2, 3, 4]`

    Args:
        items: A list whose items may themselves be lists.
    """
    result: list[Any] = []
    for item in items:
        if isinstance(item, list):
            result.extend(item)
        else:
            result.append(item)
    return result


@skill("lists.chunk", pure=True)
def chunk(items: list[Any], size: int) -> list[list[Any]]:
    """The list cut into consecutive pieces of `size` items (the last may be shorter).

    Example: `lists.chunk([1, 2, 3, 4, 5], 2)  # [[1, 2], [3, 4], [5]]`

    Args:
        items: The list.
        size: Items per piece, at least 1.
    """
    if size < 1:
        raise SkillError(f"lists.chunk: size must be at least 1, got {size}")
    return [items[i:i + size] for i in range(0, len(items), size)]


@skill("lists.index_of", pure=True)
def index_of(items: list[Any], item: Any) -> int:
    """The position of the first item equal to `item`, or -1 if there is none.

    Example: `lists.index_of(["a", "b"], "b")  # 1 (-1 when absent)`

    Args:
        items: The list to search.
        item: The value to look for.
    """
    wanted = _key(item)
    return next((i for i, v in enumerate(items) if _key(v) == wanted), -1)


@skill("lists.count", pure=True)
def count(items: list[Any], item: Any) -> int:
    """How many items are equal to `item`.

    Example: `lists.count([1, 2, 1], 1)  # 2`

    Args:
        items: The list to search.
        item: The value to count.
    """
    wanted = _key(item)
    return sum(1 for v in items if _key(v) == wanted)
