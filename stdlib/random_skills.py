"""Random skills: draw numbers, pick and shuffle list items from the operating system's randomness source.

None of them is pure: a durable run journals each result, so resume and replay see exactly the values
the first run drew. The determinism comes from the journal, not from a seed, which is why the source
is the OS generator (`random.SystemRandom`, as `secrets` uses) and nothing here is seedable.
"""

from __future__ import annotations

import random
from typing import Any

from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.runtime.skills import skill


@skill("random.number", unobserved=True)
def number() -> float:
    """A random float from 0 (included) up to 1 (excluded), the same on resume and replay of a run.

    Example: `random.number()  # 0.0 <= x < 1.0`

    Returns:
        A float `x` with `0 <= x < 1`.
    """
    return random.SystemRandom().random()


@skill("random.int", unobserved=True)
def integer(low: int, high: int) -> int:
    """A random integer between two bounds, both included, the same on resume and replay of a run.

    Example: `random.int(1, 6)  # 1 to 6 inclusive`

    Args:
        low: The smallest value it may return.
        high: The largest value it may return; at least `low`.

    Returns:
        An int `n` with `low <= n <= high`, each equally likely.
    """
    if low > high:
        raise SkillError(
            f"random.int: low ({low}) is greater than high ({high})",
            hint=f"both bounds are included; did you mean random.int({high}, {low})?",
        )
    return random.SystemRandom().randint(low, high)


@skill("random.choice", unobserved=True)
def choice(items: list[Any]) -> Any:
    """One item of a list picked at random, the same on resume and replay of a run.

    Example: `random.choice(["a", "b"])`

    Args:
        items: The list to pick from; it must not be empty.

    Returns:
        One of the items, each position equally likely.
    """
    if not items:
        raise SkillError("random.choice: cannot pick from an empty list", hint="check `len(items) > 0` first")
    return random.SystemRandom().choice(items)


@skill("random.shuffle", unobserved=True)
def shuffle(items: list[Any]) -> list[Any]:
    """A new list with the same items in a random order, the same on resume and replay of a run.

    Example: `random.shuffle([1, 2, 3])`

    Args:
        items: The items to shuffle; the list itself is left as it was.

    Returns:
        A new list holding every item once, every order equally likely.
    """
    return random.SystemRandom().sample(items, len(items))
