"""Run budgets (steps, wall seconds, skill calls) and the error that names the one exceeded."""

from __future__ import annotations

from dataclasses import dataclass

from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.syntax.spans import Span

# Flags that raise each budget, for the hint in the error.
_FLAGS = {"steps": "--max-steps", "seconds": "--max-seconds", "skill_calls": "--max-skill-calls"}
_UNITS = {"steps": "steps", "seconds": "seconds", "skill_calls": "skill calls"}


@dataclass(frozen=True)
class Budget:
    """Limits for one run; None means unlimited."""

    max_steps: int | None = 1_000_000_000
    max_seconds: float | None = None
    max_skill_calls: int | None = None


def budget_exceeded(name: str, limit: float, used: float, span: Span | None) -> PipeRuntimeError:
    """The error for an exceeded budget: which one, the limit, the count, and where."""
    unit = _UNITS[name]
    used_text = f"{used:.2f}" if isinstance(used, float) else str(used)
    where = f" at {span}" if span else ""
    return PipeRuntimeError(
        f"{unit} budget exceeded: limit {limit:g} {unit}, used {used_text}; stopped{where}",
        kind="budget",
        span=span,
        hint=f"raise the limit with {_FLAGS[name]}, or check the loop around this line",
        catchable=False,
    )
