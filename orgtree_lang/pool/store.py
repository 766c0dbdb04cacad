"""The skill pool's tables in state.db: bug reports, reviewers' decisions, usage notes, removals and promotions."""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orgtree_lang.runtime.errors import UsageError
from orgtree_lang.runtime.state_db import Transaction, open_state_db, state_db_path


@dataclass(frozen=True)
class BugReport:
    """One filed report: which skill, the use case, what was expected and observed, who reported it."""

    id: int
    skill: str
    use_case: str
    expected: str
    observed: str
    notes: str
    reporter: str
    reporter_conversation: str
    reporter_model: str
    status: str
    created: float


class PoolError(UsageError):
    """A request the skill pool refuses: an unknown bug report or skill, or one already decided."""



def state_db(root: Path | str) -> Path:
    """`<workspace>/.orgtree/state.db`."""
    return state_db_path(root)


class PoolStore:
    """The pool tables of one workspace's state.db (SQLite, WAL, synchronous=FULL; one transaction per change)."""

    def __init__(self, db_path: Path | str) -> None:
        self.path = Path(db_path)
        self.db = open_state_db(self.path)

    @classmethod
    def for_workspace(cls, root: Path | str) -> PoolStore:
        return cls(state_db(root))

    def close(self) -> None:
        self.db.close()

    def _write(self, sql: str, params: tuple) -> int:
        with Transaction(self.db) as db:
            return int(db.execute(sql, params).lastrowid or 0)

    # ---- bug reports -------------------------------------------------------------

    def file_bug(self, skill: str, use_case: str, expected: str, observed: str, notes: str = "", *,
                 reporter: str, reporter_conversation: str, reporter_model: str = "",
                 idempotency_key: str | None = None) -> int:
        """Record a report (status open) and return its id; a key already used returns that report's id."""
        for name, value in (("skill", skill), ("use_case", use_case), ("expected", expected),
                            ("observed", observed)):
            if not value.strip():
                raise PoolError(f"a bug report needs `{name}`, got an empty text",
                                hint="describe the use case, the expected and the observed outcome")
        if not reporter_conversation:
            raise PoolError("a bug report needs the reporter's conversation id, so its reviewer can be another one")
        with Transaction(self.db) as db:
            if idempotency_key is not None:
                row = db.execute("SELECT id FROM skill_bugs WHERE idempotency_key = ?", (idempotency_key,)).fetchone()
                if row is not None:
                    return int(row["id"])
            now = time.time()
            return int(db.execute(
                "INSERT INTO skill_bugs (skill, use_case, expected, observed, notes, reporter, reporter_conversation,"
                " reporter_model, idempotency_key, status, created, updated) VALUES (?,?,?,?,?,?,?,?,?,'open',?,?)",
                (skill, use_case, expected, observed, notes, reporter, reporter_conversation, reporter_model,
                 idempotency_key, now, now)).lastrowid)

    def bug(self, bug_id: int) -> BugReport:
        row = self.db.execute("SELECT * FROM skill_bugs WHERE id = ?", (bug_id,)).fetchone()
        if row is None:
            raise PoolError(f"there is no bug report #{bug_id}", hint="`pipe skills bugs` lists the reports")
        return _bug(row)

    def bugs(self, skill: str | None = None, status: str | None = None) -> list[BugReport]:
        sql, params = "SELECT * FROM skill_bugs WHERE 1=1", []
        if skill:
            sql += " AND skill = ?"
            params.append(skill)
        if status:
            sql += " AND status = ?"
            params.append(status)
        return [_bug(row) for row in self.db.execute(sql + " ORDER BY id", params)]

    def record_decision(self, bug: BugReport, decision: str, outcome: str, reasoning: str, *,
                        evidence: list[str], detail: str, reviewer_model: str, reviewer_conversation: str,
                        new_status: str | None = None, note: str | None = None, remove: bool = False) -> int:
        """One decision (applied or refused) and, in the same transaction, what applying it changes."""
        now = time.time()
        with Transaction(self.db) as db:
            seq = db.execute(
                "INSERT INTO skill_bug_decisions (bug, skill, decision, outcome, reasoning, evidence, detail, "
                "reviewer_model, reviewer_conversation, at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (bug.id, bug.skill, decision, outcome, reasoning, json.dumps(evidence), detail, reviewer_model,
                 reviewer_conversation, now)).lastrowid
            if new_status:
                db.execute("UPDATE skill_bugs SET status = ?, updated = ? WHERE id = ?", (new_status, now, bug.id))
            if note:
                db.execute("INSERT INTO skill_notes (skill, bug, note, at) VALUES (?,?,?,?)",
                           (bug.skill, bug.id, note, now))
            if remove:
                db.execute("INSERT OR REPLACE INTO skill_removals (skill, bug, reasoning, at) VALUES (?,?,?,?)",
                           (bug.skill, bug.id, reasoning, now))
        return int(seq)

    def decisions(self, bug_id: int | None = None) -> list[dict[str, Any]]:
        sql, params = "SELECT * FROM skill_bug_decisions", ()
        if bug_id is not None:
            sql, params = sql + " WHERE bug = ?", (bug_id,)
        rows = [dict(row) for row in self.db.execute(sql + " ORDER BY seq", params)]
        for row in rows:
            row["evidence"] = json.loads(row["evidence"])
        return rows

    def conversations_of(self, bug_id: int) -> set[str]:
        """Every conversation that already reviewed this report (a new review needs a fresh one)."""
        return {row["reviewer_conversation"] for row in
                self.db.execute("SELECT reviewer_conversation FROM skill_bug_decisions WHERE bug = ?", (bug_id,))}

    # ---- what decisions changed -------------------------------------------------------

    def notes(self, skill: str | None = None) -> dict[str, list[str]]:
        """Usage notes from `modify` decisions, per skill, oldest first."""
        result: dict[str, list[str]] = {}
        sql, params = "SELECT skill, bug, note FROM skill_notes", ()
        if skill:
            sql, params = sql + " WHERE skill = ?", (skill,)
        for row in self.db.execute(sql + " ORDER BY seq", params):
            result.setdefault(row["skill"], []).append(f"{row['note']} (bug #{row['bug']})")
        return result

    def removals(self) -> dict[str, dict[str, Any]]:
        return {row["skill"]: dict(row) for row in self.db.execute("SELECT * FROM skill_removals")}

    # ---- promotions -----------------------------------------------------------------

    def record_promotion(self, module: str, name: str, accepted: bool, reasons: str, cases: list[dict[str, Any]],
                         reviewer_model: str, reviewer_conversation: str) -> int:
        return self._write(
            "INSERT INTO skill_promotions (module, name, accepted, reasons, cases, reviewer_model, "
            "reviewer_conversation, at) VALUES (?,?,?,?,?,?,?,?)",
            (module, name, int(accepted), reasons, json.dumps(cases), reviewer_model, reviewer_conversation,
             time.time()))

    def promotions(self, module: str | None = None) -> list[dict[str, Any]]:
        sql, params = "SELECT * FROM skill_promotions", ()
        if module is not None:
            sql, params = sql + " WHERE module = ?", (module,)
        rows = [dict(row) for row in self.db.execute(sql + " ORDER BY seq", params)]
        for row in rows:
            row["cases"] = json.loads(row["cases"])
            row["accepted"] = bool(row["accepted"])
        return rows


def _bug(row: sqlite3.Row) -> BugReport:
    return BugReport(row["id"], row["skill"], row["use_case"], row["expected"], row["observed"], row["notes"],
                     row["reporter"], row["reporter_conversation"], row["reporter_model"], row["status"],
                     row["created"])
