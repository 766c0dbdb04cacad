"""A parsed module's outline for the editor: records with their fields, pipelines with their ambiguous blocks and
labels, each with the span of its whole declaration and of its name."""

from __future__ import annotations

from dataclasses import dataclass, field

from orgtree_lang.lsp.analysis import name_span_after
from orgtree_lang.lsp.navigate import block_signature, pipeline_signature
from orgtree_lang.syntax import nodes as n
from orgtree_lang.syntax.spans import Span


@dataclass
class Symbol:
    name: str
    kind: str  # record | field | pipeline | block | label
    detail: str
    span: Span
    name_span: Span
    children: list[Symbol] = field(default_factory=list)


def outline(module: n.Module, lines: list[str]) -> list[Symbol]:
    """The module's declarations in source order."""
    symbols = []
    for item in module.items:
        if isinstance(item, n.RecordDecl):
            fields = [Symbol(f.name, "field", str(f.type), f.span, _leading(f.span, f.name)) for f in item.fields]
            symbols.append(Symbol(item.name, "record", "record", item.span,
                                  name_span_after(lines, item.span, "record", item.name), fields))
        elif isinstance(item, n.Pipeline):
            symbols.append(Symbol(item.name, "pipeline", pipeline_signature(item).removeprefix(f"pipeline {item.name}"),
                                  item.span, item.name_span, _inside(item, lines)))
    return symbols


def _inside(pipeline: n.Pipeline, lines: list[str]) -> list[Symbol]:
    found = []
    for node in pipeline.walk():
        if isinstance(node, n.Ambiguous):
            found.append(Symbol(node.name, "block", block_signature(node).removeprefix(f"ambiguous {node.name}"),
                                node.span, name_span_after(lines, node.span, "ambiguous", node.name)))
        elif isinstance(node, n.Label):
            found.append(Symbol(node.name, "label", "label", node.span,
                                name_span_after(lines, node.span, "label", node.name)))
    return found


def _leading(span: Span, name: str) -> Span:
    return Span(span.file, span.line, span.col, span.line, span.col + len(name))
