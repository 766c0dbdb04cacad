"""The concern ledger: every concern a reviewer raised about a subject, and what became of it, in state.db."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

from orgtree_lang.review.concerns import Concern
from orgtree_lang.review.errors import ReviewError, SelfReviewError
from orgtree_lang.runtime.state_db import Transaction, open_state_db, state_db_path

STATUSES = ("open", "resolved", "rejected", "out_of_scope")
OUT_OF_SCOPE_RATIONALE = "the spec does not require this"

_COLUMNS = ("subject", "concern_id", "round", "severity", "spec_basis", "evidence", "suggested_fix", "status",
            "rationale", "author_conversation", "reviewer_conversation", "created", "updated")


class ConcernLedger:
    """One row per (subject, concern id) in the `concerns` table; every change also goes to `concern_events`.

    The database is opened in WAL mode with synchronous=FULL, so a recorded concern survives a crash.
    """

    def __init__(self, db_path: Path | str) -> None:
        self.path = Path(db_path)
        self.db = open_state_db(self.path)
        self._lock = self.db.write_lock  # also held by reads that must see one consistent state

    @classmethod
    def for_workspace(cls, workspace_root: Path | str) -> ConcernLedger:
        return cls(state_db_path(workspace_root))

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> ConcernLedger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ------------------------------------------------------------------------------------------

    def _write(self) -> Transaction:
        return Transaction(self.db)

    def _event(self, db: sqlite3.Connection, subject: str, concern_id: str, round_: int | None, event: str,
               status: str, rationale: str = "", conversation: str = "") -> None:
        db.execute("INSERT INTO concern_events (subject, concern_id, round, event, status, rationale, "
                   "conversation, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                   (subject, concern_id, round_, event, status, rationale, conversation, time.time()))

    def raise_concern(self, subject: str, round: int, concern: Concern, author_conversation: str,
                      reviewer_conversation: str) -> str:
        """Record a concern the reviewer raised in `round`; returns its status afterwards.

        - New, with a spec basis: `open`. New, with an empty spec basis: `out_of_scope`, rationale
          "the spec does not require this" (the spec is fixed, so scope cannot drift).
        - Already open: its details, round and reviewer conversation are updated; it stays open.
        - Already resolved, rejected or out of scope: stays as is, unless the concern says `still_present`
          and has a spec basis; then it reopens with this round.
        """
        if author_conversation == reviewer_conversation:
            raise SelfReviewError(f"refused: the review of {subject!r} would run in the author's own conversation "
                                  f"{author_conversation!r}", hint="every review round needs a fresh conversation")
        now = time.time()
        in_scope = bool(concern.spec_basis.strip())
        with self._write() as db:
            row = db.execute("SELECT status FROM concerns WHERE subject = ? AND concern_id = ?",
                             (subject, concern.id)).fetchone()
            details = (round, concern.severity, concern.spec_basis, concern.evidence, concern.suggested_fix)
            if row is None:
                status = "open" if in_scope else "out_of_scope"
                rationale = "" if in_scope else OUT_OF_SCOPE_RATIONALE
                db.execute(f"INSERT INTO concerns ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})",
                           (subject, concern.id, *details, status, rationale, author_conversation,
                            reviewer_conversation, now, now))
                self._event(db, subject, concern.id, round, "raised", status, rationale, reviewer_conversation)
                return status
            status = row["status"]
            if status == "open" and in_scope:
                event = "raised_again"
            elif status != "open" and in_scope and concern.still_present:
                status, event = "open", "reopened"
            else:
                self._event(db, subject, concern.id, round, "raised_again_unchanged", status, "",
                            reviewer_conversation)
                return status
            db.execute("UPDATE concerns SET round = ?, severity = ?, spec_basis = ?, evidence = ?, suggested_fix = ?, "
                       "status = ?, rationale = '', author_conversation = ?, reviewer_conversation = ?, updated = ? "
                       "WHERE subject = ? AND concern_id = ?",
                       (*details, status, author_conversation, reviewer_conversation, now, subject, concern.id))
            self._event(db, subject, concern.id, round, event, status, "", reviewer_conversation)
            return status

    def _settle(self, subject: str, concern_id: str, status: str, rationale: str, round: int | None,
                conversation: str) -> None:
        with self._write() as db:
            row = db.execute("SELECT status FROM concerns WHERE subject = ? AND concern_id = ?",
                             (subject, concern_id)).fetchone()
            if row is None:
                raise ReviewError(f"no concern {concern_id!r} was raised about {subject!r}")
            if row["status"] != "open":
                raise ReviewError(f"concern {concern_id!r} about {subject!r} is {row['status']}, not open; "
                                  f"only an open concern can be {status}")
            db.execute("UPDATE concerns SET status = ?, rationale = ?, updated = ? WHERE subject = ? AND concern_id = ?",
                       (status, rationale, time.time(), subject, concern_id))
            self._event(db, subject, concern_id, round, status, status, rationale, conversation)

    def resolve(self, subject: str, concern_id: str, rationale: str, *, round: int | None = None,
                conversation: str = "") -> None:
        """The open concern is fixed; `rationale` says how."""
        self._settle(subject, concern_id, "resolved", rationale.strip(), round, conversation)

    def reject(self, subject: str, concern_id: str, rationale: str, *, round: int | None = None,
               conversation: str = "") -> None:
        """The author disagrees with the open concern; `rationale` (required) says why."""
        if not rationale.strip():
            raise ReviewError(f"rejecting concern {concern_id!r} about {subject!r} needs a rationale")
        self._settle(subject, concern_id, "rejected", rationale.strip(), round, conversation)

    def record_round(self, subject: str, round: int, author_conversation: str, reviewer_conversation: str, *,
                     reviewer_model: str = "", concerns: int = 0, summary: str = "") -> None:
        """Record that review `round` of `subject` ran in `reviewer_conversation` (also rounds with no concern)."""
        if author_conversation == reviewer_conversation:
            raise SelfReviewError(f"refused: review round {round} of {subject!r} would run in the author's own "
                                  f"conversation {author_conversation!r}")
        with self._write() as db:
            db.execute("INSERT OR REPLACE INTO review_rounds (subject, round, author_conversation, "
                       "reviewer_conversation, reviewer_model, concerns, summary, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       (subject, round, author_conversation, reviewer_conversation, reviewer_model, concerns,
                        summary, time.time()))

    def rounds(self, subject: str) -> list[dict[str, Any]]:
        """Every review round of `subject`, in order, with its author and reviewer conversation ids."""
        return self._rows("SELECT * FROM review_rounds WHERE subject = ? ORDER BY round", (subject,))

    def forget(self, subject: str) -> None:
        """Remove every round, concern and event of `subject`: for a review that is replayed from a journal, which
        records them again as they were."""
        with self._write() as db:
            for table in ("concern_events", "concerns", "review_rounds"):
                db.execute(f"DELETE FROM {table} WHERE subject = ?", (subject,))

    # -- reading ------------------------------------------------------------------------------------------

    def _rows(self, sql: str, args: tuple[Any, ...]) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(row) for row in self.db.execute(sql, args).fetchall()]

    def open_concerns(self, subject: str) -> list[dict[str, Any]]:
        """Every open concern (blocking and minor), oldest first."""
        return self._rows("SELECT * FROM concerns WHERE subject = ? AND status = 'open' ORDER BY created, concern_id",
                          (subject,))

    def open_blocking(self, subject: str) -> list[dict[str, Any]]:
        """The open blocking concerns: while there is one, the artifact is not accepted."""
        return [row for row in self.open_concerns(subject) if row["severity"] == "blocking"]

    def history(self, subject: str) -> list[dict[str, Any]]:
        """Every concern about `subject` (one row each, as it stands now), oldest first."""
        return self._rows("SELECT * FROM concerns WHERE subject = ? ORDER BY created, concern_id", (subject,))

    def events(self, subject: str) -> list[dict[str, Any]]:
        """Every change to a concern about `subject`, in order: raised, reopened, resolved, rejected, ..."""
        return self._rows("SELECT * FROM concern_events WHERE subject = ? ORDER BY seq", (subject,))

    def counts(self, subject: str) -> dict[str, int]:
        """How many concerns about `subject` are in each status (every status present, 0 when none)."""
        counts = dict.fromkeys(STATUSES, 0)
        for row in self._rows("SELECT status, COUNT(*) AS n FROM concerns WHERE subject = ? GROUP BY status",
                              (subject,)):
            counts[row["status"]] = row["n"]
        return counts

    def subjects(self, prefix: str) -> list[str]:
        """Every subject reviewed so far that starts with `prefix`, in the order first reviewed."""
        rows = self._rows("SELECT subject, MIN(rowid) AS first FROM review_rounds WHERE substr(subject, 1, ?) = ? "
                          "GROUP BY subject ORDER BY first", (len(prefix), prefix))
        return [row["subject"] for row in rows]

    def last_round(self, subject: str) -> int:
        """The highest round recorded for `subject` (0 when none)."""
        rows = self._rows("SELECT MAX(r) AS r FROM (SELECT MAX(round) AS r FROM review_rounds WHERE subject = ? "
                          "UNION ALL SELECT MAX(round) FROM concerns WHERE subject = ?)", (subject, subject))
        return rows[0]["r"] or 0


def concern_from_row(row: dict[str, Any]) -> Concern:
    """The Concern a ledger row records."""
    return Concern(id=row["concern_id"], severity=row["severity"], spec_basis=row["spec_basis"],
                   evidence=row["evidence"], suggested_fix=row["suggested_fix"])
