"""One .pipe document as the editor has it: its text in, the real parser's and checker's diagnostics and its
syntax tree out."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orgtree_lang.runtime.workspace import STATE_DIR_NAME
from orgtree_lang.syntax import nodes as n
from orgtree_lang.syntax.diagnostics import CompileError, Diagnostic
from orgtree_lang.syntax.errors import PipeError
from orgtree_lang.syntax.spans import Span


@dataclass
class Analysis:
    """What the parser and checker said about one version of a document."""

    source: str
    file: str
    module: n.Module | None  # None when this version does not parse
    diagnostics: list[Diagnostic]
    # When it does not: the declarations that parse, and the last good tree of those that do not, at their places
    # in this version (lsp/incremental.py); hover and go-to-definition answer from it.
    navigable: n.Module | None = None

    def for_navigation(self) -> Analysis | None:
        """This version as navigation reads it: itself when it parsed, its navigable part when it did not."""
        if self.module is not None:
            return self
        if self.navigable is not None:
            return Analysis(self.source, self.file, self.navigable, self.diagnostics, self.navigable)
        return None

    @property
    def lines(self) -> list[str]:
        return self.source.splitlines()


def analyse(source: str, file: str, registry, parser=None) -> Analysis:
    """Parse and check `source` exactly as `pipe check` does (codegen reports nothing, so it is left out);
    `parser` (an IncrementalParser kept for the document) reuses what the previous version parsed to."""
    from orgtree_lang.check.module import check
    from orgtree_lang.syntax.parser import parse

    module = None
    try:
        module = parser.parse(source, file) if parser is not None else parse(source, file)
        diagnostics = check(module, registry, source).diagnostics
    except CompileError as err:
        diagnostics = err.diagnostics
        if module is None and parser is not None:
            return Analysis(source, file, None, diagnostics, parser.navigable)
    except PipeError as err:
        # A skill source that could not load while checking (an MCP server of orgtree.toml that fails to start).
        diagnostics = [Diagnostic("error", err.message, Span(file, 1, 1, 1, 1), err.hint)]
    except RecursionError:
        # As in compile_source: long chains of operators can nest deeper than Python's stack.
        diagnostics = [Diagnostic("error", "this source nests expressions too deeply to compile",
                                  Span(file, 1, 1, 1, 1), "break long chains of operators into steps with names")]
    return Analysis(source, file, module, diagnostics)


def workspace_root(file: Path) -> Path:
    """The workspace a document belongs to: the folder holding `.orgtree/` for a generated module inside it,
    else the document's folder (the default of `pipe run` and `pipe check`)."""
    for parent in file.parents:
        if parent.name == STATE_DIR_NAME:
            return parent.parent
    return file.parent


def contains(span: Span, line: int, col: int) -> bool:
    """Whether 1-based (line, col) is inside `span`, its end included (a cursor just after a word is on it)."""
    return (span.line, span.col) <= (line, col) <= (span.end_line, span.end_col)


def node_path(module: n.Module, line: int, col: int) -> list[n.Node]:
    """The nodes holding (line, col), from the module down to the innermost one."""
    path: list[n.Node] = [module]
    while True:
        child = next((c for c in path[-1].children() if contains(c.span, line, col)), None)
        if child is None:
            return path
        path.append(child)


def name_span_after(lines: list[str], span: Span, keyword: str, name: str) -> Span:
    """The span of `name` written after `keyword` on the first line of `span` (records, labels and ambiguous blocks
    keep only the span of their whole declaration)."""
    text = lines[span.line - 1] if 0 < span.line <= len(lines) else ""
    start = text.find(keyword, max(span.col - 1, 0))
    at = text.find(name, start + len(keyword)) if start >= 0 else -1
    if at < 0:
        return Span(span.file, span.line, span.col, span.line, span.col + len(keyword))
    return Span(span.file, span.line, at + 1, span.line, at + 1 + len(name))


def pipeline_of(path: list[n.Node]) -> n.Pipeline | None:
    return next((node for node in path if isinstance(node, n.Pipeline)), None)


def find_label(pipeline: n.Pipeline, name: str) -> n.Label | None:
    return next((node for node in pipeline.walk() if isinstance(node, n.Label) and node.name == name), None)


def binding_of(pipeline: n.Pipeline, name: str) -> Span | None:
    """Where a variable of `pipeline` is first given a value: a parameter, an assignment, a loop or except name, or
    an output of an ambiguous block."""
    for param in pipeline.params:
        if param.name == name:
            return Span(param.span.file, param.span.line, param.span.col, param.span.line,
                        param.span.col + len(name))
    for node in pipeline.walk():
        if isinstance(node, (n.Assign, n.For)):
            for target in node.targets:
                if target.id == name:
                    return target.span
        elif isinstance(node, n.Try) and node.name is not None and node.name.id == name:
            return node.name.span
        elif isinstance(node, n.Ambiguous):
            for output in node.outputs:
                if output.name == name:
                    return Span(output.span.file, output.span.line, output.span.col, output.span.line,
                                output.span.col + len(name))
    return None
