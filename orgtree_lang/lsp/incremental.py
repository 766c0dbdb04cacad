"""Parse a document one top-level declaration at a time: each new version's source in, its syntax tree out,
reparsing only declarations whose text changed and moving the others' spans when lines were added above them.

The result equals a parse of the whole text: a declaration starts at a line that begins with `use`, `record` or
`pipeline` in column 0, where every bracket, string and block of the one before must be closed; if any piece fails
to parse, the whole text is parsed again, so syntax errors are exactly the ones `pipe check` reports.

While a line is half-typed the parser also keeps what an editor can still answer from (`navigable`): every
declaration that parses now, and for one that does not, the last version of it that parsed (found by its name,
moved to where it starts now), so hover and go-to-definition keep working in the rest of the file."""

from __future__ import annotations

import dataclasses
import re

from orgtree_lang.syntax import nodes as n
from orgtree_lang.syntax.diagnostics import CompileError
from orgtree_lang.syntax.spans import Span

_DECLARATION = re.compile(r"(?:use|record|pipeline)\b")
_NAMED = re.compile(r"(use|record|pipeline)\s+([\w.]+)")


def declaration_name(text: str) -> str | None:
    """"pipeline main", "record Ticket", "use text" for a piece's first declaration line; None for a preamble."""
    named = _NAMED.match(text)
    return f"{named[1]} {named[2]}" if named else None


def pieces(source: str) -> list[tuple[int, str]]:
    """The source cut before each top-level declaration: (0-based first line, text) pairs covering all of it."""
    lines = source.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if i == 0 or _DECLARATION.match(line)]
    ends = starts[1:] + [len(lines)]
    return [(start, "".join(lines[start:end])) for start, end in zip(starts, ends)]


class IncrementalParser:
    """Remembers the trees of one document's declarations from its previous version."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[int, n.Module]] = {}
        self._last_good: dict[str, tuple[int, n.Module]] = {}  # by declaration name: where it started, its tree
        # After a version that does not parse: the declarations that do, and the last good tree of those that do
        # not; None after a version that parses (its module is the answer) or when nothing could be kept.
        self.navigable: n.Module | None = None

    def parse(self, source: str, file: str) -> n.Module:
        """The module `source` parses to; CompileError, as from syntax.parser.parse, if it does not."""
        from orgtree_lang.syntax.parser import MAX_SOURCE_BYTES, parse

        if len(source) * 4 > MAX_SOURCE_BYTES:  # possibly over the limit: let the parser measure and refuse
            return parse(source, file)
        known: dict[str, tuple[int, n.Module]] = {}
        modules, kept, broken = [], [], False
        for first_line, text in pieces(source):
            seen = self._known.get(text)
            try:
                if seen is None:
                    # Blank lines in front give the piece's nodes their line numbers in the whole document.
                    module = parse("\n" * first_line + text, file)
                else:
                    module = seen[1] if seen[0] == first_line else moved(seen[1], first_line - seen[0])
            except CompileError:
                broken = True
                last = self._last_good.get(declaration_name(text) or "")
                if last is not None:
                    kept.append(last[1] if last[0] == first_line else moved(last[1], first_line - last[0]))
                continue
            known[text] = (first_line, module)
            modules.append(module)
            kept.append(module)
        self._known = {**self._known, **known} if broken else known
        if broken:
            self.navigable = _joined(kept, file) if kept else None
            try:
                whole = parse(source, file)  # the cut was wrong (a declaration keyword inside a long string)
            except CompileError:
                self._remember(known)
                raise
            self.navigable = None
            return whole
        self.navigable = None
        self._remember(known)
        return _joined(modules, file)

    def _remember(self, parsed: dict[str, tuple[int, n.Module]]) -> None:
        """Keep each declaration that parsed as the last good version of its name."""
        for text, (first_line, module) in parsed.items():
            name = declaration_name(text)
            if name is not None:
                self._last_good[name] = (first_line, module)


def moved(module: n.Module, lines: int) -> n.Module:
    """A copy of `module` with every span `lines` lines further down (a node shared by two fields stays shared)."""
    copies: dict[int, object] = {}

    def move(value):
        if isinstance(value, Span):
            if value.line == 0:
                return value
            return Span(value.file, value.line + lines, value.col, value.end_line + lines, value.end_col)
        if isinstance(value, n.Node):
            copy = copies.get(id(value))
            if copy is None:
                copy = type(value)(*(move(getattr(value, f.name)) for f in dataclasses.fields(value)))
                copies[id(value)] = copy
            return copy
        if isinstance(value, tuple):
            return tuple(move(item) for item in value)
        return value

    return move(module)


def _joined(modules: list[n.Module], file: str) -> n.Module:
    spans = [m.span for m in modules if m.span.line > 0]
    span = spans[0].merge(spans[-1]) if spans else Span(file, 0, 0, 0, 0)
    return n.Module(span, file, tuple(u for m in modules for u in m.uses),
                    tuple(r for m in modules for r in m.records), tuple(p for m in modules for p in m.pipelines),
                    tuple(i for m in modules for i in m.items))
