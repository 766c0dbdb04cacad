"""What the pool's reviewers answer: a bug decision, a promotion test plan, and a promotion judgement (pydantic)."""

from __future__ import annotations

import json
from typing import Any, Callable, Literal

from pydantic import BaseModel, Field, model_validator


class BugDecision(BaseModel):
    """A bug reviewer's decision about one report."""

    decision: Literal["fix", "modify", "remove"] = Field(
        description="fix: replace the module with a corrected one; modify: clarify when and how to use the skill; "
                    "remove: take it out of the pool (only with failed calls from its history as evidence)")
    reasoning: str = Field(min_length=1, description="why, referring to the report and to the history")
    evidence: list[str] = Field(default_factory=list,
                                description="ids of calls in the history that show the problem (e.g. \"17\")")
    usage_note: str = Field(default="", description="for modify: the note added to the skill's description")
    module: str = Field(default="", description="for fix: the whole corrected .pipe module")

    @model_validator(mode="after")
    def _complete(self) -> BugDecision:
        if self.decision == "modify" and not self.usage_note.strip():
            raise ValueError("a `modify` decision needs `usage_note`, the clarification to add to the skill")
        if self.decision == "fix" and not self.module.strip():
            raise ValueError("a `fix` decision needs `module`, the whole corrected .pipe module")
        self.evidence = [e.strip().lstrip("#") for e in self.evidence if e.strip()]
        return self


class TrialCase(BaseModel):
    """One input a promotion reviewer wants the module run on, and what a correct output looks like."""

    inputs: dict[str, Any] = Field(description="a value for every parameter of `main`, by name")
    expect: str = Field(min_length=1, description="what a correct output for these inputs is, per the spec")


class TrialPlan(BaseModel):
    """The promotion reviewer's test inputs."""

    cases: list[TrialCase] = Field(min_length=1, max_length=10, description="1 to 10 test cases")


class CaseVerdict(BaseModel):
    case: int = Field(ge=1, description="the case's number, as in the outputs shown (the plan's first case is 1)")
    ok: bool = Field(description="true when the output meets the spec for this input")
    reason: str = Field(default="", description="why not, when ok is false")


class Judgement(BaseModel):
    """The promotion reviewer's verdict on the outputs the module produced."""

    accepted: bool
    reasons: str = Field(min_length=1, description="why it is accepted or rejected")
    cases: list[CaseVerdict] = Field(description="exactly one verdict for every case of the plan")

    def unjudged(self, count: int) -> str | None:
        """What keeps this from judging a plan of `count` cases (a case with no verdict, a verdict for a case
        the plan lacks, two verdicts for one case), or None when every case has exactly one verdict."""
        numbers = [verdict.case for verdict in self.cases]
        missing = [n for n in range(1, count + 1) if n not in numbers]
        unknown = sorted({n for n in numbers if n > count})
        twice = sorted({n for n in numbers if numbers.count(n) > 1 and n <= count})
        problems = ([f"no verdict for case(s) {', '.join(map(str, missing))}"] if missing else []) + \
                   ([f"a verdict for case(s) {', '.join(map(str, unknown))}"] if unknown else []) + \
                   [f"case {n} has {numbers.count(n)} verdicts" for n in twice]
        if not problems:
            return None
        return f"{'; '.join(problems)}, but the plan has cases 1 to {count}: give one verdict for each"


def schema_text(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema(), indent=1, sort_keys=True)


def ask_structured(model, messages: list, schema: type[BaseModel], conversation: str, what: str,
                   check: Callable[[Any], str | None] = lambda _answer: None):
    """The model's answer validated against `schema` and then by `check` (what is wrong with a well-formed
    answer in its context, or None); an unusable answer gets one retry in the same conversation, told what was
    wrong, then a PoolError naming `what`. Other model failures (ModelError) pass through."""
    from orgtree_lang.models.base import Message

    first = _problem(model, messages, schema, conversation, check)
    if isinstance(first, BaseModel):
        return first
    retry = messages + [Message("user", f"Your answer could not be used: {first}\nAnswer again with only one "
                                        "JSON object matching the schema in your instructions.")]
    then = _problem(model, retry, schema, conversation, check)
    if isinstance(then, BaseModel):
        return then
    from orgtree_lang.pool.store import PoolError

    raise PoolError(f"{what}: {model.name} gave an unusable answer twice (first: {first}; then: {then})",
                    hint="check the reviewer model; nothing was changed")


def _problem(model, messages: list, schema: type[BaseModel], conversation: str,
             check: Callable[[Any], str | None]) -> BaseModel | str:
    """The parsed answer, or what makes it unusable (malformed JSON, or `check`'s objection)."""
    from orgtree_lang.models.base import ModelError

    try:
        answer = model.complete(messages, schema=schema, conversation_id=conversation).parsed
    except ModelError as exc:
        if exc.kind not in ("invalid_output", "empty"):
            raise
        return exc.message
    return check(answer) or answer
