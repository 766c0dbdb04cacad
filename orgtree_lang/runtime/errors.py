"""Errors raised while a program runs: skill failures, bad skill arguments, and .pipe runtime errors."""

from __future__ import annotations

from dataclasses import dataclass, field

from orgtree_lang.syntax.spans import Span


class PipeError(Exception):
    """Base class for every error orgtree_lang reports to a user (never shown as a traceback)."""


class SkillError(PipeError):
    """A skill could not do what it was asked; the message says why, the hint how to fix it."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class SkillArgumentError(SkillError):
    """A skill was called with an argument it cannot accept."""

    def __init__(self, skill: str, param: str, expected: str, got: str, hint: str | None = None) -> None:
        super().__init__(f"{skill}: argument `{param}` expected {expected}, got {got}", hint)
        self.skill = skill
        self.param = param
        self.expected = expected
        self.got = got


@dataclass
class StackEntry:
    """One frame of a .pipe call stack as shown to the user."""

    span: Span
    pipeline: str

    def __str__(self) -> str:
        return f"{self.span.file}:{self.span.line}: in {self.pipeline}"


@dataclass
class PipeRuntimeError(PipeError):
    """An error in a running program, located in .pipe source with the .pipe call stack."""

    message: str
    kind: str = "error"  # "error", "fail", "skill", "type", "budget", "ambiguous", ...
    span: Span | None = None
    hint: str | None = None
    stack: list[StackEntry] = field(default_factory=list)
    catchable: bool = True

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message
