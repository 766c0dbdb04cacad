"""The shared scratchpad: every agent's notes, appended in lock turns to the `pad_notes` table of state.db."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from orgtree_lang.memory.lock import PadLock, Recovery
from orgtree_lang.memory.statedb import StateError
from orgtree_lang.runtime.state_db import Transaction, open_state_db

LOCK_FILE = "pad.lock"
RECOVERY_AGENT = "pad"
KINDS = ("plan", "plan_changed", "lock_recovered")


class PadProtocolError(StateError):
    """A turn broke the scratchpad protocol (for example it released the lock without writing its plan)."""


@dataclass(frozen=True)
class Note:
    """One scratchpad entry as stored."""

    seq: int
    turn: int
    agent: str
    kind: str
    text: str
    before: str
    why: str
    now: str
    pid: int
    at: float
    key: str | None = None

    def render(self) -> str:
        """The note as agents read it: `[#12 planner] plan: ...`."""
        return f"[#{self.seq} {self.agent}] {'plan: ' if self.kind == 'plan' else ''}{self.text}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def plan_changed_text(before: str, why: str, now: str) -> str:
    text = f"plan changed. before: {before.strip()} / why: {why.strip()}"
    return text + (f" / now: {now.strip()}" if now.strip() else " / now: not decided yet")


def _say(recovery: Recovery) -> None:
    print(f"warning: {recovery.message()}", file=sys.stderr)


class Scratchpad:
    """The append-only log of every agent's notes, shared by all threads and processes of a workspace.

    Writing follows the protocol of the design: `with pad.turn(agent) as turn:` waits for the lock and takes
    it; `turn.recent()` reads what others wrote since the agent's last note; then the agent writes exactly
    one of `turn.plan(text)` or `turn.plan_changed(before, why, now)`; leaving the block releases the lock.
    """

    def __init__(self, db_path: Path | str, lock_path: Path | str | None = None, *,
                 on_recover: Callable[[Recovery], None] = _say) -> None:
        self.path = Path(db_path)
        self.lock_path = Path(lock_path) if lock_path is not None else self.path.parent / LOCK_FILE
        self.on_recover = on_recover
        self.db = open_state_db(self.path)
        self._db_lock = self.db.write_lock

    @classmethod
    def for_workspace(cls, workspace_root: Path | str, **kw: Any) -> Scratchpad:
        """The scratchpad in `<workspace>/.orgtree/state.db`, locked through `<workspace>/.orgtree/pad.lock`."""
        from orgtree_lang.runtime.state_db import state_db_path

        return cls(state_db_path(workspace_root), **kw)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Scratchpad:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the protocol -------------------------------------------------------------------------------------

    @contextmanager
    def turn(self, agent: str, *, timeout: float | None = 60.0) -> Iterator[Turn]:
        """Hold the lock for one turn of `agent`; the turn must write its plan or a plan-changed note."""
        if not agent.strip():
            raise PadProtocolError("a scratchpad turn needs the agent's name, got an empty one",
                                   hint="name the agent that writes, e.g. `planner` or the run node id")
        lock = PadLock(self.lock_path)
        recovery = lock.acquire(agent, timeout, floor=self._last_turn())
        assert lock.holder is not None
        try:
            turn = Turn(self, agent.strip(), lock.holder.turn)
            if recovery is not None:
                self._append(turn.number, RECOVERY_AGENT, "lock_recovered", recovery.message())
                self.on_recover(recovery)
            yield turn
            if not turn.written:
                raise PadProtocolError(
                    f"agent {agent!r} held the scratchpad lock for turn {turn.number} but wrote neither its plan "
                    "nor a plan-changed note",
                    hint="inside a turn call turn.plan(text), or turn.plan_changed(before, why, now) when what "
                         "you read changes your plan")
        finally:
            lock.release()

    def note(self, agent: str, plan: str, *, before: str = "", why: str = "", key: str | None = None,
             timeout: float | None = 60.0) -> tuple[Note, list[Note]]:
        """One whole turn: lock, read what others wrote since `agent`'s last note, write, release.

        With `before` and `why` the note is "plan changed: before / why / now" (`plan` is the now part),
        otherwise it is the plan. Returns the note and the notes by others written between `agent`'s previous
        note and this one. A `key` already used returns that call's note again and writes nothing."""
        if bool(before.strip()) != bool(why.strip()):
            raise PadProtocolError("a plan-changed note needs both `before` (what you meant to do) and `why` "
                                   f"(what changed it); got before={before!r}, why={why!r}",
                                   hint="give both, or neither for a plain plan")
        with self.turn(agent, timeout=timeout) as turn:
            done = self.notes_by_key(key) if key else []
            if done:
                turn.written = done[0]
            elif before.strip():
                turn.key = key
                turn.plan_changed(before, why, plan)
            else:
                turn.key = key
                turn.plan(plan)
        assert turn.written is not None
        return turn.written, self.unseen_before(turn.written)

    def unseen_before(self, note: Note) -> list[Note]:
        """The notes by others written after `note.agent`'s previous note and before `note`."""
        with self._db_lock:
            previous = self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM pad_notes WHERE agent = ? AND seq < ?",
                                       (note.agent, note.seq)).fetchone()[0]
        return [n for n in self.notes_between(previous + 1, note.seq - 1) if n.agent != note.agent]

    # -- reading ------------------------------------------------------------------------------------------

    def notes(self, *, after: int = 0, agent: str | None = None, limit: int | None = None) -> list[Note]:
        """Notes with seq > `after` (of one agent, if given), oldest first; with `limit`, only the newest so many."""
        sql, args = "SELECT * FROM pad_notes WHERE seq > ?", [after]
        if agent is not None:
            sql += " AND agent = ?"
            args.append(agent)
        if limit is not None:
            sql = f"SELECT * FROM ({sql} ORDER BY seq DESC LIMIT ?)"
            args.append(limit)
        return self._notes(sql + " ORDER BY seq", tuple(args))

    def notes_by_key(self, key: str) -> list[Note]:
        """The note a step with idempotency key `key` wrote (a repeated step finds it and writes nothing)."""
        return self._notes("SELECT * FROM pad_notes WHERE key = ? ORDER BY seq", (key,))

    def notes_between(self, first: int, last: int) -> list[Note]:
        """Notes with `first` <= seq <= `last`, oldest first."""
        return self._notes("SELECT * FROM pad_notes WHERE seq BETWEEN ? AND ? ORDER BY seq", (first, last))

    def last_seq(self) -> int:
        with self._db_lock:
            return self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM pad_notes").fetchone()[0]

    def last_seq_of(self, agent: str) -> int:
        """The seq of `agent`'s newest note (0 if it wrote none)."""
        with self._db_lock:
            return self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM pad_notes WHERE agent = ?",
                                   (agent,)).fetchone()[0]

    def count(self) -> int:
        with self._db_lock:
            return self.db.execute("SELECT COUNT(*) FROM pad_notes").fetchone()[0]

    def _last_turn(self) -> int:
        with self._db_lock:
            return self.db.execute("SELECT COALESCE(MAX(turn), 0) FROM pad_notes").fetchone()[0]

    def _notes(self, sql: str, args: tuple[Any, ...]) -> list[Note]:
        with self._db_lock:
            return [Note(**dict(row)) for row in self.db.execute(sql, args).fetchall()]

    # -- writing (only inside a turn) ---------------------------------------------------------------------

    def _append(self, turn: int, agent: str, kind: str, text: str, before: str = "", why: str = "",
                now: str = "", key: str | None = None) -> Note:
        at = time.time()
        with Transaction(self.db) as db:
            cursor = db.execute(
                "INSERT INTO pad_notes (turn, agent, kind, text, before, why, now, pid, at, key) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (turn, agent, kind, text, before, why, now, os.getpid(), at, key))
            seq = cursor.lastrowid
        assert seq is not None
        return Note(seq, turn, agent, kind, text, before, why, now, os.getpid(), at, key)


class Turn:
    """One agent's hold on the scratchpad lock: read what is new, then write the plan or how it changed."""

    def __init__(self, pad: Scratchpad, agent: str, number: int) -> None:
        self.pad = pad
        self.agent = agent
        self.number = number
        self.written: Note | None = None
        self.key: str | None = None  # the idempotency key the note is written under

    def recent(self, limit: int = 50) -> list[Note]:
        """What the other agents wrote since this agent's last note (the newest `limit` of them), oldest first."""
        since = self.pad.last_seq_of(self.agent)
        return [n for n in self.pad.notes(after=since, limit=limit) if n.agent != self.agent]

    def plan(self, text: str) -> Note:
        """Nothing read changes the plan: write down what the agent is about to do."""
        if not text.strip():
            raise PadProtocolError(f"agent {self.agent!r} wrote an empty plan", hint="say what you are about to do")
        return self._write("plan", text.strip())

    def plan_changed(self, before: str, why: str, now: str = "") -> Note:
        """What was read changes the plan: what the agent meant to do, why that changed, and (if known) what now."""
        if not before.strip() or not why.strip():
            raise PadProtocolError(
                f"agent {self.agent!r}: a plan-changed note needs what you planned before and why it changed; "
                f"got before={before!r}, why={why!r}", hint="turn.plan_changed(before=..., why=..., now=...)")
        return self._write("plan_changed", plan_changed_text(before, why, now), before.strip(), why.strip(),
                           now.strip())

    def _write(self, kind: str, text: str, before: str = "", why: str = "", now: str = "") -> Note:
        if self.written is not None:
            raise PadProtocolError(
                f"agent {self.agent!r} already wrote note #{self.written.seq} in turn {self.number}; "
                "one turn writes one plan or one plan-changed note", hint="start a new turn for the next step")
        self.written = self.pad._append(self.number, self.agent, kind, text, before, why, now, self.key)
        return self.written
