"""The .pipe syntax tree: frozen dataclasses, each carrying the Span it was parsed from."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Iterator

from orgtree_lang.syntax.spans import Span

node = dataclass(frozen=True, eq=False, slots=True)


class Node:
    """Base of every syntax node; `children()` walks the node-valued fields generically."""

    __slots__ = ()
    span: Span

    def children(self) -> Iterator[Node]:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Node):
                yield value
            elif isinstance(value, tuple):
                for item in value:
                    if isinstance(item, Node):
                        yield item
                    elif isinstance(item, tuple):
                        yield from (x for x in item if isinstance(x, Node))

    def walk(self) -> Iterator[Node]:
        """This node and every node below it, depth first in source order."""
        yield self
        for child in self.children():
            yield from child.walk()


# ---- types ---------------------------------------------------------------


@node
class TypeExpr(Node):
    """A written type: `str`, `list[int]`, `dict[str, Triage]?`."""

    span: Span
    name: str
    args: tuple[TypeExpr, ...] = ()
    optional: bool = False

    def __str__(self) -> str:
        text = self.name
        if self.args:
            text += "[" + ", ".join(str(a) for a in self.args) + "]"
        return text + ("?" if self.optional else "")


# ---- expressions ---------------------------------------------------------


class Expr(Node):
    __slots__ = ()


@node
class Name(Expr):
    span: Span
    id: str


@node
class Const(Expr):
    """A literal: int, float, str, bool or none. `raw` keeps the spelling for the formatter."""

    span: Span
    value: Any
    raw: str = ""


@node
class FormattedValue(Expr):
    """`{expr:spec}` inside an f-string."""

    span: Span
    value: Expr
    spec: str = ""


@node
class FString(Expr):
    """An f-string: literal text and FormattedValue parts, in order."""

    span: Span
    parts: tuple[str | FormattedValue, ...]
    raw: str = ""


@node
class ListExpr(Expr):
    span: Span
    items: tuple[Expr, ...]


@node
class DictExpr(Expr):
    span: Span
    keys: tuple[Expr, ...]
    values: tuple[Expr, ...]


@node
class BinOp(Expr):
    span: Span
    op: str  # + - * / // % **
    left: Expr
    right: Expr


@node
class UnaryOp(Expr):
    span: Span
    op: str  # - + not
    operand: Expr


@node
class BoolOp(Expr):
    """`a and b` / `a or b`, short-circuiting, yielding the deciding operand."""

    span: Span
    op: str  # and | or
    left: Expr
    right: Expr


@node
class Compare(Expr):
    """A comparison chain: `a < b <= c` means `a < b and b <= c`, evaluating b once."""

    span: Span
    left: Expr
    ops: tuple[str, ...]
    comparators: tuple[Expr, ...]


@node
class TypeTest(Expr):
    """`value is T` / `value is not T`: whether a value is of a kind (int, list, a record, none, ...)."""

    span: Span
    value: Expr
    type: TypeExpr
    negated: bool = False


@node
class Keyword(Node):
    span: Span
    name: str
    value: Expr


@node
class Call(Expr):
    span: Span
    func: Expr
    args: tuple[Expr, ...]
    keywords: tuple[Keyword, ...]


@node
class Spawn(Expr):
    """`spawn p(args)`: start pipeline call `p(args)` as a node of its own; its value is a Handle."""

    span: Span
    call: Call


@node
class Await(Expr):
    """`await h`: wait for the spawned node behind handle `h`; its result, or its error raised here."""

    span: Span
    value: Expr


@node
class Index(Expr):
    span: Span
    value: Expr
    index: Expr


@node
class Slice(Expr):
    span: Span
    value: Expr
    lower: Expr | None
    upper: Expr | None
    step: Expr | None


@node
class Attribute(Expr):
    span: Span
    value: Expr
    attr: str
    attr_span: Span


def dotted_name(expr: Expr) -> str | None:
    """`a.b.c` as a string if the expression is a plain dotted name, else None."""
    parts = []
    while isinstance(expr, Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, Name):
        return None
    parts.append(expr.id)
    return ".".join(reversed(parts))


# ---- statements ----------------------------------------------------------


class Stmt(Node):
    __slots__ = ()


@node
class Assign(Stmt):
    span: Span
    targets: tuple[Name, ...]
    value: Expr


@node
class AugAssign(Stmt):
    span: Span
    target: Name
    op: str  # the binary operator: + - * / // %
    value: Expr


@node
class ExprStmt(Stmt):
    span: Span
    expr: Expr


@node
class If(Stmt):
    """`if/elif/else`: one (condition, body) pair per branch, plus the else body."""

    span: Span
    tests: tuple[Expr, ...]
    bodies: tuple[tuple[Stmt, ...], ...]
    orelse: tuple[Stmt, ...] | None
    keyword_spans: tuple[Span, ...] = ()  # the `elif`/`else` headers, for the formatter


@node
class While(Stmt):
    span: Span
    test: Expr
    body: tuple[Stmt, ...]


@node
class For(Stmt):
    """`for x in xs:`; with `parallel` each iteration is a branch, and `ys = for ...` collects the value of
    each iteration's last line into `ys` (`collect`), in input order."""

    span: Span
    targets: tuple[Name, ...]
    iterable: Expr
    body: tuple[Stmt, ...]
    parallel: bool = False
    limit: Expr | None = None
    collect: Name | None = None


@node
class Break(Stmt):
    span: Span


@node
class Continue(Stmt):
    span: Span


@node
class Pass(Stmt):
    span: Span


@node
class Label(Stmt):
    span: Span
    name: str


@node
class Goto(Stmt):
    span: Span
    name: str
    name_span: Span


@node
class Try(Stmt):
    """`try: ... except err: ...`; `err` (optional) is bound to an Error record."""

    span: Span
    body: tuple[Stmt, ...]
    name: Name | None
    handler: tuple[Stmt, ...]
    except_span: Span


@node
class Parallel(Stmt):
    """`parallel:` or `parallel(limit=N):`: each statement of the body is a branch, run concurrently."""

    span: Span
    limit: Expr | None
    branches: tuple[Stmt, ...]


@node
class Cancel(Stmt):
    """`cancel h`: ask the spawned node behind handle `h` to stop."""

    span: Span
    value: Expr


@node
class Send(Stmt):
    """`send target, body[, topic=t]`: put `body` in the mailbox of the node `target` names (a Handle, `parent`,
    a route's topic string, or "human")."""

    span: Span
    target: Expr
    body: Expr
    topic: Expr | None = None


@node
class OnMessage(Stmt):
    """`on message m:` a handler: when a message arrives, it runs at the next statement boundary with `m` bound."""

    span: Span
    name: str
    name_span: Span
    body: tuple[Stmt, ...]


@node
class Fail(Stmt):
    span: Span
    value: Expr


@node
class Return(Stmt):
    span: Span
    value: Expr | None


@node
class AmbiguousInput(Node):
    span: Span
    name: str
    type: TypeExpr
    default: Expr | None


@node
class AmbiguousOutput(Node):
    span: Span
    name: str
    type: TypeExpr


@node
class Ambiguous(Stmt):
    """A step nobody knows how to do yet: a typed spec handed to the decomposer at run time."""

    span: Span
    name: str
    inputs: tuple[AmbiguousInput, ...]
    outputs: tuple[AmbiguousOutput, ...]
    doc: str | None
    body: tuple[Stmt, ...]  # everything after the docstring and `use` lines; must be empty
    uses: tuple[Use, ...] = ()  # `use` lines in the block: the module may use only these (within the parent's)
    examples: tuple = ()  # contracts.Example: inputs -> expected outputs, for the decomposer and `pipe test`
    expects: tuple = ()  # contracts.Expect: post-conditions over inputs and outputs


@node
class UseStmt(Stmt):
    """`use text.split, lists` inside an ambiguous block (anywhere else the checker refuses it)."""

    span: Span
    names: tuple[Use, ...]


# ---- declarations --------------------------------------------------------


@node
class Use(Node):
    span: Span
    name: str


@node
class FieldDecl(Node):
    span: Span
    name: str
    type: TypeExpr
    default: Expr | None


@node
class RecordDecl(Node):
    span: Span
    name: str
    fields: tuple[FieldDecl, ...]
    doc: str | None


@node
class ParamDecl(Node):
    span: Span
    name: str
    type: TypeExpr
    default: Expr | None


@node
class Pipeline(Node):
    span: Span
    name: str
    params: tuple[ParamDecl, ...]
    returns: TypeExpr | None
    doc: str | None
    body: tuple[Stmt, ...]
    name_span: Span
    examples: tuple = ()  # contracts.Example, after the docstring
    expects: tuple = ()  # contracts.Expect: post-conditions checked at every return (`result` is the value)


@node
class Route(Node):
    """`route "billing" -> billing_desk`: messages sent to the topic go to a node running the pipeline; without
    `-> pipeline`, orgtree.toml's `[org] routes` names it (docs/org.md, Routes)."""

    span: Span
    topic: str
    topic_span: Span
    pipeline: str | None
    pipeline_span: Span | None


@node
class Module(Node):
    span: Span
    file: str
    uses: tuple[Use, ...]
    records: tuple[RecordDecl, ...]
    pipelines: tuple[Pipeline, ...]
    items: tuple[Node, ...]  # uses, records, pipelines, tests and routes in source order (for the formatter)
    tests: tuple = ()  # contracts.TestDecl: `test "name":` blocks, run by `pipe test`
    routes: tuple[Route, ...] = ()
