"""Generate bytecode (a Program of CodeObjects) from a CheckedModule."""

from __future__ import annotations

from dataclasses import dataclass

from orgtree_lang.check.branches import branch_outputs
from orgtree_lang.check.module import CheckedModule, PipelineInfo
from orgtree_lang.check.pipeline import falls_through
from orgtree_lang.compile.code import AmbiguousSpec, CallSite, CodeObject, Param, Program, RecordSpec
from orgtree_lang.compile.contracts import ContractEmitter, block_examples, source_text
from orgtree_lang.compile.fusion import fuse, keeps_second_span, thread_jumps
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


def constant_value(expr: n.Expr):
    """The value of a constant expression (the checker has verified it is one)."""
    if isinstance(expr, n.Const):
        return expr.value
    if isinstance(expr, n.UnaryOp):
        value = constant_value(expr.operand)
        return -value if expr.op == "-" else value
    if isinstance(expr, n.ListExpr):
        return [constant_value(i) for i in expr.items]
    if isinstance(expr, n.DictExpr):
        return {constant_value(k): constant_value(v) for k, v in zip(expr.keys, expr.values)}
    raise ValueError("not a constant")


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


class _Label:
    """A jump target whose address is fixed once it is placed."""

    __slots__ = ("pc",)

    def __init__(self) -> None:
        self.pc: int | None = None


@dataclass
class _Block:
    """An enclosing construct that a jump out of it must clean up after."""

    kind: str  # "for" (two loop values on the stack), "while", "try" (a handler to pop), "handler" (on message)
    break_label: _Label | None = None
    continue_label: _Label | None = None


class _PipelineCompiler(ContractEmitter):
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
        self.blocks: list[_Block] = []
        self.label_targets: dict[str, _Label] = {}
        self.label_depth: dict[str, int] = {}
        self.fixups: list[tuple[int, _Label]] = []
        # PARALLEL instructions: their branches' labels, and the slots each branch copies back when it ends.
        self.branch_fixups: list[tuple[int, list[_Label], list[list[int]]]] = []
        self.label_pcs: set[int] = set()
        self.last_span: Span | None = None
        self.renames: dict[str, str] = {}  # names an ambiguous block's `expect` reads from hidden locals

    # -- emission helpers

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

    def _emit(self, opcode: int, arg, span: Span) -> int:
        code = self.code
        pc = len(code.ops)
        code.ops.append(opcode)
        code.args.append(arg)
        self._set_span(pc, span)
        # Superinstructions (compile/fusion.py), unless a jump lands on the second part. A fused instruction
        # may fuse again with the one before it: LOAD_LOCAL, LOAD_CONST, BINARY, STORE_LOCAL become one.
        while pc > 0 and pc not in self.label_pcs:
            fused = fuse(code.ops[pc - 1], code.args[pc - 1], code.ops[pc], code.args[pc])
            if fused is None:
                break
            second_span = self._span_from(pc)
            second_op = code.ops[pc]
            del code.ops[pc], code.args[pc]
            table = code.line_table
            if table[-1][0] == pc:  # the second part's row goes with it
                table.pop()
                self.last_span = Span(second_span.file, *table[-1][1:]) if table else None
            pc -= 1
            code.ops[pc], code.args[pc] = fused
            if keeps_second_span(second_op):
                self._set_span(pc, second_span)
        return pc

    def _span_from(self, pc: int) -> Span:
        """The span of instruction `pc` while the line table is being written."""
        for row in reversed(self.code.line_table):
            if row[0] <= pc:
                return Span(self.code.file, *row[1:])
        raise AssertionError(f"no line table row covers pc {pc}")

    def _set_span(self, pc: int, span: Span) -> None:
        table = self.code.line_table
        if table and table[-1][0] == pc:
            table.pop()
            self.last_span = Span(span.file, *table[-1][1:]) if table else None
        if span != self.last_span:
            table.append((pc, span.line, span.col, span.end_line, span.end_col))
            self.last_span = span

    def _jump(self, opcode: int, label: _Label, span: Span) -> None:
        pc = self._emit(opcode, None, span)
        self.fixups.append((pc, label))  # fused jumps hold their target second: see compile()

    def _label(self) -> _Label:
        return _Label()

    def _place(self, label: _Label, pc: int | None = None) -> None:
        label.pc = len(self.code.ops) if pc is None else pc
        self.label_pcs.add(label.pc)

    def _const(self, value) -> int:
        key = (type(value).__name__, repr(value))
        if key not in self.const_index:
            self.const_index[key] = len(self.code.consts)
            self.code.consts.append(value)
        return self.const_index[key]

    def _slot(self, name: str) -> int:
        if name not in self.slots:
            self.slots[name] = len(self.code.varnames)
            self.code.varnames.append(name)
        return self.slots[name]

    def _collect_labels(self, body: tuple[n.Stmt, ...], depth: int) -> None:
        """Record how many enclosing blocks each label sits in, so a goto knows what to clean up."""
        for stmt in body:
            if isinstance(stmt, n.Label):
                self.label_targets[stmt.name] = _Label()
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

    def _unwind(self, blocks: list[_Block], span: Span) -> None:
        """Emit the cleanup for leaving `blocks` (innermost last) by a jump."""
        for block in reversed(blocks):
            if block.kind == "for":
                self._emit(CODE["POP"], None, span)
                self._emit(CODE["POP"], None, span)
            elif block.kind == "try":
                self._emit(CODE["POP_TRY"], None, span)
            elif block.kind == "handler":
                self._emit(CODE["LEAVE_HANDLER"], None, span)

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
        end = _Label()
        for test, body in zip(s.tests, s.bodies):
            next_branch = _Label()
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
        top = _Label()
        self._place(top, len(self.code.ops) - 1)
        end = _Label()
        self._expr(s.test)
        self._jump(CODE["JUMP_IF_FALSE"], end, s.test.span)
        self.blocks.append(_Block("while", end, top))
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
        top, end, after = _Label(), _Label(), _Label()
        self._place(top)
        self._jump(CODE["FOR_ITER"], end, s.span)
        if len(s.targets) == 1:
            self._emit(CODE["STORE_LOCAL"], self._slot(s.targets[0].id), s.targets[0].span)
        else:
            self._emit(CODE["UNPACK"], len(s.targets), s.span)
            for target in s.targets:
                self._emit(CODE["STORE_LOCAL"], self._slot(target.id), target.span)
        # `break` pops the loop state itself, then jumps past the exhausted-loop exit.
        self.blocks.append(_Block("for", after, top))
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
        handler, end = _Label(), _Label()
        self._jump(CODE["SETUP_TRY"], handler, s.span)
        self.blocks.append(_Block("try"))
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

    def _Parallel(self, s: n.Parallel) -> None:
        # limit; PARALLEL [[branch start, slots it copies back], ...]; JUMP end; then per branch: its
        # statement, END_BRANCH. A branch runs on a copy of the frame's locals (org/parallel.py).
        if s.limit is not None:
            self._expr(s.limit)
        else:
            self._emit(CODE["LOAD_CONST"], self._const(None), s.span)
        labels = [_Label() for _ in s.branches]
        outputs = [[self._slot(name) for name in names] for names in branch_outputs(s)]
        self.branch_fixups.append((self._emit(CODE["PARALLEL"], None, s.span), labels, outputs))
        end = _Label()
        self._jump(CODE["JUMP"], end, s.span)
        # Gotos, breaks and continues never leave a branch (the checker), so its statement sees no block.
        enclosing, self.blocks = self.blocks, []
        for label, branch in zip(labels, s.branches):
            self._place(label)
            self._stmt(branch)
            self._emit(CODE["END_BRANCH"], 0, branch.span)
        self.blocks = enclosing
        self._place(end)

    def _parallel_for(self, s: n.For) -> None:
        # items; limit; PARALLEL_FOR body -> results; STORE_LOCAL collect (or POP); JUMP end; then the body,
        # which starts with its item on the stack and ends with END_BRANCH (holding the value to collect).
        self._expr(s.iterable)
        self._emit(CODE["GET_ITER"], None, s.iterable.span)
        self._emit(CODE["POP"], None, s.iterable.span)  # the loop position: iterations need only the items
        if s.limit is not None:
            self._expr(s.limit)
        else:
            self._emit(CODE["LOAD_CONST"], self._const(None), s.span)
        body, end = _Label(), _Label()
        self._jump(CODE["PARALLEL_FOR"], body, s.span)
        if s.collect is not None:
            self._emit(CODE["STORE_LOCAL"], self._slot(s.collect.id), s.collect.span)
        else:
            self._emit(CODE["POP"], None, s.span)
        self._jump(CODE["JUMP"], end, s.span)
        enclosing, self.blocks = self.blocks, []
        self._place(body)
        if len(s.targets) == 1:
            self._emit(CODE["STORE_LOCAL"], self._slot(s.targets[0].id), s.targets[0].span)
        else:
            self._emit(CODE["UNPACK"], len(s.targets), s.span)
            for target in s.targets:
                self._emit(CODE["STORE_LOCAL"], self._slot(target.id), target.span)
        statements = s.body[:-1] if s.collect is not None else s.body
        self._body(statements)
        if s.collect is not None:
            last = s.body[-1]
            self._emit(CODE["STMT"], None, last.span)
            self._expr(last.expr)
        self._emit(CODE["END_BRANCH"], 1 if s.collect is not None else 0, s.span)
        self.blocks = enclosing
        self._place(end)

    def _OnMessage(self, s: n.OnMessage) -> None:
        """Install the handler, skip its body; the body ends by going back to the interrupted statement."""
        handler, end = _Label(), _Label()
        self.fixups.append((self._emit(CODE["ON_MESSAGE"], [self._slot(s.name), None], s.span), handler))
        self._jump(CODE["JUMP"], end, s.span)
        self._place(handler)
        self.blocks.append(_Block("handler"))
        self._body(s.body)
        self.blocks.pop()
        self._emit(CODE["END_HANDLER"], None, s.span)
        self._place(end)

    def _Send(self, s: n.Send) -> None:
        to_parent = isinstance(s.target, n.Name) and s.target.id == "parent" and "parent" not in self.slots
        if not to_parent:
            self._expr(s.target)
        self._expr(s.body)
        if s.topic is not None:
            self._expr(s.topic)
        count = (1 if to_parent else 2) + (s.topic is not None)
        self._emit(CODE["SEND_PARENT" if to_parent else "SEND"], count, s.span)

    def _Cancel(self, s: n.Cancel) -> None:
        self._expr(s.value)
        self._emit(CODE["CANCEL"], None, s.span)

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

    # -- expressions

    def _expr(self, e: n.Expr) -> None:
        getattr(self, "_" + type(e).__name__)(e)

    def _Const(self, e: n.Const) -> None:
        self._emit(CODE["LOAD_CONST"], self._const(e.value), e.span)

    def _Name(self, e: n.Name) -> None:
        self._emit(CODE["LOAD_LOCAL"], self._slot(self.renames.get(e.id, e.id)), e.span)

    def _FString(self, e: n.FString) -> None:
        if not e.parts:
            self._emit(CODE["LOAD_CONST"], self._const(""), e.span)
            return
        for part in e.parts:
            if isinstance(part, str):
                self._emit(CODE["LOAD_CONST"], self._const(part), e.span)
            else:
                self._expr(part.value)
                self._emit(CODE["FORMAT"], self._const(part.spec), part.span)
        if len(e.parts) > 1:
            self._emit(CODE["BUILD_STRING"], len(e.parts), e.span)

    def _ListExpr(self, e: n.ListExpr) -> None:
        for item in e.items:
            self._expr(item)
        self._emit(CODE["BUILD_LIST"], len(e.items), e.span)

    def _DictExpr(self, e: n.DictExpr) -> None:
        for key, value in zip(e.keys, e.values):
            self._expr(key)
            self._expr(value)
        self._emit(CODE["BUILD_DICT"], len(e.keys), e.span)

    def _BinOp(self, e: n.BinOp) -> None:
        self._expr(e.left)
        self._expr(e.right)
        self._emit(CODE["BINARY"], e.op, e.span)

    def _UnaryOp(self, e: n.UnaryOp) -> None:
        self._expr(e.operand)
        self._emit(CODE["UNARY"], e.op, e.span)

    def _BoolOp(self, e: n.BoolOp) -> None:
        end = _Label()
        self._expr(e.left)
        self._jump(CODE["JUMP_IF_FALSE_OR_POP"] if e.op == "and" else CODE["JUMP_IF_TRUE_OR_POP"], end, e.span)
        self._expr(e.right)
        self._place(end)

    def _Compare(self, e: n.Compare) -> None:
        self._expr(e.left)
        if len(e.ops) == 1:
            self._expr(e.comparators[0])
            self._emit(CODE["COMPARE"], e.ops[0], e.span)
            return
        # a < b < c: keep b for the next comparison; stop at the first false result.
        cleanup, end = _Label(), _Label()
        last = len(e.ops) - 1
        for i, (operator, comparator) in enumerate(zip(e.ops, e.comparators)):
            self._expr(comparator)
            if i < last:
                self._emit(CODE["DUP"], None, comparator.span)
                self._emit(CODE["ROT3"], None, comparator.span)
                self._emit(CODE["COMPARE"], operator, e.span)
                self._jump(CODE["JUMP_IF_FALSE_OR_POP"], cleanup, e.span)
            else:
                self._emit(CODE["COMPARE"], operator, e.span)
        self._jump(CODE["JUMP"], end, e.span)
        self._place(cleanup)
        self._emit(CODE["ROT2"], None, e.span)
        self._emit(CODE["POP"], None, e.span)
        self._place(end)

    def _TypeTest(self, e: n.TypeTest) -> None:
        self._expr(e.value)
        self._emit(CODE["LOAD_CONST"], self._const(_type_tag(self.checked.types[e.type])), e.type.span)
        self._emit(CODE["COMPARE"], "is not" if e.negated else "is", e.span)

    def _Call(self, e: n.Call) -> None:
        target = self.checked.calls[e]
        for arg in e.args:
            self._expr(arg)
        for kw in e.keywords:
            self._expr(kw.value)
        site = CallSite(target.kind, target.name, len(e.args), tuple(k.name for k in e.keywords))
        self.code.calls.append(site)
        opcode = {"builtin": CODE["CALL_BUILTIN"], "skill": CODE["CALL_SKILL"], "pipeline": CODE["CALL_PIPELINE"],
                  "record": CODE["MAKE_RECORD"], "human": CODE["ASK_HUMAN"], "receive": CODE["RECEIVE"]}[target.kind]
        self._emit(opcode, len(self.code.calls) - 1, e.span)

    def _Spawn(self, e: n.Spawn) -> None:
        call = e.call
        for arg in call.args:
            self._expr(arg)
        for kw in call.keywords:
            self._expr(kw.value)
        self.code.calls.append(CallSite("pipeline", call.func.id, len(call.args), tuple(k.name for k in call.keywords)))
        self._emit(CODE["SPAWN"], len(self.code.calls) - 1, e.span)

    def _Await(self, e: n.Await) -> None:
        self._expr(e.value)
        self._emit(CODE["AWAIT"], None, e.span)

    def _Index(self, e: n.Index) -> None:
        self._expr(e.value)
        self._expr(e.index)
        self._emit(CODE["INDEX"], None, e.span)

    def _Slice(self, e: n.Slice) -> None:
        self._expr(e.value)
        for part in (e.lower, e.upper, e.step):
            if part is None:
                self._emit(CODE["LOAD_CONST"], self._const(None), e.span)
            else:
                self._expr(part)
        self._emit(CODE["SLICE"], None, e.span)

    def _Attribute(self, e: n.Attribute) -> None:
        self._expr(e.value)
        self._emit(CODE["GET_ATTR"], e.attr, e.attr_span)


def _type_tag(ptype) -> str:
    """The constant a type test compares a value's kind with (see runtime.values.is_kind)."""
    if ptype.kind == "optional":
        return _type_tag(ptype.arg) + "?"
    return ptype.name if ptype.kind == "record" else ptype.kind
