"""A question put to a person, as the machine asks it: its journal step, its journaled answer, or the wait for one.

The human node itself (`ask("human", q)`, `approve(q)`, notes) is the organization's (org/human.py); an ambiguous
block's resolver asks through its vm.blocks.BlockContext. Both ask the same way, through the durable run's Effects."""

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
