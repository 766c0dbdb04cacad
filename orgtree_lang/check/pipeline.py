"""Check one pipeline body: names, calls against signatures, static types, labels and goto, loops, reachability."""

from __future__ import annotations

import contextlib

from orgtree_lang.check.branches import check_parallel, check_parallel_for
from orgtree_lang.check.capabilities import capability_allowed
from orgtree_lang.check.contracts import CONTRACT_STATEMENTS, check_block_contracts, contract_statement
from orgtree_lang.check.module import CallTarget, CheckedModule, PipelineInfo, resolve_type
from orgtree_lang.check.routes import check_send
from orgtree_lang.check.typing import ExprTyper
from orgtree_lang.runtime.builtins import BUILTINS
from orgtree_lang.syntax import nodes as n
from orgtree_lang.syntax import types as t
from orgtree_lang.syntax.diagnostics import DiagnosticSink

_TERMINATORS = (n.Return, n.Fail, n.Break, n.Continue, n.Goto)


class PipelineChecker:
    """Walks a pipeline twice quietly to settle variable types, then once more reporting every problem."""

    def __init__(self, checked: CheckedModule, registry, sink: DiagnosticSink, info: PipelineInfo) -> None:
        self.checked = checked
        self.registry = registry
        self.sink = sink
        self.info = info
        self.decl = info.decl
        self.variables: dict[str, t.PipeType] = {p.name: p.type for p in info.params}
        self.assigned: set[str] = set(self.variables)
        self.typer = ExprTyper(checked, registry, sink, self)
        self.labels: dict[str, tuple[int, n.Label]] = {}
        self.block_parent: dict[int, int | None] = {}
        self._next_block = 0
        self.branch_blocks: set[int] = set()  # the blocks that are branches of a parallel block
        self.branch_depth = 0  # how many parallel blocks the statement being checked is a branch of

    # -- entry point

    def run(self) -> None:
        self._collect_names(self.decl.body)
        self._collect_labels(self.decl.body, None)
        for _ in range(2):
            self.typer.report = False
            self._block(self.decl.body, block=0, loops=0)
        self.typer.report = True
        self._block(self.decl.body, block=0, loops=0)
        self._check_ending()

    @property
    def report(self) -> bool:
        return self.typer.report

    # -- pre-passes

    def _collect_names(self, body: tuple[n.Stmt, ...]) -> None:
        """Every variable the pipeline binds anywhere (assignments, loop targets, except names, outputs)."""
        for stmt in body:
            for node in stmt.walk():
                if isinstance(node, n.Assign):
                    names = [tg for tg in node.targets]
                elif isinstance(node, n.AugAssign):
                    names = [node.target]
                elif isinstance(node, n.For):
                    names = list(node.targets) + ([node.collect] if node.collect is not None else [])
                elif isinstance(node, n.Try) and node.name is not None:
                    names = [node.name]
                elif isinstance(node, n.Ambiguous):
                    names = [n.Name(o.span, o.name) for o in node.outputs]
                elif isinstance(node, n.OnMessage):
                    names = [n.Name(node.name_span, node.name)]
                else:
                    continue
                for name in names:
                    self._check_bindable(name)
                    self.assigned.add(name.id)

    def _check_bindable(self, name: n.Name) -> None:
        kind = None
        if name.id in BUILTINS:
            kind = "the built-in"
        elif name.id in self.checked.records:
            kind = "the record"
        elif name.id in self.checked.pipelines:
            kind = "the pipeline"
        if kind:
            self.sink.error(f"cannot assign to `{name.id}`: it names {kind} `{name.id}`", name.span,
                            "choose another variable name")

    def _collect_labels(self, body: tuple[n.Stmt, ...], parent: int | None) -> int:
        block = self._next_block
        self._next_block += 1
        self.block_parent[block] = parent
        for stmt in body:
            if isinstance(stmt, n.Label):
                if stmt.name in self.labels:
                    first = self.labels[stmt.name][1]
                    self.sink.error(f"label `{stmt.name}` is defined twice in pipeline `{self.decl.name}`",
                                    stmt.span, f"the first `label {stmt.name}` is on line {first.span.line}")
                else:
                    self.labels[stmt.name] = (block, stmt)
            for sub in _sub_blocks(stmt):
                inner = self._collect_labels(sub, block)
                if isinstance(stmt, n.Parallel) or (isinstance(stmt, n.For) and stmt.parallel):
                    self.branch_blocks.add(inner)
        return block

    # -- statements

    def _block(self, body: tuple[n.Stmt, ...], block: int, loops: int) -> int:
        """Check a block; return the next free block id (blocks are numbered as in _collect_labels)."""
        next_block = block + 1
        terminated = False
        for stmt in body:
            if terminated and not isinstance(stmt, n.Label) and self.report:
                self.sink.warning("unreachable code", stmt.span,
                                  "nothing jumps here; remove it or add a `label` to jump to")
                terminated = False
            next_block = self._stmt(stmt, block, next_block, loops)
            if isinstance(stmt, _TERMINATORS):
                terminated = True
            elif isinstance(stmt, n.Label):
                terminated = False
        return next_block

    def _stmt(self, stmt: n.Stmt, block: int, next_block: int, loops: int) -> int:
        typer = self.typer
        if isinstance(stmt, n.Assign):
            value = typer.expr(stmt.value)
            if len(stmt.targets) == 1:
                self._bind(stmt.targets[0].id, value)
            else:
                if value.kind not in ("list", "any") and self.report:
                    self.sink.error(f"cannot unpack {value} into {len(stmt.targets)} names", stmt.value.span,
                                    "the value on the right must be a list")
                element = value.arg if value.kind == "list" else t.ANY
                for target in stmt.targets:
                    self._bind(target.id, element)
        elif isinstance(stmt, n.AugAssign):
            self.typer.name(stmt.target)
            result = typer.binop(stmt.op, self.variables.get(stmt.target.id, t.ANY), typer.expr(stmt.value), stmt.span)
            self._bind(stmt.target.id, result)
        elif isinstance(stmt, n.ExprStmt):
            typer.expr(stmt.expr)
        elif isinstance(stmt, n.If):
            # Each branch sees its own test as true and the earlier ones as false (type tests narrow types).
            earlier: dict[str, t.PipeType] = {}
            for test, body in zip(stmt.tests, stmt.bodies):
                with self._narrowed(earlier):
                    typer.expr(test)
                    with self._narrowed(self._known_types(test, True)):
                        next_block = self._block(body, next_block, loops)
                earlier = {**earlier, **self._known_types(test, False)}
            if stmt.orelse is not None:
                with self._narrowed(earlier):
                    next_block = self._block(stmt.orelse, next_block, loops)
        elif isinstance(stmt, n.While):
            typer.expr(stmt.test)
            next_block = self._block(stmt.body, next_block, loops + 1)
        elif isinstance(stmt, n.For):
            iterable = typer.expr(stmt.iterable)
            element = typer.element_type(iterable, stmt.iterable.span)
            if len(stmt.targets) == 1:
                self._bind(stmt.targets[0].id, element)
            else:
                inner = element.arg if element.kind == "list" else t.ANY
                for target in stmt.targets:
                    self._bind(target.id, inner)
            if stmt.parallel:
                next_block = check_parallel_for(self, stmt, next_block)
            else:
                next_block = self._block(stmt.body, next_block, loops + 1)
        elif isinstance(stmt, (n.Break, n.Continue)):
            if loops == 0 and self.report:
                word = "break" if isinstance(stmt, n.Break) else "continue"
                if self.branch_depth:
                    self.sink.error(f"`{word}` cannot leave a branch of a parallel block", stmt.span,
                                    "a branch ends where its statement ends; use `if` to skip the rest of it")
                else:
                    self.sink.error(f"`{word}` outside a loop", stmt.span,
                                    "use `return` to leave the pipeline, or `goto` a label")
        elif isinstance(stmt, n.Parallel):
            next_block = check_parallel(self, stmt, next_block)
        elif isinstance(stmt, n.Cancel):
            typer.handle(stmt.value, "cancel")
        elif isinstance(stmt, n.OnMessage):
            if (block != 0 or self.branch_depth) and self.report:
                self.sink.error("`on message` must be a statement of the pipeline's own body, not nested in a block",
                                stmt.span, "declare the handler at the top level of the pipeline, before the work "
                                           "it may interrupt")
            self._bind(stmt.name, t.record("Message"))
            next_block = self._block(stmt.body, next_block, 0)
        elif isinstance(stmt, n.Send):
            check_send(self, stmt)
        elif isinstance(stmt, n.Goto):
            self._goto(stmt, block)
        elif isinstance(stmt, n.Try):
            next_block = self._block(stmt.body, next_block, loops)
            if stmt.name is not None:
                self._bind(stmt.name.id, t.record("Error"))
            next_block = self._block(stmt.handler, next_block, loops)
        elif isinstance(stmt, n.Fail):
            typer.expr(stmt.value)
        elif isinstance(stmt, n.Return):
            self._return(stmt)
        elif isinstance(stmt, n.Ambiguous):
            self._ambiguous(stmt)
            check_block_contracts(self, stmt)
        elif isinstance(stmt, CONTRACT_STATEMENTS):
            contract_statement(self, stmt)
        elif isinstance(stmt, n.UseStmt) and self.report:
            self.sink.error("`use` inside a pipeline is allowed only in an ambiguous block, after its docstring",
                            stmt.span, "put `use` lines at the top of the module; inside an ambiguous block they "
                                       "narrow the skills its module may use")
        return next_block

    def _known_types(self, test: n.Expr, holds: bool) -> dict[str, t.PipeType]:
        """The variable types known while `test` is `holds` (true or false), from the type tests in it."""
        if isinstance(test, n.UnaryOp) and test.op == "not":
            return self._known_types(test.operand, not holds)
        if isinstance(test, n.BoolOp) and (test.op == "and") == holds:
            return {**self._known_types(test.left, holds), **self._known_types(test.right, holds)}
        if not isinstance(test, n.TypeTest) or not isinstance(test.value, n.Name) or test.type.args:
            return {}
        name = test.value.id
        current = self.variables.get(name)
        tested = self.checked.types.get(test.type)
        if current is None or tested is None:
            return {}
        if holds != test.negated:  # the value is a `tested`
            inner = current.arg if current.kind == "optional" else current
            if tested.kind == inner.kind and (tested.kind != "record" or tested.name == inner.name):
                return {name: inner}  # keeps what is known of the items, e.g. list[int]
            return {name: tested}
        if tested.kind == "none" and current.kind == "optional":  # the value is not none
            return {name: current.arg}
        return {}

    @contextlib.contextmanager
    def _narrowed(self, types: dict[str, t.PipeType]):
        """Give variables narrower types for a while; an assignment meanwhile widens them back afterwards."""
        saved = {name: self.variables[name] for name in types}
        self.variables.update(types)
        try:
            yield
        finally:
            for name, before in saved.items():
                after = self.variables[name]
                self.variables[name] = before if after == types[name] else t.join(before, after)

    def _bind(self, name: str, value: t.PipeType) -> None:
        old = self.variables.get(name)
        self.variables[name] = value if old is None else t.join(old, value)

    def _goto(self, stmt: n.Goto, block: int) -> None:
        if not self.report:
            return
        found = self.labels.get(stmt.name)
        if found is None:
            from orgtree_lang.syntax.diagnostics import did_you_mean

            self.sink.error(f"no label `{stmt.name}` in pipeline `{self.decl.name}`", stmt.name_span,
                            did_you_mean(stmt.name, self.labels) or "declare it with `label NAME` on its own line")
            return
        target_block, label = found
        ancestor: int | None = block
        while ancestor is not None:
            if ancestor == target_block:
                return
            if ancestor in self.branch_blocks:
                self.sink.error(f"`goto {stmt.name}` cannot leave a branch of a parallel block", stmt.span,
                                f"`label {stmt.name}` (line {label.span.line}) is outside this branch; a branch "
                                "ends where its statement ends")
                return
            ancestor = self.block_parent[ancestor]
        self.sink.error(f"`goto {stmt.name}` jumps into a nested block", stmt.span,
                        f"`label {stmt.name}` (line {label.span.line}) is inside a block this goto is not in; "
                        "goto may only jump within its block or out to an enclosing one")

    def _return(self, stmt: n.Return) -> None:
        if self.branch_depth and self.report:
            self.sink.error("`return` cannot be inside a branch of a parallel block", stmt.span,
                            "assign the value to a variable in the branch, and return it after the block")
        declared = self.info.returns
        if stmt.value is None:
            if declared.kind not in ("none", "optional", "any") and self.report:
                self.sink.error(f"pipeline `{self.decl.name}` must return a {declared}", stmt.span,
                                "write `return VALUE`")
            return
        value = self.typer.expr(stmt.value)
        if self.report and not t.is_assignable(value, declared):
            hint = "declare the return type with `-> TYPE` after the parameters" if self.decl.returns is None \
                else t.mismatch_hint(value, declared)
            self.sink.error(f"pipeline `{self.decl.name}` returns {declared}, but this is {value}",
                            stmt.value.span, hint)

    def _check_ending(self) -> None:
        declared = self.info.returns
        if declared.kind in ("none", "optional", "any") or not falls_through(self.decl.body):
            return
        last = self.decl.body[-1].span if self.decl.body else self.decl.name_span
        self.sink.error(f"pipeline `{self.decl.name}` returns {declared}, but can reach its end without `return`",
                        last, f"end every path with `return VALUE` (or `fail MESSAGE`); declare `-> {declared}?` "
                              "if `none` is a valid answer")

    def _narrowing(self, stmt: n.Ambiguous) -> None:
        """A block's `use` lines may only narrow the module's: each must be covered by a module `use`."""
        parent = tuple(self.checked.uses)
        for use in stmt.uses:
            if not capability_allowed(use.name, parent):
                allowed = ", ".join(f"`{u}`" for u in parent) or "nothing (the module has no `use` lines)"
                self.sink.error(f"ambiguous block `{stmt.name}` cannot use `{use.name}`: a block may only narrow "
                                f"the module's skills, which allow {allowed}", use.span,
                                f"add `use {use.name.split('.')[0]}` at the top of the module, or drop it here")
            elif use.name not in self.registry.namespaces() and self.registry.get(use.name) is None:
                self.sink.error(f"`use {use.name}` in ambiguous block `{stmt.name}` names no installed skill",
                                use.span, "`pipe skills` lists the installed skills")

    def _ambiguous(self, stmt: n.Ambiguous) -> None:
        if self.report:
            if not stmt.doc:
                self.sink.error(
                    f"ambiguous block `{stmt.name}` needs a docstring saying what it must do", stmt.span,
                    'put a """description""" on the first line of the block: the decomposer solves the block from it',
                )
            for extra in stmt.body:
                self.sink.error("an ambiguous block holds only its docstring and `use` lines, then `examples:` and "
                                "`expect` lines", extra.span,
                                "the decomposer writes the steps; move code before or after the block")
            self._narrowing(stmt)
        seen: set[str] = set()
        for item in stmt.inputs:
            declared = resolve_type(item.type, self.checked.records, self.sink if self.report else _QUIET, self.checked)
            if item.name in seen and self.report:
                self.sink.error(f"input `{item.name}` is listed twice", item.span)
            seen.add(item.name)
            if item.default is not None:
                actual = self.typer.expr(item.default)
            elif item.name in self.assigned:
                actual = self.variables.get(item.name, t.ANY)
            else:
                if self.report:
                    from orgtree_lang.syntax.diagnostics import did_you_mean

                    self.sink.error(
                        f"input `{item.name}` of ambiguous block `{stmt.name}` is not bound", item.span,
                        did_you_mean(item.name, self.assigned)
                        or f"bind it first, or give it a value: `{item.name}: {item.type} = EXPR`",
                    )
                continue
            if self.report and not t.is_assignable(actual, declared):
                self.sink.error(f"input `{item.name}` is declared {declared}, but its value is {actual}", item.span)
        for out in stmt.outputs:
            if out.name in seen and self.report:
                self.sink.error(f"`{out.name}` is listed twice in ambiguous block `{stmt.name}`", out.span)
            seen.add(out.name)
            self._bind(out.name, resolve_type(out.type, self.checked.records,
                                              self.sink if self.report else _QUIET, self.checked))


class _Quiet(DiagnosticSink):
    def error(self, *args, **kwargs) -> None:
        pass

    def warning(self, *args, **kwargs) -> None:
        pass


_QUIET = _Quiet("<quiet>")


def falls_through(body: tuple[n.Stmt, ...]) -> bool:
    """Whether running `body` can reach its end: no return, fail, jump or endless loop stops every path.

    A `label` makes what follows reachable again, since a goto may land there."""
    reachable = True
    for stmt in body:
        if isinstance(stmt, n.Label):
            reachable = True
        elif reachable and _stops(stmt):
            reachable = False
    return reachable


def _stops(stmt: n.Stmt) -> bool:
    if isinstance(stmt, _TERMINATORS):
        return True
    if isinstance(stmt, n.If):
        return stmt.orelse is not None and not any(falls_through(b) for b in (*stmt.bodies, stmt.orelse))
    if isinstance(stmt, n.Try):
        return not falls_through(stmt.body) and not falls_through(stmt.handler)
    if isinstance(stmt, n.While):
        endless = isinstance(stmt.test, n.Const) and stmt.test.value is True
        return endless and not _breaks(stmt.body)
    return False


def _breaks(body: tuple[n.Stmt, ...]) -> bool:
    """Whether a `break` in `body` leaves the loop `body` belongs to (breaks of nested loops do not)."""
    for stmt in body:
        if isinstance(stmt, n.Break):
            return True
        if isinstance(stmt, (n.If, n.Try)) and any(_breaks(sub) for sub in _sub_blocks(stmt)):
            return True
    return False


def _sub_blocks(stmt: n.Stmt) -> list[tuple[n.Stmt, ...]]:
    """The nested blocks of a statement, in the order the checker visits them."""
    if isinstance(stmt, n.If):
        return list(stmt.bodies) + ([stmt.orelse] if stmt.orelse is not None else [])
    if isinstance(stmt, (n.While, n.For)):
        return [stmt.body]
    if isinstance(stmt, n.Try):
        return [stmt.body, stmt.handler]
    if isinstance(stmt, n.Parallel):
        return [(branch,) for branch in stmt.branches]
    if isinstance(stmt, n.OnMessage):
        return [stmt.body]
    return []


__all__ = ["PipelineChecker", "CallTarget"]
