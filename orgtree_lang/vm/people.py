"""The human node in the VM: `ask("human", q)` and `approve(q)` take a journaled answer, or make the run wait for one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.people import APPROVAL_WORDS, HUMAN
from orgtree_lang.runtime.values import display
from orgtree_lang.syntax import types as t
from orgtree_lang.vm.effects import EffectStep


@dataclass(frozen=True)
class HumanQuestion:
    """A question put to the human node: the journal step that takes its answer, who asks, where and what."""

    seq: int
    kind: str  # ask | approve
    text: str
    node: str  # the asking node's journal path (main/deploy#1)
    file: str
    line: int
    statement: int

    @property
    def name(self) -> str:
        """The step's name in the journal (`human.ask`, `human.approve`)."""
        return f"{HUMAN}.{self.kind}"

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "kind": self.kind, "text": self.text, "node": self.node, "file": self.file,
                "line": self.line, "statement": self.statement}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> HumanQuestion:
        return cls(data["seq"], data["kind"], data["text"], data["node"], data["file"], data["line"],
                   data.get("statement", 0))


class WaitingForHuman(BaseException):
    """Control flow, not an error: a question has no answer yet, so the run stops and waits for one.

    A BaseException so that no `except Exception` on the way (a skill wrapper, the decomposer, the effects
    log recording a failed step) mistakes it for a failure. `exact` is true when the top-level machine's state
    was left at the asking instruction (it can be checkpointed there); otherwise the run continues on resume
    from its last checkpoint, taking every journaled step again from the journal."""

    def __init__(self, question: HumanQuestion, exact: bool = False) -> None:
        super().__init__(question.text)
        self.question = question
        self.exact = exact


def question_step(question: HumanQuestion, span) -> EffectStep:
    """The journal step that takes the answer to `question`: its input is the question's text."""
    return EffectStep(question.seq, HUMAN, question.name, question.node, span, [question.text], {},
                      question.statement)


def answer_or_wait(effects, question: HumanQuestion, span, exact: bool = False) -> Any:
    """The journaled answer to `question`, checked against its kind; else raise WaitingForHuman."""
    if effects is None:
        raise PipeRuntimeError(
            f"{question.kind}(...) asks a person, which needs a journaled run: this run has no journal, so it "
            "cannot wait for the answer", kind="human", span=span, catchable=False,
            hint="run it without --no-journal (with the Python API: RunOptions(durable=True))")
    found, answer = effects.answer(question_step(question, span))
    if not found:
        raise WaitingForHuman(question, exact)
    if question.kind == "approve" and not isinstance(answer, bool):
        raise PipeRuntimeError(f"the answer to approve(...) must be {APPROVAL_WORDS}, got {display(answer, True)}",
                               kind="human", span=span)
    if question.kind == "ask" and not isinstance(answer, str):
        raise PipeRuntimeError(f"the answer to ask(...) must be a str, got {t.type_of_value(answer)}",
                               kind="human", span=span)
    return answer


def ask_human(m, frame, stack: list, arg: int) -> None:
    """ASK_HUMAN: push the journaled answer to the question on the stack, or leave the run waiting at this instruction."""
    site = frame.code.calls[arg]
    count = site.nargs
    text = stack[-1]
    if not isinstance(text, str):
        raise PipeRuntimeError(f"the question of {site.name}(...) must be a str, got {t.type_of_value(text)}",
                               kind="type", hint="build it with an f-string: f\"Deploy {version}?\"")
    span = frame.code.span_at(frame.pc - 1)
    state = m.state
    node = m.effect_node(frame.node)
    # A question the saved state already waits on keeps its step number: the run was saved at this very
    # instruction, which now runs again. Otherwise the question takes the run tree's next step number now.
    pending = next((q for q in state.waiting if q["node"] == node and q["line"] == span.line and q["text"] == text),
                   None)
    if pending is not None:
        question = HumanQuestion.from_json(pending)
    else:
        question = HumanQuestion(m.next_effect_seq(), site.name, text, node, span.file, span.line, state.steps)
    exact = m.place is None
    if exact:
        frame.pc -= 1  # left at the asking instruction, with the question on the stack
        if pending is None:
            state.waiting.append(question.to_json())
    answer = answer_or_wait(m.services.effects, question, span, exact)
    if exact:
        frame.pc += 1
        state.waiting = [q for q in state.waiting if q["seq"] != question.seq]
    del stack[len(stack) - count:]
    m.observer.human_answered(state, question, answer)
    stack.append(answer)
