"""The VM's door to the outside world: the Effects protocol a durable run implements, and the step it is asked."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

from orgtree_lang.syntax.spans import Span


@dataclass(frozen=True)
class EffectStep:
    """A step with an outside effect, as the VM asks for it."""

    seq: int
    kind: str  # skill | ambiguous | model | human
    name: str
    node: str
    span: Span
    args: list[Any]
    kwargs: dict[str, Any]
    statement: int = 0  # statements the run had started when it asked: `pipe fork --at` counts the same way
    inner: str = ""  # an ambiguous block's own node, under which its model answers and its child's steps go
    observed: bool = True  # False: nothing outside sees it (a clock read, a draw, a read); see skills' `unobserved`


class Effects(Protocol):
    """Where side-effecting steps go in a durable run (durable.effects.EffectLog implements it).

    `perform` returns the step's result, from the journal when it may be reused, else by calling
    `execute(idempotency_key)`; `begin` and `end` are its two halves, for a call whose result comes later
    (a slow call on the executor). `mode` is live, resume, replay or retry; `catching_up` is true while a resume
    redoes work whose effects are already journaled (its output is not shown again)."""

    mode: str

    @property
    def catching_up(self) -> bool: ...

    def perform(self, step: EffectStep, execute: Callable[[str], Any]) -> Any: ...

    def begin(self, step: EffectStep) -> tuple[bool, Any]:
        """`perform`'s first half: (True, result) to reuse, else (False, idempotency key) to execute."""

    def end(self, step: EffectStep, value: Any, error: Exception | None) -> None:
        """`perform`'s second half: record what the executed step gave."""

    def answer(self, step: EffectStep) -> tuple[bool, Any]:
        """An input from outside the program (a person's reply) for `step`: (True, value) when the journal has
        it, (False, None) when it has not come yet. Nothing is executed: the answer is written by `pipe reply`."""
        ...

    def checkpoint_due(self, steps: int, effect_seq: int) -> bool: ...

    def checkpoint(self, state) -> None: ...
