"""Dict skills: take dicts and return new dicts or their parts (the input is never changed)."""

from __future__ import annotations

import difflib
from typing import Any

from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.runtime.skills import skill


@skill("dicts.keys", pure=True)
def keys(d: dict[str, Any]) -> list[str]:
    """The keys of a dict, in insertion order.

    Example: `dicts.keys({"a": 1, "b": 2})  # ["a", "b"]`

    Args:
        d: The dict (a record works too).
    """
    return list(d)


@skill("dicts.values", pure=True)
def values(d: dict[str, Any]) -> list[Any]:
    """The values of a dict, in key order.

    Example: `dicts.values({"a": 1, "b": 2})  # [1, 2]`

    Args:
        d: The dict (a record works too).
    """
    return list(d.values())


@skill("dicts.items", pure=True)
def items(d: dict[str, Any]) -> list[list[Any]]:
    """The entries of a dict as `[key, value]` pairs, in key order.

    Example: `for key, value in dicts.items(counts):`

    Args:
        d: The dict (a record works too).
    """
    return [[k, v] for k, v in d.items()]


@skill("dicts.get", pure=True)
def get(d: dict[str, Any], key: str, default: Any = None) -> Any:
    """The value under a key, or `default` if the key is absent.

    Example: `dicts.get(counts, word, 0)  # 0 when the key is missing`

    Args:
        d: The dict (a record works too).
        key: The key to look up.
        default: What to return when the key is absent.
    """
    return d.get(key, default)


@skill("dicts.set", pure=True)
def set_key(d: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """A new dict with `key` set to `value` (added at the end if it was absent).

    Example: `counts = dicts.set(counts, word, n + 1)`

    Args:
        d: The dict.
        key: The key to set.
        value: Its new value.
    """
    return {**d, key: value}


@skill("dicts.remove", pure=True)
def remove(d: dict[str, Any], key: str) -> dict[str, Any]:
    """A new dict without `key`; the key must be present.

    Example: `dicts.remove({"a": 1, "b": 2}, "a")  # {"b": 2}`

    Args:
        d: The dict.
        key: The key to drop.
    """
    if key not in d:
        close = difflib.get_close_matches(key, list(d), n=1)
        hint = f"did you mean `{close[0]}`?" if close else "check with dicts.has first"
        raise SkillError(f"dicts.remove: no key `{key}` in the dict", hint=hint)
    return {k: v for k, v in d.items() if k != key}


@skill("dicts.merge", pure=True)
def merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """A new dict with the entries of both; where both have a key, `b`'s value wins.

    Example: `dicts.merge({"a": 1}, {"a": 2, "b": 3})  # {"a": 2, "b": 3}`

    Args:
        a: The first dict.
        b: The second dict, whose values take precedence.
    """
    return {**a, **b}


@skill("dicts.has", pure=True)
def has(d: dict[str, Any], key: str) -> bool:
    """Whether a dict has a key.

    Example: `dicts.has(config, "timeout")  # same as "timeout" in config`

    Args:
        d: The dict (a record works too).
        key: The key to look for.
    """
    return key in d
