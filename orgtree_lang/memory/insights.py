"""The insight pool: insights as entities in state.db, added and removed only by proposals a fresh reviewer accepts."""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from orgtree_lang.memory.statedb import StateError
from orgtree_lang.runtime.state_db import Transaction, open_state_db
from orgtree_lang.review import ConcernLedger, ReviewError, SelfReviewError, review_loop

INSIGHT_STATUSES = ("proposed", "active", "rejected", "removed")
PROPOSAL_STATUSES = ("pending", "accepted", "rejected")

ADD_SPEC = """An insight for the shared pool that every agent of the team reads before its next piece of work.
Accept it only if all of these hold:
1. Accurate: its evidence supports the text, and nothing in the evidence contradicts it.
2. Relevant: it bears on the team's work and would change what an agent does.
3. Non-obvious: it is not common knowledge; something non-trivial, or a correction of a critical misunderstanding.
4. Self-contained: an agent that reads only this insight understands it."""

REMOVE_SPEC = """A proposal to remove an insight from the shared pool that every agent of the team reads.
Accept the removal only if the reason shows that the insight is wrong, obsolete, duplicated by another insight,
or irrelevant to the team's work. If the insight still holds and the reason does not show otherwise, raise a
blocking concern saying why it should stay."""


class InsightError(StateError):
    """An insight or proposal does not exist, or is not in a state that allows what was asked."""


@dataclass
class Insight:
    """One insight: its text, the evidence for it, who proposed it, tags, status, and what happened to it."""

    id: int
    text: str
    evidence: str
    author: str
    tags: list[str]
    status: str
    created: float
    updated: float
    history: list[dict[str, Any]] = field(default_factory=list)

    def render(self) -> str:
        tags = f" [{', '.join(self.tags)}]" if self.tags else ""
        return f"insight #{self.id}{tags}: {self.text}\n  evidence: {self.evidence}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Proposal:
    """A request to add or remove an insight, and the reviewer's decision on it."""

    id: int
    insight_id: int
    action: str
    author: str
    author_conversation: str
    reason: str
    status: str
    decision: str
    reviewer_model: str
    reviewer_conversations: list[str]
    created: float
    decided: float | None
    key: str | None = None

    @property
    def subject(self) -> str:
        """The concern ledger's subject for this proposal's review."""
        return f"insight/{self.insight_id}/{self.action}/{self.id}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _clean_tags(tags: list[str] | tuple[str, ...]) -> list[str]:
    return sorted({t.strip().lower() for t in tags if t.strip()})


def rejection_reason(error: ReviewError) -> str:
    """The reviewer's blocking concerns, as one readable reason."""
    parts = [f"{row['concern_id']}: {row['evidence']} (rests on: {row['spec_basis']}; fix: {row['suggested_fix']})"
             for row in error.open_concerns]
    return "; ".join(parts)


class InsightPool:
    """Insights shared by every agent of a workspace, kept in `state.db` with the concern ledger of their reviews.

    Nothing enters or leaves the pool without review: `propose_add` and `propose_remove` record a pending
    proposal, and `review` runs the review loop with a reviewer in a fresh conversation (never the author's).
    An accepted proposal changes the pool; a rejected one is kept with the reviewer's reason.
    """

    def __init__(self, db_path: Path | str) -> None:
        self.path = Path(db_path)
        self.db = open_state_db(self.path)
        self._lock = self.db.write_lock  # reads that must see one state take it too
        self.ledger = ConcernLedger(self.path)

    @classmethod
    def for_workspace(cls, workspace_root: Path | str) -> InsightPool:
        from orgtree_lang.runtime.state_db import state_db_path

        return cls(state_db_path(workspace_root))

    def close(self) -> None:
        self.ledger.close()
        self.db.close()

    def __enter__(self) -> InsightPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- proposing ----------------------------------------------------------------------------------------

    def propose_add(self, text: str, evidence: str, *, author: str, tags: list[str] | tuple[str, ...] = (),
                    author_conversation: str | None = None, key: str | None = None) -> Proposal:
        """Record a new insight as `proposed` and a pending proposal to add it; nothing is in the pool yet.

        A `key` already used returns that proposal again and records nothing."""
        if key and (done := self.proposal_by_key(key)) is not None:
            return done
        if not text.strip() or not evidence.strip():
            raise InsightError(f"an insight needs its text and the evidence for it; got text={text!r}, "
                               f"evidence={evidence!r}", hint="the reviewer checks the text against the evidence")
        now = time.time()
        with self._write() as db:
            insight_id = db.execute(
                "INSERT INTO insights (text, evidence, author, tags, status, created, updated) "
                "VALUES (?, ?, ?, ?, 'proposed', ?, ?)",
                (text.strip(), evidence.strip(), author, json.dumps(_clean_tags(tags)), now, now)).lastrowid
            proposal_id = self._insert_proposal(db, insight_id, "add", author, author_conversation, "", now, key)
            self._event(db, insight_id, proposal_id, "proposed", f"by {author}")
        return self.proposal(proposal_id)

    def propose_remove(self, insight_id: int, reason: str, *, author: str,
                       author_conversation: str | None = None, key: str | None = None) -> Proposal:
        """Record a pending proposal to remove an active insight; it stays in the pool until a reviewer agrees.

        A `key` already used returns that proposal again and records nothing."""
        if key and (done := self.proposal_by_key(key)) is not None:
            return done
        if not reason.strip():
            raise InsightError(f"removing insight #{insight_id} needs a reason",
                               hint="say why it is wrong, obsolete or irrelevant; the reviewer judges that")
        insight = self.get(insight_id)
        if insight.status != "active":
            raise InsightError(f"insight #{insight_id} is {insight.status}, not active; only an active insight "
                               "can be proposed for removal")
        with self._write() as db:
            pending = db.execute("SELECT id FROM insight_proposals WHERE insight_id = ? AND status = 'pending'",
                                 (insight_id,)).fetchone()
            if pending is not None:
                raise InsightError(f"insight #{insight_id} already has pending proposal #{pending['id']}",
                                   hint="review that proposal first")
            proposal_id = self._insert_proposal(db, insight_id, "remove", author, author_conversation,
                                                reason.strip(), time.time(), key)
            self._event(db, insight_id, proposal_id, "removal_proposed", f"by {author}: {reason.strip()}")
        return self.proposal(proposal_id)

    def add(self, text: str, evidence: str, *, author: str, reviewer: Any, tags: list[str] | tuple[str, ...] = (),
            author_conversation: str | None = None, key: str | None = None, **review: Any) -> Proposal:
        """Propose a new insight and have it reviewed at once; returns the decided proposal."""
        proposal = self.propose_add(text, evidence, author=author, tags=tags,
                                    author_conversation=author_conversation, key=key)
        return self.review(proposal.id, reviewer, **review) if proposal.status == "pending" else proposal

    def remove(self, insight_id: int, reason: str, *, author: str, reviewer: Any,
               author_conversation: str | None = None, key: str | None = None, **review: Any) -> Proposal:
        """Propose removing an insight and have that reviewed at once; returns the decided proposal."""
        proposal = self.propose_remove(insight_id, reason, author=author, author_conversation=author_conversation,
                                       key=key)
        return self.review(proposal.id, reviewer, **review) if proposal.status == "pending" else proposal

    # -- reviewing ----------------------------------------------------------------------------------------

    def review(self, proposal_id: int, reviewer: Any, *, author_model: Any = None,
               revise: Callable | None = None, max_rounds: int = 1,
               new_reviewer_conversation: Callable[[], str] | None = None) -> Proposal:
        """Red-team a pending proposal with `reviewer` in a fresh conversation and apply the decision.

        Accepted: an added insight becomes active, a removed one `removed`. Blocking concerns left after
        `max_rounds`: the proposal is rejected with the concerns as its reason (and an added insight becomes
        `rejected`). A review in the author's own conversation raises SelfReviewError, and a reviewer that
        fails (malformed answers, provider errors) raises; in both cases the proposal stays pending.
        """
        if revise is None and max_rounds != 1:
            raise InsightError(f"reviewing proposal #{proposal_id} in {max_rounds} rounds needs `revise`, "
                               "the author's answer to the reviewer's concerns between rounds",
                               hint="pass revise=..., or max_rounds=1 to decide in one review")
        proposal = self.proposal(proposal_id)
        if proposal.status != "pending":
            raise InsightError(f"proposal #{proposal_id} was already {proposal.status}: {proposal.decision}")
        insight = self.get(proposal.insight_id)
        spec, artifact = self._review_text(proposal, insight)
        options: dict[str, Any] = {}
        if new_reviewer_conversation is not None:
            options["new_reviewer_conversation"] = new_reviewer_conversation
        try:
            # review_loop reads only the author model's name; a proposal from a program has no author model.
            outcome = review_loop(proposal.subject, spec, artifact, author=author_model, reviewer=reviewer,
                                  revise=revise or _no_revision, ledger=self.ledger, max_rounds=max_rounds,
                                  author_conversation=proposal.author_conversation, **options)
        except SelfReviewError:
            raise
        except ReviewError as err:
            if not err.open_concerns:
                raise  # the reviewer failed; that is no decision
            conversations = err.outcome.reviewer_conversations if err.outcome is not None else []
            return self._decide(proposal, accepted=False, decision=rejection_reason(err),
                                reviewer_model=getattr(reviewer, "name", ""), conversations=conversations)
        return self._decide(proposal, accepted=True, decision=outcome.summary or "accepted by the reviewer",
                            reviewer_model=outcome.reviewer_model, conversations=outcome.reviewer_conversations)

    def _review_text(self, proposal: Proposal, insight: Insight) -> tuple[str, str]:
        lines = [f"Insight: {insight.text}", f"Evidence: {insight.evidence}",
                 f"Tags: {', '.join(insight.tags) or 'none'}"]
        if proposal.action == "add":
            return ADD_SPEC, "\n".join(lines)
        return REMOVE_SPEC, "\n".join(lines + [f"Reason for removal: {proposal.reason}"])

    def _decide(self, proposal: Proposal, *, accepted: bool, decision: str, reviewer_model: str,
                conversations: list[str]) -> Proposal:
        status = "accepted" if accepted else "rejected"
        if proposal.action == "add":
            insight_status, event = ("active", "added") if accepted else ("rejected", "add_rejected")
        else:
            insight_status, event = ("removed", "removed") if accepted else ("active", "removal_rejected")
        now = time.time()
        with self._write() as db:
            db.execute("UPDATE insight_proposals SET status = ?, decision = ?, reviewer_model = ?, "
                       "reviewer_conversations = ?, decided = ? WHERE id = ? AND status = 'pending'",
                       (status, decision, reviewer_model, json.dumps(conversations), now, proposal.id))
            db.execute("UPDATE insights SET status = ?, updated = ? WHERE id = ?",
                       (insight_status, now, proposal.insight_id))
            self._event(db, proposal.insight_id, proposal.id, event, decision)
        return self.proposal(proposal.id)

    # -- reading ------------------------------------------------------------------------------------------

    def get(self, insight_id: int) -> Insight:
        with self._lock:
            row = self.db.execute("SELECT * FROM insights WHERE id = ?", (insight_id,)).fetchone()
        if row is None:
            raise InsightError(f"there is no insight #{insight_id}", hint="`pipe insights list --all` shows them all")
        return self._insight(row)

    def insights(self, status: str | None = "active") -> list[Insight]:
        """Insights in `status` (None: all), oldest first."""
        if status is not None and status not in INSIGHT_STATUSES:
            raise InsightError(f"unknown insight status {status!r}; expected one of {', '.join(INSIGHT_STATUSES)}")
        sql, args = "SELECT * FROM insights", ()
        if status is not None:
            sql, args = sql + " WHERE status = ?", (status,)
        with self._lock:
            rows = self.db.execute(sql + " ORDER BY id", args).fetchall()
        return [self._insight(row) for row in rows]

    def proposal(self, proposal_id: int) -> Proposal:
        with self._lock:
            row = self.db.execute("SELECT * FROM insight_proposals WHERE id = ?", (proposal_id,)).fetchone()
        if row is None:
            raise InsightError(f"there is no insight proposal #{proposal_id}")
        return _proposal(row)

    def proposal_by_key(self, key: str) -> Proposal | None:
        """The proposal a skill call with idempotency key `key` made, if any."""
        with self._lock:
            row = self.db.execute("SELECT * FROM insight_proposals WHERE key = ?", (key,)).fetchone()
        return None if row is None else _proposal(row)

    def proposals(self, status: str | None = None) -> list[Proposal]:
        """Proposals in `status` (None: all), oldest first."""
        sql, args = "SELECT * FROM insight_proposals", ()
        if status is not None:
            sql, args = sql + " WHERE status = ?", (status,)
        with self._lock:
            rows = self.db.execute(sql + " ORDER BY id", args).fetchall()
        return [_proposal(row) for row in rows]

    def _insight(self, row: sqlite3.Row) -> Insight:
        with self._lock:
            events = [dict(e) for e in self.db.execute(
                "SELECT proposal_id, event, detail, at FROM insight_events WHERE insight_id = ? ORDER BY seq",
                (row["id"],)).fetchall()]
        return Insight(id=row["id"], text=row["text"], evidence=row["evidence"], author=row["author"],
                       tags=json.loads(row["tags"]), status=row["status"], created=row["created"],
                       updated=row["updated"], history=events)

    # -- writing ------------------------------------------------------------------------------------------

    def _write(self) -> Transaction:
        return Transaction(self.db)

    @staticmethod
    def _insert_proposal(db: sqlite3.Connection, insight_id: int, action: str, author: str,
                         author_conversation: str | None, reason: str, now: float, key: str | None) -> int:
        return db.execute(
            "INSERT INTO insight_proposals (insight_id, action, author, author_conversation, reason, status, created, "
            "key) VALUES (?, ?, ?, ?, ?, 'pending', ?, ?)",
            (insight_id, action, author, author_conversation or str(uuid.uuid4()), reason, now, key)).lastrowid

    @staticmethod
    def _event(db: sqlite3.Connection, insight_id: int, proposal_id: int | None, event: str, detail: str) -> None:
        db.execute("INSERT INTO insight_events (insight_id, proposal_id, event, detail, at) VALUES (?, ?, ?, ?, ?)",
                   (insight_id, proposal_id, event, detail, time.time()))


def _proposal(row: sqlite3.Row) -> Proposal:
    data = dict(row)
    data["reviewer_conversations"] = json.loads(data["reviewer_conversations"])
    return Proposal(**data)


def _no_revision(artifact: str, concerns: list) -> tuple[str, dict[str, str]]:  # pragma: no cover
    raise AssertionError("with max_rounds=1 the review loop never asks for a revision")
