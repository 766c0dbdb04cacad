"""Generate bytecode (a Program of CodeObjects) from a CheckedModule: the pipeline compiler and its statements; the
expressions, the concurrent statements and the contracts are its mixins (expressions.py, concurrency.py, contracts.py)."""

from __future__ import annotations

from orgtree_lang.check.module import CheckedModule, PipelineInfo
from orgtree_lang.check.pipeline import falls_through
from orgtree_lang.compile.code import AmbiguousSpec, CodeObject, Param, Program, RecordSpec
from orgtree_lang.compile.concurrency import ConcurrencyEmitter
from orgtree_lang.compile.contracts import ContractEmitter, block_examples, source_text
from orgtree_lang.compile.emitter import JumpTarget, OpenBlock, constant_value
from orgtree_lang.compile.expressions import ExpressionEmitter
from orgtree_lang.compile.fusion import thread_jumps
from orgtree_lang.compile.opcodes import CODE
from orgtree_lang.compile.stack import compute_max_stack
from orgtree_lang.syntax import nodes as n
from orgtree_lang.syntax.spans import Span

def generate(checked: CheckedModule, source_hash: str) -> Program:
    """Compile every pipeline and record of a checked module."""
    records = {
        name: RecordSpec(name, tuple(info.fields.items()),
                         {k: constant_value(v) for k, v in info.defaults.items()}, info.doc or "")
        for name, info in checked.records.items()
        if name not in ("Error", "Handle")  # made by the runtime, never built by a program
    }
    pipelines = {name: _PipelineCompiler(checked, info).compile() for name, info in checked.pipelines.items()}
    tests = {name: _PipelineCompiler(checked, info).compile() for name, info in checked.tests.items()}
    return Program(checked.module.file, source_hash, tuple(checked.uses), records, pipelines, tests,
                   dict(checked.routes))


def _last_line_span(body: tuple[n.Stmt, ...]) -> Span:
    """The span of the textually last simple statement of a block.

    Spans of compound statements run on to the start of the next line (their block's closing newline), so an
    error at the end of a pipeline would otherwise point at the line after it."""
    stmt = body[-1]
    if isinstance(stmt, n.If):
        return _last_line_span(stmt.orelse if stmt.orelse else stmt.bodies[-1])
    if isinstance(stmt, (n.While, n.For)):
        return _last_line_span(stmt.body)
    if isinstance(stmt, n.Try):
        return _last_line_span(stmt.handler)
    if isinstance(stmt, n.Parallel):
        return _last_line_span(stmt.branches)
    if isinstance(stmt, n.Ambiguous):
        return stmt.outputs[-1].span  # the end of its header; the grammar requires at least one output
    return stmt.span


_JUMPS_AWAY = (n.Return, n.Fail, n.Goto, n.Break, n.Continue)


class _PipelineCompiler(ExpressionEmitter, ConcurrencyEmitter, ContractEmitter):
    """One pipeline (or test) in, its CodeObject out: sets up the emitter's fields and emits the statements."""

    def __init__(self, checked: CheckedModule, info: PipelineInfo) -> None:
        self.checked = checked
        self.info = info
        decl = info.decl
        self.code = CodeObject(
            name=decl.name,
            file=checked.module.file,
            params=tuple(
                Param(p.name, p.type, p.default is not None,
                      constant_value(p.default) if p.default is not None else None)
                for p in info.params
            ),
            returns=info.returns,
            doc=decl.doc or "",
            span=decl.span,
        )
        self.slots: dict[str, int] = {}
        for p in info.params:
            self._slot(p.name)
        self.const_index: dict[tuple, int] = {}
        self.blocks: list[OpenBlock] = []
        self.label_targets: dict[str, JumpTarget] = {}
        self.label_depth: dict[str, int] = {}
        self.fixups: list[tuple[int, JumpTarget]] = []
        # PARALLEL instructions: their branches' labels, and the slots each branch copies back when it ends.
        self.branch_fixups: list[tuple[int, list[JumpTarget], list[list[int]]]] = []
        self.label_pcs: set[int] = set()
        self.last_span: Span | None = None
        self.renames: dict[str, str] = {}  # names an ambiguous block's `expect` reads from hidden locals

    def compile(self) -> CodeObject:
        decl = self.info.decl
        self._collect_labels(decl.body, 0)
        self._body(decl.body)
        last = _last_line_span(decl.body) if decl.body else decl.name_span
        end = Span(decl.span.file, last.end_line, last.end_col, last.end_line, last.end_col)
        self._emit(CODE["LOAD_CONST"], self._const(None), end)
        if falls_through(decl.body):  # else the end is never reached: every path returns or fails
            self._post_conditions(end)
        self._emit(CODE["RETURN"], None, end)
        for pc, label in self.fixups:
            if isinstance(self.code.args[pc], list):
                self.code.args[pc][-1] = label.pc  # a superinstruction's jump target is its last field
            else:
                self.code.args[pc] = label.pc
        for pc, labels, outputs in self.branch_fixups:
            self.code.args[pc] = [[label.pc, slots] for label, slots in zip(labels, outputs)]
        thread_jumps(self.code.ops, self.code.args)
        self.code.max_stack = compute_max_stack(self.code)
        return self.code

    def _collect_labels(self, body: tuple[n.Stmt, ...], depth: int) -> None:
        """Record how many enclosing blocks each label sits in, so a goto knows what to clean up."""
        for stmt in body:
            if isinstance(stmt, n.Label):
                self.label_targets[stmt.name] = JumpTarget()
                self.label_depth[stmt.name] = depth
            elif isinstance(stmt, n.If):
                for sub in stmt.bodies:
                    self._collect_labels(sub, depth)
                if stmt.orelse:
                    self._collect_labels(stmt.orelse, depth)
            elif isinstance(stmt, (n.While, n.For)):
                self._collect_labels(stmt.body, depth + 1)
            elif isinstance(stmt, n.Try):
                self._collect_labels(stmt.body, depth + 1)
                self._collect_labels(stmt.handler, depth)
            elif isinstance(stmt, n.OnMessage):
                self._collect_labels(stmt.body, depth + 1)
            elif isinstance(stmt, n.Parallel):
                # A branch runs in a frame of its own: it starts inside no block (see _Parallel).
                for branch in stmt.branches:
                    self._collect_labels((branch,), 0)
            elif isinstance(stmt, n.For) and stmt.parallel:
                self._collect_labels(stmt.body, 0)

    # -- statements

    def _body(self, body: tuple[n.Stmt, ...]) -> None:
        for stmt in body:
            self._stmt(stmt)

    def _stmt(self, s: n.Stmt) -> None:
        if isinstance(s, n.Label):
            self._place(self.label_targets[s.name])
        self._emit(CODE["STMT"], None, s.span)
        method = getattr(self, "_" + type(s).__name__)
        method(s)

    def _Assign(self, s: n.Assign) -> None:
        self._expr(s.value)
        if len(s.targets) == 1:
            self._emit(CODE["STORE_LOCAL"], self._slot(s.targets[0].id), s.targets[0].span)
            return
        self._emit(CODE["UNPACK"], len(s.targets), s.value.span)
        for target in s.targets:
            self._emit(CODE["STORE_LOCAL"], self._slot(target.id), target.span)

    def _AugAssign(self, s: n.AugAssign) -> None:
        slot = self._slot(s.target.id)
        self._emit(CODE["LOAD_LOCAL"], slot, s.target.span)
        self._expr(s.value)
        self._emit(CODE["BINARY"], s.op, s.span)
        self._emit(CODE["STORE_LOCAL"], slot, s.target.span)

    def _ExprStmt(self, s: n.ExprStmt) -> None:
        self._expr(s.expr)
        self._emit(CODE["POP"], None, s.span)

    def _Pass(self, s: n.Pass) -> None:
        pass

    def _Label(self, s: n.Label) -> None:
        pass

    def _Goto(self, s: n.Goto) -> None:
        depth = self.label_depth[s.name]
        self._unwind(self.blocks[depth:], s.span)
        self._jump(CODE["JUMP"], self.label_targets[s.name], s.span)

    def _Break(self, s: n.Break) -> None:
        loop_index = self._innermost_loop()
        self._unwind(self.blocks[loop_index:], s.span)
        self._jump(CODE["JUMP"], self.blocks[loop_index].break_label, s.span)

    def _Continue(self, s: n.Continue) -> None:
        loop_index = self._innermost_loop()
        self._unwind(self.blocks[loop_index + 1 :], s.span)
        self._jump(CODE["JUMP"], self.blocks[loop_index].continue_label, s.span)

    def _innermost_loop(self) -> int:
        for i in range(len(self.blocks) - 1, -1, -1):
            if self.blocks[i].kind in ("for", "while"):
                return i
        raise AssertionError("the checker lets no break/continue outside a loop")

    def _If(self, s: n.If) -> None:
        end = JumpTarget()
        for test, body in zip(s.tests, s.bodies):
            next_branch = JumpTarget()
            self._expr(test)
            self._jump(CODE["JUMP_IF_FALSE"], next_branch, test.span)
            self._body(body)
            if not (body and isinstance(body[-1], _JUMPS_AWAY)):
                self._jump(CODE["JUMP"], end, s.span)
            self._place(next_branch)
        if s.orelse is not None:
            self._body(s.orelse)
        self._place(end)

    def _While(self, s: n.While) -> None:
        # The loop jumps back to this statement's STMT, so every iteration counts a step.
        top = JumpTarget()
        self._place(top, len(self.code.ops) - 1)
        end = JumpTarget()
        self._expr(s.test)
        self._jump(CODE["JUMP_IF_FALSE"], end, s.test.span)
        self.blocks.append(OpenBlock("while", end, top))
        self._body(s.body)
        self.blocks.pop()
        self._jump(CODE["JUMP"], top, s.span)
        self._place(end)

    def _For(self, s: n.For) -> None:
        if s.parallel:
            self._parallel_for(s)
            return
        if self._is_range_call(s.iterable):
            # The loop runs over a range, never a built list: the loop state then costs a checkpoint nothing.
            for arg in s.iterable.args:
                self._expr(arg)
            self._emit(CODE["GET_RANGE_ITER"], len(s.iterable.args), s.iterable.span)
        else:
            self._expr(s.iterable)
            self._emit(CODE["GET_ITER"], None, s.iterable.span)
        top, end, after = JumpTarget(), JumpTarget(), JumpTarget()
        self._place(top)
        self._jump(CODE["FOR_ITER"], end, s.span)
        if len(s.targets) == 1:
            self._emit(CODE["STORE_LOCAL"], self._slot(s.targets[0].id), s.targets[0].span)
        else:
            self._emit(CODE["UNPACK"], len(s.targets), s.span)
            for target in s.targets:
                self._emit(CODE["STORE_LOCAL"], self._slot(target.id), target.span)
        # `break` pops the loop state itself, then jumps past the exhausted-loop exit.
        self.blocks.append(OpenBlock("for", after, top))
        self._body(s.body)
        self.blocks.pop()
        self._jump(CODE["JUMP"], top, s.span)
        self._place(end)
        self._place(after)

    def _is_range_call(self, e: n.Expr) -> bool:
        if not isinstance(e, n.Call) or e.keywords:
            return False
        target = self.checked.calls.get(e)
        return target is not None and target.kind == "builtin" and target.name == "range"

    def _Try(self, s: n.Try) -> None:
        handler, end = JumpTarget(), JumpTarget()
        self._jump(CODE["SETUP_TRY"], handler, s.span)
        self.blocks.append(OpenBlock("try"))
        self._body(s.body)
        self.blocks.pop()
        self._emit(CODE["POP_TRY"], None, s.span)
        self._jump(CODE["JUMP"], end, s.span)
        self._place(handler)
        if s.name is not None:
            self._emit(CODE["STORE_LOCAL"], self._slot(s.name.id), s.except_span)
        else:
            self._emit(CODE["POP"], None, s.except_span)
        self._body(s.handler)
        self._place(end)

    def _Fail(self, s: n.Fail) -> None:
        self._expr(s.value)
        self._emit(CODE["FAIL"], None, s.span)

    def _Return(self, s: n.Return) -> None:
        if s.value is None:
            self._emit(CODE["LOAD_CONST"], self._const(None), s.span)
        else:
            self._expr(s.value)
        self._post_conditions(s.span)
        self._emit(CODE["RETURN"], None, s.span)

    def _Ambiguous(self, s: n.Ambiguous) -> None:
        types = self.checked.types
        self._block_inputs(s)
        spec = AmbiguousSpec(
            name=s.name,
            doc=s.doc or "",
            inputs=tuple((i.name, types[i.type]) for i in s.inputs),
            outputs=tuple((o.name, types[o.type]) for o in s.outputs),
            uses=tuple(u.name for u in s.uses) or tuple(self.checked.uses),
            pipeline=self.info.name,
            span=s.span,
            examples=block_examples(s),
            expects=tuple((source_text(e.condition), e.reason.value) for e in s.expects),
        )
        self.code.ambiguous.append(spec)
        self._emit(CODE["AMBIGUOUS"], len(self.code.ambiguous) - 1, s.span)
        for out in s.outputs:
            self._emit(CODE["STORE_LOCAL"], self._slot(out.name), out.span)
        self._block_expects(s)
