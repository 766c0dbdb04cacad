"""Settle a review disagreement left after the last round: the parent block's author rules on each open concern,
then the human node; a concern upheld gets one more revision and review; the block fails only after the last."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from orgtree_lang.review.ledger import concern_from_row


class Ruling(BaseModel):
    """One judge's decision on one open concern."""

    id: str = Field(description="the concern's id")
    decision: Literal["uphold", "dismiss"] = Field(
        description="uphold: the module must change as the concern asks; dismiss: the spec, as the goal means "
                    "it, does not require it")
    why: str = Field(description="one or two sentences")


class Rulings(BaseModel):
    """A judge's whole answer: one ruling per open concern."""

    rulings: list[Ruling]


RULINGS_SCHEMA = json.dumps(Rulings.model_json_schema(), indent=2, sort_keys=True)


@dataclass
class Judge:
    """Someone a disagreement can go to: `rule(question)` returns rulings for the concern ids it names."""

    name: str  # as the ledger and the error name it: "the parent block's author", "the human node"
    rule: Callable[[str, list[str]], dict[str, Ruling]]


def disagreement(spec_text: str, goal: str, artifact: str, open_rows: list[dict], history: list[dict]) -> str:
    """The question put to a judge: the spec, the goal, the module, the open concerns and what the author said."""
    said = [f"- {row['concern_id']}: {row['status']}: {row.get('rationale') or ''}".rstrip(": ")
            for row in history if row["status"] in ("rejected", "resolved") and row.get("rationale")]
    concerns = json.dumps([concern_from_row(row).model_dump(exclude={"still_present"}) for row in open_rows],
                          indent=2)
    return "\n".join([
        "The author of a generated module and an independent reviewer still disagree after the last review round.",
        "Rule on each open concern: `uphold` (the module must change as the concern asks) or `dismiss` (the spec, "
        "as the goal means it, does not require it).", "", "## Spec", spec_text.strip(), "", goal.strip(), "",
        "## The module", artifact.rstrip(), "", "## Open concerns", concerns, "",
        "## What the author answered in earlier rounds", "\n".join(said) or "(nothing)"])


def parent_author_judge(model, conversation: str, module: str) -> Judge:
    """The author model that wrote `module` (the parent's generated module), asked in its authoring conversation."""
    from orgtree_lang.models.base import Message

    def rule(question: str, ids: list[str]) -> dict[str, Ruling]:
        messages = [Message("system", f"You wrote the module {module}; it leaves a step to an `ambiguous` block, "
                                      "whose docstring is that step's spec. You know what you meant by it.\n"
                                      "Answer with one JSON object and nothing else, matching this JSON schema:\n"
                                      + RULINGS_SCHEMA),
                    Message("user", question)]
        answer = model.complete(messages, schema=Rulings, conversation_id=conversation).parsed
        return {r.id: r for r in answer.rulings if r.id in ids}

    return Judge("the parent block's author", rule)


_LINE = re.compile(r"^\s*[-*]?\s*`?([A-Za-z0-9_.-]+)`?\s*:\s*(uphold|dismiss)\w*\s*(?::\s*(.*))?$", re.I | re.M)


def human_judge(ask: Callable[[str], str]) -> Judge:
    """The human node, through `ask(question) -> answer`; the person answers one line per concern,
    `ID: uphold: why` or `ID: dismiss: why`."""

    def rule(question: str, ids: list[str]) -> dict[str, Ruling]:
        answer = ask(question + "\n\nAnswer one line per concern: `ID: uphold: why` or `ID: dismiss: why`.")
        found = {m.group(1): Ruling(id=m.group(1), decision=m.group(2).lower(), why=(m.group(3) or "").strip())
                 for m in _LINE.finditer(answer or "")}
        return {i: r for i, r in found.items() if i in ids}

    return Judge("the human node", rule)


def judges_for(author, parent_author: tuple[str, str] | None, human: Callable[[str], str] | None) -> list[Judge]:
    """Who settles a review disagreement, in order: the parent block's author (for a block of a generated module:
    `parent_author` is that module's path and authoring conversation), then the human node (when the run can ask
    one)."""
    judges = []
    if parent_author is not None:
        judges.append(parent_author_judge(author, parent_author[1], parent_author[0]))
    if human is not None:
        judges.append(human_judge(human))
    return judges


def escalate(failed, judges: list[Judge], *, subject: str, ledger, spec_text: str, goal: str, revise,
             review_again, note: Callable[[str], None] = lambda _: None,
             binding: Callable[[str], bool] = lambda _concern_id: False):
    """The review outcome after taking the disagreement of `failed` (a ReviewError with open concerns) to each
    judge in turn, and the trail of what each decided.

    A judge's dismissal closes a concern (rejected in the ledger, the judge named); a concern it upholds, or
    does not rule on, goes back to the author (`revise(artifact, concerns)`) with the ruling, and the module is
    reviewed once more (`review_again(artifact)`, a one-round review_loop). A `binding` concern (an example the
    program states, which the module fails) is never dismissed: the program is the spec. Raises ReviewError
    with the concerns still open when no judge settles it."""
    from orgtree_lang.review.errors import ReviewError

    outcome, artifact, trail = failed.outcome, failed.outcome.artifact, []
    for judge in judges:
        open_rows = ledger.open_blocking(subject)
        ids = [row["concern_id"] for row in open_rows]
        note(f"review disagreement on {', '.join(ids)}: asking {judge.name}")
        rulings = judge.rule(disagreement(spec_text, goal, artifact, open_rows, ledger.history(subject)), ids)
        upheld = []
        for row in open_rows:
            ruling = rulings.get(row["concern_id"])
            if ruling is not None and ruling.decision == "dismiss" and not binding(row["concern_id"]):
                ledger.reject(subject, row["concern_id"], f"dismissed by {judge.name}: {ruling.why or '(no reason)'}")
            else:  # only an explicit dismissal closes a concern
                why = ruling.why if ruling is not None else "no ruling given"
                if ruling is not None and ruling.decision == "dismiss":
                    why = "dismissed, but the program states this example: only a module that passes it settles it"
                upheld.append(concern_from_row(row).model_copy(
                    update={"evidence": f"{row['evidence']} (upheld by {judge.name}: {why})"}))
        trail.append(f"{judge.name} dismissed {len(open_rows) - len(upheld)}, upheld {len(upheld)}")
        if not upheld:
            outcome.accepted, outcome.artifact, outcome.counts = True, artifact, ledger.counts(subject)
            return outcome, trail
        artifact, _ = revise(artifact, upheld)
        try:
            return _joined(outcome, review_again(artifact)), trail
        except ReviewError as again:
            if not again.open_concerns or again.outcome is None:
                raise
            outcome, artifact = _joined(outcome, again.outcome), again.outcome.artifact
    still = ledger.open_blocking(subject)
    listing = "; ".join(f"{row['concern_id']} ({row['spec_basis']}): {row['evidence']}" for row in still)
    asked = "; ".join(trail) or "nobody (no parent block's author and no human node)"
    raise ReviewError(f"review of {subject!r} not accepted: {len(still)} blocking concern(s) still open after "
                      f"escalating to {asked}: {listing}", open_concerns=still, outcome=outcome,
                      hint="the concern ledger in state.db keeps every concern, ruling and its history")


def _joined(before, after):
    """`after` (one more review round) counting the rounds and reviewer conversations of `before` too."""
    after.rounds += before.rounds
    after.reviewer_conversations[:0] = before.reviewer_conversations
    return after
