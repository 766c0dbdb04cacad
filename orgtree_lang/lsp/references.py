"""What the name under a position of a parsed module refers to: a skill, a namespace, a pipeline, a record, a
built-in, a label, an ambiguous block or a variable."""

from __future__ import annotations

from dataclasses import dataclass

from orgtree_lang.lsp.analysis import contains, name_span_after, node_path, pipeline_of
from orgtree_lang.runtime.builtins import BUILTINS
from orgtree_lang.syntax import nodes as n
from orgtree_lang.syntax.spans import Span


@dataclass(frozen=True)
class Reference:
    """A name in the source and what it refers to."""

    kind: str  # skill | namespace | pipeline | record | builtin | label | block | variable
    name: str
    span: Span  # the text of the name itself
    pipeline: n.Pipeline | None  # the pipeline it was written in (labels and variables live there)
    node: n.Node | None = None  # the declaration, for a block (its Ambiguous node)


def reference_at(module: n.Module, lines: list[str], registry, line: int, col: int) -> Reference | None:
    """The reference at 1-based (line, col), or None where there is no name (a literal, an operator, a blank)."""
    path = node_path(module, line, col)
    node, scope = path[-1], pipeline_of(path)
    if isinstance(node, (n.Name, n.Attribute)):
        return _name_or_chain(path, module, registry, line, col, scope)
    if isinstance(node, n.TypeExpr):
        span = Span(node.span.file, node.span.line, node.span.col, node.span.line, node.span.col + len(node.name))
        if any(r.name == node.name for r in module.records) and contains(span, line, col):
            return Reference("record", node.name, span, scope)
        return None
    if isinstance(node, n.Use):
        return _dotted(node.name, node.span, registry, scope)
    if isinstance(node, n.Goto):
        return Reference("label", node.name, node.name_span, scope)
    if isinstance(node, n.Label):
        return Reference("label", node.name, name_span_after(lines, node.span, "label", node.name), scope)
    if isinstance(node, n.Pipeline) and contains(node.name_span, line, col):
        return Reference("pipeline", node.name, node.name_span, node)
    if isinstance(node, n.RecordDecl) and line == node.span.line:
        return Reference("record", node.name, name_span_after(lines, node.span, "record", node.name), scope)
    if isinstance(node, n.Ambiguous):
        span = name_span_after(lines, node.span, "ambiguous", node.name)
        if contains(span, line, col):
            return Reference("block", node.name, span, scope, node)
    return None


def _name_or_chain(path: list[n.Node], module: n.Module, registry, line: int, col: int,
                   scope: n.Pipeline | None) -> Reference | None:
    """A plain name, or the dotted chain (`text.split`, `lists`) a name or attribute under the cursor is part of."""
    top = len(path) - 1
    while top > 0 and isinstance(path[top - 1], n.Attribute) and path[top - 1].value is path[top]:
        top -= 1
    chain = path[top]
    if isinstance(chain, n.Name):
        parent = path[top - 1] if top > 0 else None
        return _plain_name(chain, parent, module, scope)
    segments = _segments(chain)
    if segments is None:
        return None
    full = ".".join(text for text, _ in segments)
    under = next((i for i, (_, span) in enumerate(segments) if contains(span, line, col)), len(segments) - 1)
    if registry.get(full) is not None:
        return Reference("skill", full, segments[0][1].merge(segments[-1][1]), scope)
    for end in range(under + 1, 0, -1):
        prefix = ".".join(text for text, _ in segments[:end])
        reference = _dotted(prefix, segments[0][1].merge(segments[end - 1][1]), registry, scope)
        if reference is not None:
            return reference
    return None


def _segments(expr: n.Expr) -> list[tuple[str, Span]] | None:
    """`a.b.c` as [(a, span), (b, span), (c, span)], or None if it is not a plain dotted name."""
    parts: list[tuple[str, Span]] = []
    while isinstance(expr, n.Attribute):
        parts.append((expr.attr, expr.attr_span))
        expr = expr.value
    if not isinstance(expr, n.Name):
        return None
    parts.append((expr.id, expr.span))
    return parts[::-1]


def _plain_name(name: n.Name, parent: n.Node | None, module: n.Module, scope: n.Pipeline | None) -> Reference:
    called = isinstance(parent, n.Call) and parent.func is name
    if any(p.name == name.id for p in module.pipelines) and called:
        return Reference("pipeline", name.id, name.span, scope)
    if any(r.name == name.id for r in module.records) and called:
        return Reference("record", name.id, name.span, scope)
    if name.id in BUILTINS and called:
        return Reference("builtin", name.id, name.span, scope)
    return Reference("variable", name.id, name.span, scope)


def _dotted(name: str, span: Span, registry, scope: n.Pipeline | None) -> Reference | None:
    if registry.get(name) is not None:
        return Reference("skill", name, span, scope)
    if name in registry.namespaces():
        return Reference("namespace", name, span, scope)
    return None
