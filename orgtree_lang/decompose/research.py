"""The author's "needs research" answer: a block that cannot be written without facts it lacks; kept in state.db."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

from orgtree_lang.runtime.state_db import Transaction, open_state_db, state_db_path

_JSON_FENCE = re.compile(r"```(?:json)?[ \t]*\n(.*?)```", re.S)


INSTRUCTIONS = """\
If the step cannot be written without facts you do not have (an unknown API, data format or rule), do not
guess: answer instead with one ```json block {"needs_research": {"reasons": ["..."], "questions": ["..."]}}."""


@dataclass
class ResearchNeed:
    reasons: list[str]
    questions: list[str]


def needs_research(answer: str) -> ResearchNeed | None:
    """The structured "needs research" answer in `answer`, if that is what it is."""
    for body in _JSON_FENCE.findall(answer) or [answer]:
        try:
            data = json.loads(body.strip())
        except json.JSONDecodeError:
            continue
        need = data.get("needs_research") if isinstance(data, dict) else None
        if isinstance(need, dict):
            reasons = [str(r) for r in need.get("reasons", []) if str(r).strip()]
            questions = [str(q) for q in need.get("questions", []) if str(q).strip()]
            return ResearchNeed(reasons or ["(no reason given)"], questions)
    return None


def record_need(workspace: Path | str, block: str, spec_hash: str, parent: str, need: ResearchNeed, model: str,
                conversation: str) -> None:
    db = open_state_db(state_db_path(workspace))
    try:
        with Transaction(db):
            db.execute("INSERT INTO research_needs (block, spec_hash, parent, reasons, questions, model, "
                       "conversation, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       (block, spec_hash, parent, json.dumps(need.reasons), json.dumps(need.questions), model,
                        conversation, time.time()))
    finally:
        db.close()


def recorded_needs(workspace: Path | str) -> list[dict]:
    """Every recorded need, oldest first."""
    db = open_state_db(state_db_path(workspace))
    try:
        rows = db.execute("SELECT * FROM research_needs ORDER BY seq").fetchall()
        return [{**dict(r), "reasons": json.loads(r["reasons"]), "questions": json.loads(r["questions"])}
                for r in rows]
    finally:
        db.close()
