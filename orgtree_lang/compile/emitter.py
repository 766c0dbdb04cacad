"""The code generator's shared parts: jump targets, the blocks a jump must clean up after, constant values, and the
emission helpers (line table, superinstructions, constants, local slots) its statement and expression parts use."""

from __future__ import annotations

from dataclasses import dataclass

from orgtree_lang.compile.code import CodeObject
from orgtree_lang.compile.fusion import fuse, keeps_second_span
from orgtree_lang.compile.opcodes import CODE
from orgtree_lang.syntax import nodes as n
from orgtree_lang.syntax.spans import Span


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


class JumpTarget:
    """A jump target whose address is fixed once it is placed."""

    __slots__ = ("pc",)

    def __init__(self) -> None:
        self.pc: int | None = None


@dataclass
class OpenBlock:
    """An enclosing construct that a jump out of it must clean up after."""

    kind: str  # "for" (two loop values on the stack), "while", "try" (a handler to pop), "handler" (on message)
    break_label: JumpTarget | None = None
    continue_label: JumpTarget | None = None


class Emitter:
    """Appends instructions to one CodeObject; the pipeline compiler (compile/codegen.py) sets these fields."""

    code: CodeObject
    slots: dict[str, int]
    const_index: dict[tuple, int]
    fixups: list[tuple[int, JumpTarget]]
    label_pcs: set[int]
    last_span: Span | None

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

    def _jump(self, opcode: int, label: JumpTarget, span: Span) -> None:
        pc = self._emit(opcode, None, span)
        self.fixups.append((pc, label))  # fused jumps hold their target second: see compile()

    def _label(self) -> JumpTarget:
        return JumpTarget()

    def _place(self, label: JumpTarget, pc: int | None = None) -> None:
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

    def _unwind(self, blocks: list[OpenBlock], span: Span) -> None:
        """Emit the cleanup for leaving `blocks` (innermost last) by a jump."""
        for block in reversed(blocks):
            if block.kind == "for":
                self._emit(CODE["POP"], None, span)
                self._emit(CODE["POP"], None, span)
            elif block.kind == "try":
                self._emit(CODE["POP_TRY"], None, span)
            elif block.kind == "handler":
                self._emit(CODE["LEAVE_HANDLER"], None, span)
