"""The code generator's expressions: each expression node in, the instructions that leave its value on the stack out."""

from __future__ import annotations

from orgtree_lang.check.module import CheckedModule
from orgtree_lang.compile.code import CallSite
from orgtree_lang.compile.emitter import Emitter, JumpTarget
from orgtree_lang.compile.opcodes import CODE
from orgtree_lang.syntax import nodes as n


class ExpressionEmitter(Emitter):
    """Mixed into the pipeline compiler: one method per expression node, named after it."""

    checked: CheckedModule
    renames: dict[str, str]


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
        end = JumpTarget()
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
        cleanup, end = JumpTarget(), JumpTarget()
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
