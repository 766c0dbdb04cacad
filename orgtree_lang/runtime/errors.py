"""Errors raised while a program runs: skill failures, bad skill arguments, and .pipe runtime errors."""

from __future__ import annotations

import errno
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from orgtree_lang.syntax.errors import EXIT_IOERR, EXIT_RUNTIME, PipeError, UsageError
from orgtree_lang.syntax.spans import Span

__all__ = ["PipeError", "UsageError", "SkillError", "SkillArgumentError", "StackEntry", "PipeRuntimeError", "DiskFull",
           "disk_full"]


class SkillError(PipeError):
    """A skill could not do what it was asked; the message says why, the hint how to fix it."""


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
    # The program's text, set by whoever ran it, so that the error can show the line it points at.
    source: str | None = field(default=None, repr=False, compare=False)
    # Frames of the generated children the error came up through (innermost first), above which the
    # machine that catches it adds its own: the .pipe call stack spans the whole tree.
    frames_below: list[StackEntry] = field(default_factory=list, repr=False, compare=False)

    exit_code = EXIT_RUNTIME

    def __post_init__(self) -> None:
        Exception.__init__(self, self.message)

    def __str__(self) -> str:
        return self.message

    def render(self, command: str = "pipe", debug: bool = False) -> str:
        """`runtime error: message`, the location with its source line and caret, the hint, the .pipe call stack,
        the notes added on the way up, and with `debug` the Python traceback of the cause."""
        from orgtree_lang.syntax.diagnostics import excerpt

        lines = [f"runtime error: {self.message}"]
        if self.span is not None:
            lines.append(f"  --> {self.span}")
            if self.source is not None and self.span.file and Path(self.span.file).name:
                lines.extend("  " + text for text in excerpt(self.source, self.span))
        if self.hint:
            lines.append(f"  = hint: {self.hint}")
        if self.stack:
            lines.append(".pipe call stack (most recent call last):")
            lines.extend(_collapsed([str(entry) for entry in reversed(self.stack)]))
        if debug and self.__cause__ is not None:
            lines.append("Python traceback (--debug):")
            lines.append("".join(traceback.format_exception(self.__cause__)).rstrip())
        lines.extend(getattr(self, "__notes__", ()))
        return "\n".join(lines)


# A deep recursion would print the same frame hundreds of times: show a few, then count the rest.
SHOWN_REPEATS = 3


def _collapsed(entries: list[str]) -> list[str]:
    lines: list[str] = []
    start = 0
    while start < len(entries):
        end = start
        while end < len(entries) and entries[end] == entries[start]:
            end += 1
        shown = min(end - start, SHOWN_REPEATS)
        lines.extend(f"  {entries[start]}" for _ in range(shown))
        if end - start > shown:
            lines.append(f"  … repeated {end - start - shown} more times")
        start = end
    return lines


# errno values that mean "the disk (or this user's share of it, or the file size limit) is full".
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
_SQLITE_FULL = 13  # SQLITE_FULL: "database or disk is full"


class DiskFull(PipeError):
    """The machine had no room to write (a full disk, a quota, a file size limit): the environment's fault, exit 74.

    A run it stops keeps its journal exact; once there is room, `pipe resume` goes on from its last step."""

    exit_code = EXIT_IOERR

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message, hint or "free space, then run the command again")


def disk_full(exc: BaseException | None) -> BaseException | None:
    """The exception in `exc`'s chain (itself, its cause or its context) that says there was no room to write, else
    None: an OSError ENOSPC, EDQUOT or EFBIG, or SQLite's SQLITE_FULL."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, DiskFull):
            return exc
        if isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS:
            return exc
        if getattr(exc, "sqlite_errorcode", None) is not None and exc.sqlite_errorcode & 0xFF == _SQLITE_FULL:
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def no_room(exc: BaseException) -> str:
    """What `disk_full(exc)` says, for a person: the file when the error names one."""
    if isinstance(exc, OSError):
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror or exc}{where}"
    return str(exc)
