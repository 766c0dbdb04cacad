"""Math skills: take numbers and return numbers, refusing inputs outside a function's domain."""

from __future__ import annotations

import math

from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.runtime.skills import skill


@skill("math.sqrt", pure=True)
def sqrt(x: float) -> float:
    """The square root of a number.

    Example: `math.sqrt(2.0)  # 1.4142135623730951`

    Args:
        x: A number that is 0 or more.
    """
    if x < 0:
        raise SkillError(f"math.sqrt: cannot take the square root of a negative number ({x})")
    return math.sqrt(x)


def _finite(skill_name: str, x: float) -> None:
    if not math.isfinite(x):
        raise SkillError(f"{skill_name}: {x} has no integer value", hint="check for inf or nan first")


@skill("math.floor", pure=True)
def floor(x: float) -> int:
    """The largest integer not greater than the number.

    Example: `math.floor(2.7)  # 2`

    Args:
        x: A finite number.
    """
    _finite("math.floor", x)
    return math.floor(x)


@skill("math.ceil", pure=True)
def ceil(x: float) -> int:
    """The smallest integer not less than the number.

    Example: `math.ceil(2.1)  # 3`

    Args:
        x: A finite number.
    """
    _finite("math.ceil", x)
    return math.ceil(x)


@skill("math.log", pure=True)
def log(x: float, base: float | None = None) -> float:
    """The logarithm of a number: natural by default, or to the given base.

    Example: `math.log(8, 2)  # 3.0`

    Args:
        x: A number greater than 0.
        base: The base, greater than 0 and not 1; none means e.
    """
    if x <= 0:
        raise SkillError(f"math.log: the logarithm is only defined for numbers greater than 0, got {x}")
    if base is None:
        return math.log(x)
    if base <= 0 or base == 1:
        raise SkillError(f"math.log: the base must be greater than 0 and not 1, got {base}")
    return math.log(x, base)


@skill("math.exp", pure=True)
def exp(x: float) -> float:
    """e raised to the power of a number.

    Example: `math.exp(1.0)`

    Args:
        x: The exponent (at most about 709, beyond which the result does not fit in a float).
    """
    try:
        return math.exp(x)
    except OverflowError:
        raise SkillError(f"math.exp: e to the power {x} is too large for a float") from None


@skill("math.pow", pure=True)
def pow_(x: float, y: float) -> float:
    """A number raised to a power.

    Example: `math.pow(2, 0.5)`

    Args:
        x: The base.
        y: The exponent; must be a whole number when the base is negative.
    """
    try:
        return math.pow(x, y)
    except OverflowError:
        raise SkillError(f"math.pow: {x} to the power {y} is too large for a float") from None
    except (ValueError, ZeroDivisionError):
        if x == 0 and y < 0:
            raise SkillError(f"math.pow: 0 to a negative power ({y}) divides by zero") from None
        raise SkillError(
            f"math.pow: {x} to the power {y} is not a real number",
            hint="a negative base needs a whole-number exponent",
        ) from None


@skill("math.clamp", pure=True)
def clamp(x: float, lo: float, hi: float) -> float:
    """The number limited to the range lo..hi.

    Example: `math.clamp(1.7, 0, 1)  # 1.0`

    Args:
        x: The number.
        lo: The smallest allowed result.
        hi: The largest allowed result; not less than lo.

    Returns:
        lo if x is below lo, hi if x is above hi, else x unchanged.
    """
    if lo > hi:
        raise SkillError(f"math.clamp: the range is empty (lo {lo} is greater than hi {hi})")
    return min(max(x, lo), hi)
