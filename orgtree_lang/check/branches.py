"""The variables of a parallel block's branches: what each assigns and reads, and which stay private to it."""

from __future__ import annotations

from orgtree_lang.syntax import nodes as n
from orgtree_lang.syntax import types as t
from orgtree_lang.syntax.spans import Span


def assigned_names(stmt: n.Stmt) -> dict[str, Span]:
    """The variables a statement assigns anywhere inside it, each with where it first does."""
    found: dict[str, Span] = {}
    for name, span, _ in _bindings(stmt):
        found.setdefault(name, span)
    return found


def private_names(block: n.Parallel) -> set[str]:
    """Variables a block's branches bind only as loop variables or `except` names: each branch keeps its own,
    and none is copied back after the block (so two branches may both loop with `i` or catch as `err`)."""
    kinds: dict[str, set[bool]] = {}
    for branch in block.branches:
        for name, _, private in _bindings(branch):
            kinds.setdefault(name, set()).add(private)
    return {name for name, seen in kinds.items() if seen == {True}}


def branch_outputs(block: n.Parallel) -> list[list[str]]:
    """Per branch, the variables copied back into the block's frame when the branch ends, in source order."""
    private = private_names(block)
    return [[name for name in assigned_names(branch) if name not in private] for branch in block.branches]


def read_names(stmt: n.Stmt) -> dict[str, Span]:
    """The variables a statement reads anywhere inside it, each with where it first does."""
    targets: set[int] = set()
    found: dict[str, Span] = {}
    for node in stmt.walk():
        if isinstance(node, (n.Assign, n.For)):
            targets.update(id(tg) for tg in node.targets)
            if isinstance(node, n.For) and node.collect is not None:
                targets.add(id(node.collect))
        elif isinstance(node, n.Try) and node.name is not None:
            targets.add(id(node.name))
        elif isinstance(node, n.Ambiguous):
            for item in node.inputs:
                if item.default is None:
                    found.setdefault(item.name, item.span)
        elif isinstance(node, n.Name) and id(node) not in targets:
            found.setdefault(node.id, node.span)
    return found


def _bindings(stmt: n.Stmt):
    """(name, span, private) for every binding inside `stmt`; private: a loop variable or an `except` name."""
    for node in stmt.walk():
        if isinstance(node, n.Assign):
            for target in node.targets:
                yield target.id, target.span, False
        elif isinstance(node, n.For):
            for target in node.targets:
                yield target.id, target.span, True
            if node.collect is not None:
                yield node.collect.id, node.collect.span, False
        elif isinstance(node, n.AugAssign):
            yield node.target.id, node.target.span, False
        elif isinstance(node, n.Try) and node.name is not None:
            yield node.name.id, node.name.span, True
        elif isinstance(node, n.Ambiguous):
            for output in node.outputs:
                yield output.name, output.span, False


def check_parallel(checker, stmt: n.Parallel, next_block: int) -> int:
    """Check a parallel block for a PipelineChecker: its limit, each branch as a block of its own outside any
    loop, and no variable shared by branches when one of them assigns it. Returns the next free block id."""
    _check_limit(checker, stmt.limit)
    checker.branch_depth += 1
    for branch in stmt.branches:
        if isinstance(branch, n.Label) and checker.report:
            checker.sink.error("a `label` cannot be a branch of a parallel block", branch.span,
                               "put the label inside a branch's statement, or before the block")
        next_block = checker._block((branch,), next_block, 0)
    checker.branch_depth -= 1
    if checker.report:
        _shared_variables(checker.sink, stmt)
    return next_block


def check_parallel_for(checker, stmt: n.For, next_block: int) -> int:
    """Check the body of `for ... parallel:` (its targets are bound): each iteration is a branch of its own,
    and `ys = for ...` collects the value of the body's last line, so that line must be an expression."""
    _check_limit(checker, stmt.limit)
    checker.branch_depth += 1
    next_block = checker._block(stmt.body, next_block, 0)
    checker.branch_depth -= 1
    if stmt.collect is None:
        return next_block
    last = stmt.body[-1] if stmt.body else None
    value = t.ANY
    if isinstance(last, n.ExprStmt):
        report, checker.typer.report = checker.typer.report, False  # checked once already, with the body
        try:
            value = checker.typer.expr(last.expr)
        finally:
            checker.typer.report = report
    elif checker.report:
        checker.sink.error(f"the last line of `{stmt.collect.id} = for ... parallel:` must be an expression: each "
                           "iteration's value is collected", last.span if last is not None else stmt.span,
                           f"end the loop with the value to collect, e.g. a line holding just `len(page)`")
    checker._bind(stmt.collect.id, t.list_of(value))
    return next_block


def _check_limit(checker, limit: n.Expr | None) -> None:
    if limit is None:
        return
    value = checker.typer.expr(limit)
    if checker.report and not t.is_assignable(value, t.primitive("int")):
        checker.sink.error(f"`parallel(limit=...)` needs an int, got {value}", limit.span,
                           "the limit is how many branches may run at once, e.g. `parallel(limit=4):`")


def _shared_variables(sink, stmt: n.Parallel) -> None:
    private = private_names(stmt)
    writes = [{k: v for k, v in assigned_names(branch).items() if k not in private} for branch in stmt.branches]
    reads = [read_names(branch) for branch in stmt.branches]
    for i, written in enumerate(writes):
        for j in range(i):
            for name in sorted(written.keys() & writes[j].keys()):
                sink.error(f"`{name}` is assigned in two branches of this parallel block (lines "
                           f"{writes[j][name].line} and {written[name].line})", written[name],
                           "branches run at the same time: give each branch its own variable and combine them "
                           "after the block")
    for i, read in enumerate(reads):
        told: set[str] = set()
        for j, written in enumerate(writes):
            if i == j:
                continue
            for name in sorted((read.keys() & written.keys()) - told):
                told.add(name)
                sink.error(f"this branch reads `{name}`, which the branch on line {stmt.branches[j].span.line} "
                           "of the same parallel block assigns", read[name],
                           "branches run at the same time, so what it would see depends on timing: read it "
                           "after the block, or compute it before")
