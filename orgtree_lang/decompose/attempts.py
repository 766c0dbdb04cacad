"""Every answer an author model gave while a module was written or repaired, with its problems, in state.db."""

from __future__ import annotations

import json
import time
from pathlib import Path

from orgtree_lang.runtime.state_db import Transaction, open_state_db, state_db_path


class AttemptLog:
    """Appends to and reads the `decompose_attempts` table of one workspace's state.db."""

    def __init__(self, workspace: Path | str) -> None:
        self.db = open_state_db(state_db_path(workspace))

    def close(self) -> None:
        self.db.close()

    def record(self, block: str, spec_hash: str, attempt: int, phase: str, model: str, conversation: str,
               answer: str, problems: list[str]) -> None:
        with Transaction(self.db):
            self.db.execute("INSERT INTO decompose_attempts (block, spec_hash, attempt, phase, model, conversation, "
                            "answer, problems, accepted, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            (block, spec_hash, attempt, phase, model, conversation, answer, json.dumps(problems),
                             int(not problems), time.time()))

    def for_spec(self, spec_hash: str) -> list[dict]:
        rows = self.db.execute("SELECT * FROM decompose_attempts WHERE spec_hash = ? ORDER BY seq", (spec_hash,))
        return [{**dict(r), "problems": json.loads(r["problems"]), "accepted": bool(r["accepted"])} for r in rows]
