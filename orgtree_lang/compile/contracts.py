"""Bytecode for contracts: `assume` and `expect` checks, pipeline post-conditions, examples run as tests."""

from __future__ import annotations

from orgtree_lang.check.contracts import RESULT, value_names
from orgtree_lang.compile.code import BlockExample, CheckSpec
from orgtree_lang.compile.emitter import constant_value
from orgtree_lang.compile.opcodes import CODE
from orgtree_lang.syntax import contracts as c
from orgtree_lang.syntax import nodes as n
from orgtree_lang.syntax.spans import Span
from orgtree_lang.syntax.unparse import example_text, expression_text

# Hidden locals of an example's test: no .pipe name can contain a space.
_GOT, _EXPECTED = "example got", "example expected"


def source_text(expr: n.Node) -> str:
    """An expression (or example) as canonical .pipe source, for messages and the decomposer."""
    return example_text(expr) if isinstance(expr, c.Example) else expression_text(expr)


def block_examples(block: n.Ambiguous) -> tuple[BlockExample, ...]:
    """An ambiguous block's examples as values (the checker has made sure they are constants)."""
    found = []
    for example in block.examples:
        inputs = {}
        for item, value in zip(block.inputs, example.args):
            inputs[item.name] = constant_value(value)
        inputs.update({k.name: constant_value(k.value) for k in example.keywords})
        if example.fails is not None:
            found.append(BlockExample(inputs, {}, example.span.line, constant_value(example.fails)))
            continue
        if example.result is not None:
            outputs = {block.outputs[0].name: constant_value(example.result)}
        else:
            outputs = {k.name: constant_value(k.value) for k in example.outputs}
        found.append(BlockExample(inputs, outputs, example.span.line))
    return tuple(found)


class ContractEmitter:
    """The code generator's contract statements; mixed into its pipeline compiler."""

    renames: dict[str, str]

    def _check(self, kind: str, text: str, reason: str, names: list[str], span: Span,
               shown: tuple[tuple[str, str], ...] = ()) -> None:
        """Emit CHECK; a failure shows the variables `names` and the hidden locals `shown` (slot, label)."""
        slots = tuple(self._slot(slot) for slot, _ in shown)
        slots += tuple(self._slot(self.renames.get(name, name)) for name in names)
        labels = tuple(label for _, label in shown) + tuple(names)
        self.code.checks.append(CheckSpec(kind, text, reason, slots, labels))
        self._emit(CODE["CHECK"], len(self.code.checks) - 1, span)

    def _condition(self, stmt, kind: str) -> None:
        condition = stmt.condition
        shown: tuple[tuple[str, str], ...] = ()
        if isinstance(condition, n.Compare) and len(condition.ops) == 1:
            # `f(5) == 7` failing says what f(5) was: keep each computed operand in a hidden local.
            operands = [condition.left, condition.comparators[0]]
            computed = [not isinstance(o, (n.Name, n.Const)) for o in operands]
            for index, operand in enumerate(operands):
                self._expr(operand)
                if computed[index]:
                    hidden = f"check {len(self.code.checks)} operand {index}"
                    self._emit(CODE["STORE_LOCAL"], self._slot(hidden), operand.span)
                    self._emit(CODE["LOAD_LOCAL"], self._slot(hidden), operand.span)
                    shown += ((hidden, source_text(operand)),)
            self._emit(CODE["COMPARE"], condition.ops[0], condition.span)
        else:
            self._expr(condition)
        self._check(kind, source_text(condition), stmt.reason.value, value_names(condition), stmt.span, shown)

    def _Assume(self, s: c.Assume) -> None:
        self._condition(s, "assume")

    def _Expect(self, s: c.Expect) -> None:
        self._condition(s, "expect")

    def _ExampleRun(self, s: c.ExampleRun) -> None:
        if s.example.fails is not None:
            self._example_fails(s)
            return
        self._expr(s.call)
        self._emit(CODE["STORE_LOCAL"], self._slot(_GOT), s.span)
        self._expr(s.expected)
        self._emit(CODE["STORE_LOCAL"], self._slot(_EXPECTED), s.expected.span)
        self._emit(CODE["LOAD_LOCAL2"], [self._slot(_GOT), self._slot(_EXPECTED)], s.span)
        self._emit(CODE["COMPARE"], "==", s.span)
        text = source_text(s.example)
        self._check("example", text.split(" -> ")[0], f"example on line {s.span.line}", [_GOT, _EXPECTED], s.span)

    def _example_fails(self, s: c.ExampleRun) -> None:
        """`f(x) -> fails "text"`: the call must raise a catchable error whose message contains the text."""
        handler, end = self._label(), self._label()
        text = source_text(s.example).split(" -> ")[0]
        reason = f"example on line {s.span.line}"
        self._expr(s.expected)
        self._emit(CODE["STORE_LOCAL"], self._slot(_EXPECTED), s.expected.span)
        self._jump(CODE["SETUP_TRY"], handler, s.span)
        self._expr(s.call)
        self._emit(CODE["STORE_LOCAL"], self._slot(_GOT), s.span)
        self._emit(CODE["POP_TRY"], None, s.span)
        self._emit(CODE["LOAD_CONST"], self._const(False), s.span)
        self._check("fails", text, reason, [], s.span, ((_GOT, "returned"), (_EXPECTED, "expected")))
        self._jump(CODE["JUMP"], end, s.span)
        self._place(handler)
        self._emit(CODE["STORE_LOCAL"], self._slot(_GOT), s.span)
        self._emit(CODE["LOAD_LOCAL"], self._slot(_EXPECTED), s.expected.span)
        self._emit(CODE["LOAD_LOCAL"], self._slot(_GOT), s.span)
        self._emit(CODE["GET_ATTR"], "message", s.span)
        self._emit(CODE["COMPARE"], "in", s.span)
        self._check("fails", text, reason, [], s.span, ((_GOT, "error"), (_EXPECTED, "expected")))
        self._place(end)

    def _post_conditions(self, span: Span) -> None:
        """Before a return with the value on the stack: check the pipeline's `expect` lines on it."""
        expects = self.info.decl.expects
        if not expects or self.info.kind == "test":
            return
        self._emit(CODE["STORE_LOCAL"], self._slot(RESULT), span)
        for expect in expects:
            self._condition(expect, "expect")
        self._emit(CODE["LOAD_LOCAL"], self._slot(RESULT), span)

    def _block_inputs(self, s: n.Ambiguous) -> None:
        """Push a block's inputs; with `expect` lines, keep those given by a default where the checks can read them."""
        for item in s.inputs:
            if item.default is None:
                self._emit(CODE["LOAD_LOCAL"], self._slot(item.name), item.span)
                continue
            self._expr(item.default)
            if s.expects:
                hidden = f"{s.name} {item.name}"
                self._emit(CODE["STORE_LOCAL"], self._slot(hidden), item.span)
                self._emit(CODE["LOAD_LOCAL"], self._slot(hidden), item.span)

    def _block_expects(self, s: n.Ambiguous) -> None:
        """After a block's outputs are bound: its post-conditions, reading the inputs it was given."""
        saved = self.renames
        self.renames = {**saved, **{i.name: f"{s.name} {i.name}" for i in s.inputs if i.default is not None}}
        try:
            for expect in s.expects:
                self._emit(CODE["STMT"], None, expect.span)
                self._condition(expect, "expect")
        finally:
            self.renames = saved
