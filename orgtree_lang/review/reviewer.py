"""The review loop: a fresh reviewer conversation each round, concerns into the ledger, the author revises."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from orgtree_lang.models.base import Message, Model, ModelError
from orgtree_lang.review.concerns import VERDICT_SCHEMA, Concern, Verdict
from orgtree_lang.review.errors import ReviewError, SelfReviewError
from orgtree_lang.review.ledger import ConcernLedger, concern_from_row

Revise = Callable[[str, list[Concern]], tuple[str, dict[str, str]]]

REVIEWER_SYSTEM = f"""You are an independent reviewer. You did not write the artifact below and you have not seen \
how it was written. Red-team it: find gaps and bugs that keep it from meeting its spec.

Rules:
- The spec is fixed. Every concern must rest on a part of the spec: quote or name it in `spec_basis`. If the spec \
does not require what you would ask for, you may still mention it, but with `spec_basis` set to "" (it will be \
recorded as out of scope and not acted on).
- `blocking` means the artifact does not meet the spec until it is fixed; `minor` means worth noting only.
- Concerns still open from earlier rounds are listed: repeat (same id) every one that is still present; one you \
leave out is taken as fixed. Give each new concern a new id.
- Answer with one JSON object and nothing else, matching this JSON schema:

{VERDICT_SCHEMA}
"""

_RESPONSE = re.compile(r"^\s*(resolved|rejected)\s*(?::\s*(.*))?$", re.S | re.I)


@dataclass
class ReviewOutcome:
    """How a review ended: the final artifact, rounds run, whether it was accepted, and the ledger counts."""

    artifact: str
    rounds: int
    accepted: bool
    counts: dict[str, int]
    author_conversation: str
    reviewer_conversations: list[str] = field(default_factory=list)
    author_model: str = ""
    reviewer_model: str = ""
    summary: str = ""


def _fresh_id() -> str:
    return str(uuid.uuid4())


def reviewer_messages(subject: str, round_: int, spec_text: str, artifact: str, open_concerns: list[Concern],
                      settled_ids: list[str], language: str = "", context: str = "") -> list[Message]:
    """What the reviewer sees: the spec, the artifact, the still-open concerns, the description of the
    artifact's language when it is code (`language`) and `context` (sections with their own headings: the goal
    the artifact serves, the documentation of what it calls). Never the author's conversation."""
    still_open = (json.dumps([c.model_dump(exclude={"still_present"}) for c in open_concerns], indent=2)
                  if open_concerns else "none")
    parts = [f"Review round {round_} of {subject}.", "", "## Spec", spec_text.strip(), ""]
    if context.strip():
        parts += [context.strip(), ""]
    parts += ["## Artifact",
             artifact.rstrip(), "", "## Concerns still open from earlier rounds", still_open]
    if settled_ids:
        parts += ["", "## Concern ids already settled",
                  "Do not reuse these ids for a new concern; reuse one (with \"still_present\": true) only if "
                  "that same problem is still in the artifact: " + ", ".join(settled_ids)]
    parts += ["", "Answer with one JSON object matching the schema in your instructions."]
    system = REVIEWER_SYSTEM
    if language:
        system += ("\nThe artifact is written in the language described below. Judge it by these semantics, "
                   "not by another language's:\n\n" + language)
    return [Message("system", system), Message("user", "\n".join(parts))]


def _ask_reviewer(reviewer: Model, messages: list[Message], conversation_id: str, subject: str,
                  round_: int) -> Verdict:
    """One verdict; malformed output gets one retry with the validation error, then ReviewError."""
    try:
        return reviewer.complete(messages, schema=Verdict, conversation_id=conversation_id).parsed
    except ModelError as exc:
        if exc.kind not in ("invalid_output", "empty"):
            raise
        first_error = exc.message
    retry = messages[:-1] + [Message("user", f"{messages[-1].content}\n\nYour previous answer could not be "
                                             f"used: {first_error}\nAnswer again with only one JSON object "
                                             "matching the schema in your instructions.")]
    try:
        return reviewer.complete(retry, schema=Verdict, conversation_id=conversation_id).parsed
    except ModelError as exc:
        if exc.kind not in ("invalid_output", "empty"):
            raise
        raise ReviewError(f"review of {subject!r}, round {round_}: the reviewer {reviewer.name} returned malformed "
                          f"concerns twice (first: {first_error}; then: {exc.message})",
                          hint="check the reviewer model; the concern ledger keeps what was recorded") from None


def _parse_response(subject: str, concern_id: str, response: str) -> tuple[str, str]:
    match = _RESPONSE.match(response if isinstance(response, str) else "")
    if not match:
        raise ReviewError(f"review of {subject!r}: the author's answer to concern {concern_id!r} must be "
                          f"'resolved: RATIONALE' or 'rejected: RATIONALE', got {response!r}")
    action, rationale = match.group(1).lower(), (match.group(2) or "").strip()
    if action == "rejected" and not rationale:
        raise ReviewError(f"review of {subject!r}: rejecting concern {concern_id!r} needs a rationale "
                          "('rejected: WHY')")
    return action, rationale


def review_loop(subject: str, spec_text: str, artifact: str, *, author: Model, reviewer: Model, revise: Revise,
                ledger: ConcernLedger, max_rounds: int = 3, author_conversation: str | None = None,
                new_reviewer_conversation: Callable[[], str] = _fresh_id, language: str = "",
                context: Callable[[str], str] | None = None,
                held: Callable[[str], bool] = lambda _concern_id: False) -> ReviewOutcome:
    """Review `artifact` against `spec_text` until no blocking concern is open, or fail after `max_rounds`.

    Each round runs the reviewer in a fresh conversation (`new_reviewer_conversation()`, a uuid4 by default)
    that sees only the spec, the artifact and the still-open concerns. Its concerns go into `ledger` under
    `subject`; those with an empty spec basis are recorded out of scope and never sent to `revise`. Open
    concerns the reviewer does not repeat are resolved. While blocking concerns are open and rounds remain,
    `revise(artifact, open_blocking)` returns the new artifact and {concern_id: "resolved: why" | "rejected: why"}.
    `language`, when the artifact is code, describes its language to every reviewer (the language card);
    `context(artifact)`, when given, adds sections about what the artifact serves and calls. `held(id)` names
    the concerns that only evidence settles (a failing example's, which the caller resolves when its case
    passes): the reviewer's silence does not resolve one, nor does the author's answer.

    Raises SelfReviewError when a reviewer conversation is the author's (or was already used), ReviewError
    on malformed reviewer output twice in a round or when blocking concerns are left after the last round
    (`.open_concerns` lists them, `.outcome` has accepted=False). ModelError from the models passes through.
    The ledger keeps everything recorded before an error.
    """
    if max_rounds < 1:
        raise ReviewError(f"review of {subject!r}: max_rounds must be at least 1, got {max_rounds}")
    author_conversation = author_conversation or _fresh_id()
    used = {row["reviewer_conversation"] for row in ledger.rounds(subject)}
    outcome = ReviewOutcome(artifact=artifact, rounds=0, accepted=False, counts=ledger.counts(subject),
                            author_conversation=author_conversation, author_model=getattr(author, "name", ""),
                            reviewer_model=getattr(reviewer, "name", ""))
    first_round = ledger.last_round(subject) + 1
    for round_ in range(first_round, first_round + max_rounds):
        conversation = new_reviewer_conversation()
        if conversation == author_conversation:
            raise SelfReviewError(
                f"refused: review round {round_} of {subject!r} would run in the author's conversation "
                f"{author_conversation!r}; no author reviews its own work",
                hint="every review round needs a fresh reviewer conversation", outcome=outcome)
        if conversation in used:
            raise SelfReviewError(
                f"refused: review round {round_} of {subject!r} would reuse reviewer conversation {conversation!r}; "
                "every round needs a fresh one", outcome=outcome)
        used.add(conversation)
        outcome.reviewer_conversations.append(conversation)
        outcome.rounds += 1

        shown = [concern_from_row(row) for row in ledger.open_concerns(subject)]
        settled = [row["concern_id"] for row in ledger.history(subject) if row["status"] != "open"]
        messages = reviewer_messages(subject, round_, spec_text, outcome.artifact, shown, settled, language,
                                     context(outcome.artifact) if context is not None else "")
        verdict = _ask_reviewer(reviewer, messages, conversation, subject, round_)
        ledger.record_round(subject, round_, author_conversation, conversation, reviewer_model=outcome.reviewer_model,
                            concerns=len(verdict.concerns), summary=verdict.summary)
        outcome.summary = verdict.summary
        for concern in verdict.concerns:
            ledger.raise_concern(subject, round_, concern, author_conversation, conversation)
        repeated = {c.id for c in verdict.concerns}
        for concern in shown:
            if concern.id not in repeated and not held(concern.id):
                ledger.resolve(subject, concern.id, f"the reviewer no longer raised it in round {round_}",
                               round=round_, conversation=conversation)

        blocking = ledger.open_blocking(subject)
        outcome.counts = ledger.counts(subject)
        if not blocking:
            outcome.accepted = True
            return outcome
        if round_ == first_round + max_rounds - 1:
            listing = "; ".join(f"{row['concern_id']} ({row['spec_basis']}): {row['evidence']}" for row in blocking)
            raise ReviewError(
                f"review of {subject!r} not accepted after {max_rounds} round(s): {len(blocking)} blocking "
                f"concern(s) still open: {listing}",
                open_concerns=blocking, outcome=outcome,
                hint="the concern ledger in state.db keeps every concern and its history")

        sent = [concern_from_row(row) for row in blocking]
        revised, responses = revise(outcome.artifact, sent)
        if not isinstance(revised, str):
            raise ReviewError(f"review of {subject!r}: revise must return the new artifact as a string, "
                              f"got {type(revised).__name__}", outcome=outcome)
        outcome.artifact = revised
        sent_ids = {c.id for c in sent if not held(c.id)}
        # Every answer is checked before any is recorded; ids the author was not asked about are ignored.
        answers = [(concern_id, *_parse_response(subject, concern_id, response))
                   for concern_id, response in (responses or {}).items() if concern_id in sent_ids]
        for concern_id, action, rationale in answers:
            if action == "resolved":
                ledger.resolve(subject, concern_id, rationale, round=round_, conversation=author_conversation)
            else:
                ledger.reject(subject, concern_id, rationale, round=round_, conversation=author_conversation)
        outcome.counts = ledger.counts(subject)
    raise AssertionError("unreachable")  # pragma: no cover
