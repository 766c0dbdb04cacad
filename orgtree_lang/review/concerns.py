"""What a reviewer answers: a `Verdict` holding structured `Concern`s, and the JSON schema its prompt shows."""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator


class Concern(BaseModel):
    """One problem the reviewer found in the artifact."""

    id: str = Field(min_length=1, description="a short stable id, e.g. 'c1'; reuse it to re-raise the same concern")
    severity: Literal["blocking", "minor"] = Field(
        description="blocking: the artifact does not meet the spec until this is fixed; minor: worth noting only")
    spec_basis: str = Field(
        description="the part of the spec this concern rests on, quoted or named; "
                    "\"\" when the spec does not require it (then it is recorded as out of scope, not acted on)")
    evidence: str = Field(description="where and how the artifact falls short")
    suggested_fix: str = Field(description="what the author should change")
    still_present: bool = Field(
        default=False,
        description="true only when re-raising the id of a concern already settled (resolved or rejected) "
                    "because the problem is still in the artifact; this reopens it")

    @field_validator("id", "spec_basis", "evidence", "suggested_fix")
    @classmethod
    def _strip(cls, value: str) -> str:
        return value.strip()

    @field_validator("id")
    @classmethod
    def _nonblank_id(cls, value: str) -> str:
        if not value:
            raise ValueError("a concern id must not be blank")
        return value


class Verdict(BaseModel):
    """The reviewer's whole answer for one round: its concerns (none means the artifact is accepted)."""

    concerns: list[Concern] = Field(description="every concern still present in the artifact; [] when none")
    summary: str = Field(default="", description="one or two sentences on the artifact overall")

    @model_validator(mode="after")
    def _unique_ids(self) -> Verdict:
        seen: set[str] = set()
        for concern in self.concerns:
            if concern.id in seen:
                raise ValueError(f"concern id {concern.id!r} is used twice; give each concern its own id")
            seen.add(concern.id)
        return self


# The schema text the reviewer prompt shows (stable: keys sorted).
VERDICT_SCHEMA: str = json.dumps(Verdict.model_json_schema(), indent=2, sort_keys=True)
