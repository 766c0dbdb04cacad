"""What the pool's reviewers answer: a bug decision, a promotion test plan, and a promotion judgement (pydantic)."""

from __future__ import annotations

import json
from typing import Any, Literal

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
    index: int = Field(ge=0, description="the case's position in the plan, from 0")
    ok: bool = Field(description="true when the output meets the spec for this input")
    reason: str = Field(default="", description="why not, when ok is false")


class Judgement(BaseModel):
    """The promotion reviewer's verdict on the outputs the module produced."""

    accepted: bool
    reasons: str = Field(min_length=1, description="why it is accepted or rejected")
    cases: list[CaseVerdict] = Field(default_factory=list)


def schema_text(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema(), indent=1, sort_keys=True)


def ask_structured(model, messages: list, schema: type[BaseModel], conversation: str, what: str):
    """The model's answer validated against `schema`; malformed output gets one retry in the same conversation,
    then a PoolError naming `what`. Other model failures (ModelError) pass through."""
    from orgtree_lang.models.base import Message, ModelError
    from orgtree_lang.pool.store import PoolError

    try:
        return model.complete(messages, schema=schema, conversation_id=conversation).parsed
    except ModelError as exc:
        if exc.kind not in ("invalid_output", "empty"):
            raise
        first = exc.message
    retry = messages + [Message("user", f"Your answer could not be used: {first}\nAnswer again with only one "
                                        "JSON object matching the schema in your instructions.")]
    try:
        return model.complete(retry, schema=schema, conversation_id=conversation).parsed
    except ModelError as exc:
        if exc.kind not in ("invalid_output", "empty"):
            raise
        raise PoolError(f"{what}: {model.name} answered malformed JSON twice (first: {first}; then: {exc.message})",
                        hint="check the reviewer model; nothing was changed") from None
