"""The human node's inbox in state.db: the questions runs and runtime code put to people, their answers, and the
notes runs send people (`send "human", value`)."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orgtree_lang.runtime.errors import UsageError
from orgtree_lang.runtime.people import APPROVAL_WORDS, parse_approval
from orgtree_lang.runtime.state_db import Transaction, open_state_db, state_db_path
from orgtree_lang.syntax.errors import EXIT_WAITING, PipeError

_REF = re.compile(r"^h(\d+)$")
_NOTE_REF = re.compile(r"^n(\d+)$")


@dataclass(frozen=True)
class Question:
    """One question to the human node, open or answered. `ref` (h<id>) is what `pipe reply` takes."""

    id: int
    key: str
    run_id: str | None
    seq: int | None
    node: str
    kind: str  # ask | approve
    question: str
    file: str
    line: int
    status: str  # open | answered
    answer: Any
    asked: float
    answered: float | None

    @property
    def ref(self) -> str:
        return f"h{self.id}"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.ref, "run": self.run_id, "step": self.seq, "node": self.node, "kind": self.kind,
                "question": self.question, "at": f"{self.file}:{self.line}" if self.file else "",
                "status": self.status, "answer": self.answer, "asked": self.asked, "answered": self.answered}


@dataclass(frozen=True)
class Note:
    """A note a run sent the human node: it needs no answer, and stays in `pipe inbox` until it is marked read."""

    id: int
    key: str
    run_id: str | None
    node: str
    topic: str
    text: str
    file: str
    line: int
    status: str  # unread | read
    sent: float

    @property
    def ref(self) -> str:
        return f"n{self.id}"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.ref, "run": self.run_id, "node": self.node, "kind": "note", "topic": self.topic,
                "text": self.text, "at": f"{self.file}:{self.line}" if self.file else "", "status": self.status,
                "sent": self.sent}


class AwaitingHuman(PipeError):
    """Raised by `Inbox.ask` while a question has no answer: the caller's work waits for a person (exit 75)."""

    exit_code = EXIT_WAITING

    def __init__(self, question: Question) -> None:
        super().__init__(f"waiting for a person to answer {question.ref}: {question.question}",
                         hint=f"answer with `pipe reply {question.ref} TEXT`"
                              + (f" ({APPROVAL_WORDS})" if question.kind == "approve" else "")
                              + ", then run this again")
        self.question = question


def answer_value(kind: str, text: str) -> Any:
    """The value an answer's text gives the asker: the text for `ask`, a bool for `approve` (else a UsageError)."""
    if kind != "approve":
        return text
    value = parse_approval(text)
    if value is None:
        raise UsageError(f"approve(...) takes only {APPROVAL_WORDS} as an answer, got {text!r}",
                         hint="answer `pipe reply RUN yes` or `pipe reply RUN no`")
    return value


class Inbox:
    """Reads and writes the `human_questions` table of one workspace's state.db."""

    def __init__(self, db_path: Path | str) -> None:
        self.db = open_state_db(db_path)

    @classmethod
    def for_workspace(cls, root: Path | str) -> Inbox:
        return cls(state_db_path(root))

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Inbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- asking ------------------------------------------------------------------------------

    def post(self, key: str, kind: str, question: str, *, run_id: str | None = None, seq: int | None = None,
             node: str = "", file: str = "", line: int = 0) -> Question:
        """Put a question in the inbox once: asking again under the same key keeps its id (and its answer)."""
        if kind not in ("ask", "approve"):
            raise ValueError(f"a question is `ask` or `approve`, got {kind!r}")
        with Transaction(self.db):
            row = self.db.execute("SELECT status FROM human_questions WHERE key = ?", (key,)).fetchone()
            if row is None:
                self.db.execute(
                    "INSERT INTO human_questions (key, run_id, seq, node, kind, question, file, line, status, asked)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'open', ?)",
                    (key, run_id, seq, node, kind, question, file, line, time.time()))
            elif row["status"] == "open":
                self.db.execute("UPDATE human_questions SET kind = ?, question = ?, node = ?, file = ?, line = ? "
                                "WHERE key = ?", (kind, question, node, file, line, key))
        return self.get(key)

    def ask(self, key: str, question: str, *, kind: str = "ask", about: str = "") -> Any:
        """The escalation API for runtime code outside a run (docs/org.md): the answer a person gave to the
        question under `key` (a str, or a bool for kind `approve`); until there is one, the question waits in
        `pipe inbox` and this raises AwaitingHuman (exit 75). Ask again with the same key to get the answer."""
        posted = self.post(key, kind, question, node=about)
        if posted.status == "answered":
            return posted.answer
        raise AwaitingHuman(posted)

    # ---- reading -----------------------------------------------------------------------------

    def get(self, key: str) -> Question | None:
        row = self.db.execute("SELECT * FROM human_questions WHERE key = ?", (key,)).fetchone()
        return _question(row) if row is not None else None

    def find(self, ref: str) -> Question | None:
        """The question `ref` names: h<id>, as `pipe inbox` shows it."""
        match = _REF.match(ref.strip())
        if match is None:
            return None
        row = self.db.execute("SELECT * FROM human_questions WHERE id = ?", (int(match.group(1)),)).fetchone()
        return _question(row) if row is not None else None

    def open_questions(self, run_id: str | None = None) -> list[Question]:
        """Open questions, oldest first (of one run, when `run_id` is given)."""
        if run_id is None:
            rows = self.db.execute("SELECT * FROM human_questions WHERE status = 'open' ORDER BY asked, id")
        else:
            rows = self.db.execute("SELECT * FROM human_questions WHERE status = 'open' AND run_id = ? "
                                   "ORDER BY asked, id", (run_id,))
        return [_question(row) for row in rows]

    # ---- notes -------------------------------------------------------------------------------

    def note(self, key: str, text: str, *, run_id: str | None = None, node: str = "", topic: str = "note",
             file: str = "", line: int = 0) -> Note:
        """Put a note in the inbox once: a second note under the same key (a resumed run) changes nothing."""
        with Transaction(self.db):
            self.db.execute("INSERT OR IGNORE INTO human_notes (key, run_id, node, topic, text, file, line, status, "
                            "sent) VALUES (?, ?, ?, ?, ?, ?, ?, 'unread', ?)",
                            (key, run_id, node, topic, text, file, line, time.time()))
        return _note(self.db.execute("SELECT * FROM human_notes WHERE key = ?", (key,)).fetchone())

    def unread_notes(self) -> list[Note]:
        return [_note(row) for row in
                self.db.execute("SELECT * FROM human_notes WHERE status = 'unread' ORDER BY sent, id")]

    def mark_read(self, refs: list[str]) -> list[Note]:
        """Mark notes read (n<id>, or `all` for every unread note): they leave `pipe inbox`."""
        if refs == ["all"]:
            chosen = self.unread_notes()
        else:
            chosen = []
            for ref in refs:
                match = _NOTE_REF.match(ref.strip())
                row = self.db.execute("SELECT * FROM human_notes WHERE id = ?", (int(match.group(1)),)).fetchone() \
                    if match else None
                if row is None:
                    raise UsageError(f"no note {ref!r} in this workspace's inbox",
                                     hint="`pipe inbox` lists the unread notes (n1, n2, ...); `--read all` takes all")
                chosen.append(_note(row))
        with Transaction(self.db):
            self.db.executemany("UPDATE human_notes SET status = 'read' WHERE id = ?", [(n.id,) for n in chosen])
        return chosen

    # ---- answering ---------------------------------------------------------------------------

    def record_answer(self, key: str, value: Any) -> None:
        """Mark the question answered with `value` (already checked against its kind)."""
        with Transaction(self.db):
            self.db.execute("UPDATE human_questions SET status = 'answered', answer = ?, answered = ? WHERE key = ?",
                            (json.dumps(value), time.time(), key))

    def forget_run(self, run_id: str) -> None:
        """Drop a run's questions and answers: it starts over (`pipe resume --from-scratch`), its journal forgot
        the answers, and it asks again when it gets there."""
        with Transaction(self.db):
            self.db.execute("DELETE FROM human_questions WHERE run_id = ?", (run_id,))


def run_key(run_id: str, seq: int) -> str:
    """The inbox key of a run's question: the run and the journal step that takes its answer."""
    return f"{run_id}:{seq}"


def _question(row) -> Question:
    return Question(row["id"], row["key"], row["run_id"], row["seq"], row["node"], row["kind"], row["question"],
                    row["file"], row["line"], row["status"],
                    json.loads(row["answer"]) if row["answer"] is not None else None, row["asked"], row["answered"])


def _note(row) -> Note:
    return Note(row["id"], row["key"], row["run_id"], row["node"], row["topic"], row["text"], row["file"], row["line"],
                row["status"], row["sent"])
