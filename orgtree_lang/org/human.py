"""The human node: `ask("human", q)` and `approve(q)` take a journaled answer, or make the run wait for one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.syntax import types as t
from orgtree_lang.vm.questions import HumanQuestion, answer_or_wait
from orgtree_lang.vm.state import Frame
from orgtree_lang.vm import events

if TYPE_CHECKING:
    from orgtree_lang.org.scheduler import Scheduler


class HumanNode:
    """ASK_HUMAN: the questions a run's nodes put to a person (notes, which need no answer, are org/routing.py's)."""

    OPCODES = {"ASK_HUMAN": "ask"}

    def __init__(self, org: Scheduler) -> None:
        self.org = org

    def ask(self, frame: Frame, stack: list, arg: Any) -> None:
        """ASK_HUMAN: push the journaled answer to the question on the stack, or leave the run waiting at this
        instruction."""
        machine = self.org.machine
        site = frame.code.calls[arg]
        count = site.nargs
        text = stack[-1]
        if not isinstance(text, str):
            raise PipeRuntimeError(f"the question of {site.name}(...) must be a str, got {t.type_of_value(text)}",
                                   kind="type", hint="build it with an f-string: f\"Deploy {version}?\"")
        span = frame.code.span_at(frame.pc - 1)
        state = machine.state
        node = machine.effect_node(frame.node)
        # A question the saved state already waits on keeps its step number: the run was saved at this very
        # instruction, which now runs again. Otherwise the question takes the run tree's next step number now.
        pending = next((q for q in state.waiting if q["node"] == node and q["line"] == span.line
                        and q["text"] == text), None)
        if pending is not None:
            question = HumanQuestion.from_json(pending)
        else:
            question = HumanQuestion(machine.next_effect_seq(), site.name, text, node, span.file, span.line,
                                     state.steps)
        exact = machine.place is None
        if exact:
            frame.pc -= 1  # left at the asking instruction, with the question on the stack
            if pending is None:
                state.waiting.append(question.to_json())
        answer = answer_or_wait(machine.services.effects, question, span, exact)
        if exact:
            frame.pc += 1
            state.waiting = [q for q in state.waiting if q["seq"] != question.seq]
        del stack[len(stack) - count:]
        if events.HumanAnswered in machine.observer.hears:
            machine.observer.on(events.HumanAnswered(state=state, question=question, answer=answer))
        stack.append(answer)
