"""The code generator's concurrent statements: `parallel:` blocks, `parallel for`, `on message` handlers, `send` and
`cancel`, each in, its instructions out (the org runtime runs them: org/parallel.py, org/mailboxes.py)."""

from __future__ import annotations

from orgtree_lang.check.branches import branch_outputs
from orgtree_lang.compile.emitter import Emitter, JumpTarget, OpenBlock
from orgtree_lang.compile.opcodes import CODE
from orgtree_lang.syntax import nodes as n


class ConcurrencyEmitter(Emitter):
    """Mixed into the pipeline compiler: branches run in frames of their own and start inside no block."""

    blocks: list[OpenBlock]
    branch_fixups: list[tuple[int, list[JumpTarget], list[list[int]]]]

    def _Parallel(self, s: n.Parallel) -> None:
        # limit; PARALLEL [[branch start, slots it copies back], ...]; JUMP end; then per branch: its
        # statement, END_BRANCH. A branch runs on a copy of the frame's locals (org/parallel.py).
        if s.limit is not None:
            self._expr(s.limit)
        else:
            self._emit(CODE["LOAD_CONST"], self._const(None), s.span)
        labels = [JumpTarget() for _ in s.branches]
        outputs = [[self._slot(name) for name in names] for names in branch_outputs(s)]
        self.branch_fixups.append((self._emit(CODE["PARALLEL"], None, s.span), labels, outputs))
        end = JumpTarget()
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
        body, end = JumpTarget(), JumpTarget()
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
        handler, end = JumpTarget(), JumpTarget()
        self.fixups.append((self._emit(CODE["ON_MESSAGE"], [self._slot(s.name), None], s.span), handler))
        self._jump(CODE["JUMP"], end, s.span)
        self._place(handler)
        self.blocks.append(OpenBlock("handler"))
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
