"""Parse .pipe source text into a syntax tree (nodes.Module), turning Lark errors into Diagnostics."""

from __future__ import annotations

import functools
import re
from importlib import resources

from lark import Lark
from lark.exceptions import LarkError, UnexpectedInput
from lark.indenter import DedentError

from orgtree_lang.syntax import nodes as n
from orgtree_lang.syntax.builder import NodeBuilder
from orgtree_lang.syntax.diagnostics import CompileError, Diagnostic, DiagnosticSink
from orgtree_lang.syntax.indent import MAX_NESTING, NestingTooDeep, PipeIndenter
from orgtree_lang.syntax.lalr import Rejected, Unsupported, parse_with
from orgtree_lang.syntax.parse_errors import parse_error_diagnostic
from orgtree_lang.syntax.python_habits import find_habits
from orgtree_lang.syntax.spans import Span

# Sources larger than this are refused before parsing: parse, check and codegen take about 0.1 ms a line, so
# a 10 MB file would take most of a minute and gigabytes. docs/language.md states the limit.
MAX_SOURCE_BYTES = 200_000


@functools.lru_cache(maxsize=1)
def grammar_text() -> str:
    return resources.files("orgtree_lang.grammar").joinpath("pipe.lark").read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def lark_parser() -> Lark:
    """The LALR parser for .pipe, built once per process (Lark caches the tables on disk)."""
    return Lark(
        grammar_text(),
        parser="lalr",
        postlex=PipeIndenter(),
        propagate_positions=True,
        maybe_placeholders=True,
        start=["start", "expr"],
        cache=True,
    )


def parse(source: str, file: str = "<string>") -> n.Module:
    """Parse a whole module; raise CompileError with every diagnostic found."""
    _refuse_huge(source, file)
    if not source.endswith("\n"):
        source += "\n"
    sink = DiagnosticSink(file)
    try:
        module = build(source, "start", NodeBuilder(file, sink, parse_expr))
    except NestingTooDeep as err:
        raise CompileError([_nesting_diagnostic(err, file)], {file: source}) from None
    except (UnexpectedInput, DedentError) as err:
        diagnostic = parse_error_diagnostic(err, source, file)
        # A Python spelling at or before the place the parser stopped is the likely cause: say that instead.
        habits = [h for h in find_habits(source, file) if h.span.line <= diagnostic.span.line]
        raise CompileError(habits or [diagnostic], {file: source}) from None
    if sink.has_errors:
        raise CompileError(_explain_habits(sink.items, source, file), {file: source})
    return module


def build(text: str, start: str, builder: NodeBuilder):
    """The nodes of `text` from grammar rule `start`; a text the grammar refuses raises Lark's exception."""
    mark = len(builder.sink.items)
    try:
        return parse_with(lark_parser(), text, start, builder, PipeIndenter())
    except Unsupported:
        del builder.sink.items[mark:]  # Lark's transform below reports them again
    except (Rejected, LarkError):
        pass  # Lark's own parse raises the exception (with its parser state) that diagnostics are made from
    return builder.transform(lark_parser().parse(text, start=start))


def _refuse_huge(source: str, file: str) -> None:
    size = len(source.encode("utf-8", "surrogatepass"))
    if size > MAX_SOURCE_BYTES:
        raise CompileError([Diagnostic(
            "error", f"this source is {size:,} bytes; the limit is {MAX_SOURCE_BYTES:,} bytes",
            Span(file, 1, 1, 1, 1),
            "split it into modules (`use` other .pipe files), or read large data at run time with fs.read")])


def _nesting_diagnostic(err: NestingTooDeep, file: str) -> Diagnostic:
    token = err.token
    line, col = token.line or 1, token.column or 1
    return Diagnostic("error", f"brackets and blocks are nested more than {MAX_NESTING} deep here",
                      Span(file, line, col, line, col + 1),
                      "flatten it: build the value step by step, or move inner blocks into pipelines")


def _explain_habits(diagnostics: list, source: str, file: str) -> list:
    """Replace the errors on a line holding a Python habit by the habit's own diagnostic."""
    error_lines = {d.span.line for d in diagnostics if d.severity == "error"}
    habits = {h.span.line: h for h in find_habits(source, file) if h.span.line in error_lines}
    kept = [d for d in diagnostics if d.span.line not in habits]
    return sorted(kept + list(habits.values()), key=lambda d: (d.span.line, d.span.col))


def parse_expr(text: str, file: str, line: int, col: int, sink: DiagnosticSink) -> n.Expr | None:
    """Parse one expression (an f-string field) located at line/col; report errors into sink."""
    try:
        return build(text, "expr", NodeBuilder(file, sink, parse_expr, line_offset=line - 1, col_offset=col - 1))
    except NestingTooDeep as err:
        diag = _nesting_diagnostic(err, file)
        sink.error(diag.message, Span(file, line, col, line, col + 1), diag.hint)
        return None
    except (UnexpectedInput, DedentError) as err:
        diag = parse_error_diagnostic(err, text, file)
        span = Span(file, line, col + diag.span.col - 1, line, col + diag.span.col)
        sink.error(f"in f-string expression: {diag.message}", span, diag.hint)
        return None


def source_comments(source: str) -> list[tuple[int, int, str, bool]]:
    """Every comment as (line, col, text, own_line), skipping `#` inside strings."""
    found = []
    pattern = re.compile(
        r'(f?"""([^\\]|\\.)*?""")|(f?\'\'\'([^\\]|\\.)*?\'\'\')|(f?"([^"\\\n]|\\.)*")|(f?\'([^\'\\\n]|\\.)*\')|(#[^\n]*)',
        re.S,
    )
    for match in pattern.finditer(source):
        if match.group(9) is None:
            continue
        start = match.start()
        line = source.count("\n", 0, start) + 1
        line_start = source.rfind("\n", 0, start) + 1
        own_line = source[line_start:start].strip() == ""
        found.append((line, start - line_start + 1, match.group(9), own_line))
    return found
