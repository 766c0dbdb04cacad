"""Compile diagnostics: a message, a span and a hint, rendered as `file:line:col`, source line and caret."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Iterable

from orgtree_lang.syntax.errors import EXIT_COMPILE, PipeError
from orgtree_lang.syntax.spans import Span


@dataclass(frozen=True)
class Diagnostic:
    """One problem found in a source file."""

    severity: str  # "error" | "warning"
    message: str
    span: Span
    hint: str | None = None

    def render(self, source: str | None = None) -> str:
        """`file:line:col: error: message`, then the source line, a caret under the span, and the hint."""
        lines = [f"{self.span}: {self.severity}: {self.message}"]
        if source is not None and self.span.line > 0:
            lines.extend(excerpt(source, self.span))
        if self.hint:
            lines.append(f"  = hint: {self.hint}")
        return "\n".join(lines)


def excerpt(source: str, span: Span) -> list[str]:
    """The source line of a span with a caret line underneath, prefixed by a line-number gutter."""
    source_lines = source.splitlines()
    if not 1 <= span.line <= len(source_lines):
        return []
    text = source_lines[span.line - 1].expandtabs(1)
    gutter = f"{span.line:>4} | "
    start = max(span.col - 1, 0)
    if span.end_line == span.line and span.end_col > span.col:
        width = span.end_col - span.col
    else:
        width = max(len(text.rstrip()) - start, 1)
    return [gutter + text, " " * (len(gutter) - 2) + "| " + " " * start + "^" + "~" * (width - 1)]


class CompileError(PipeError):
    """Raised when a source file has errors; carries every diagnostic found in it."""

    exit_code = EXIT_COMPILE

    def __init__(self, diagnostics: list[Diagnostic], sources: dict[str, str] | None = None) -> None:
        self.diagnostics = diagnostics
        self.sources = sources or {}
        errors = [d for d in diagnostics if d.severity == "error"]
        super().__init__(f"{len(errors)} error(s)" + (f": {errors[0].message}" if errors else ""))

    def render(self, command: str = "pipe", debug: bool = False) -> str:
        """Every diagnostic with its source line, caret and hint, then the count (`file:line:col` says where)."""
        return render_all(self.diagnostics, self.sources)


def render_all(diagnostics: Iterable[Diagnostic], sources: dict[str, str]) -> str:
    """Render diagnostics in source order, followed by a one-line count."""
    ordered = sorted(diagnostics, key=lambda d: (d.span.file, d.span.line, d.span.col))
    parts = [d.render(sources.get(d.span.file)) for d in ordered]
    errors = sum(d.severity == "error" for d in ordered)
    warnings = len(ordered) - errors
    counts = []
    if errors:
        counts.append(f"{errors} error{'s' if errors != 1 else ''}")
    if warnings:
        counts.append(f"{warnings} warning{'s' if warnings != 1 else ''}")
    body = "\n\n".join(parts)
    return body + ("\n" + ", ".join(counts) + " generated." if counts else "")


@dataclass
class DiagnosticSink:
    """Collects diagnostics for one file so a pass can report everything it finds at once."""

    file: str
    items: list[Diagnostic] = field(default_factory=list)

    def error(self, message: str, span: Span, hint: str | None = None) -> None:
        self.items.append(Diagnostic("error", message, span, hint))

    def warning(self, message: str, span: Span, hint: str | None = None) -> None:
        self.items.append(Diagnostic("warning", message, span, hint))

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.items)


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """A hint naming the closest candidate spelling, or None."""
    matches = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f"did you mean `{matches[0]}`?" if matches else None
