"""A run's journal in SQLite: metadata, one row per side-effecting step, and checkpoints of the whole run state."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orgtree_lang.runtime.blobs import INLINE_BYTES, BlobStore, Spiller
from orgtree_lang.runtime.config import CONFIG_NAME, config_section
from orgtree_lang.runtime.errors import UsageError

JOURNAL_FORMAT = 1
JOURNAL_FILE = "journal.db"
# The highest step number ever committed, kept beside the database and not inside it: a damaged or lost WAL
# takes its committed steps with it, and without a mark elsewhere a resume would silently run them again
# (duplicating their effects when the workspace's state.db ledger is gone too). See docs/durability.md.
MARK_FILE = "journal.mark"

# How far a committed step is safe. Both commit in WAL mode with synchronous=NORMAL: a commit is in the
# operating system before the VM moves on (survives kill -9 and any crash of the process; the database never
# corrupts). power adds group commit: the journal fsyncs its WAL itself, before a step the outside world can
# see runs and right after it is recorded, before output reaches the user, when an attempt ends, and at least
# every GROUP_STEPS steps or GROUP_SECONDS; steps nothing outside sees (clock reads, draws, reads) commit
# without an fsync of their own. A power loss thus takes at most such unseen steps, which a resume runs again.
# process never fsyncs: a power loss may take the last steps of any kind (they run again with their keys).
DURABILITY = ("power", "process")
GROUP_STEPS = 1000  # unseen steps committed at most before an fsync (`[durable] group_steps` in orgtree.toml)
GROUP_SECONDS = 0.5  # the longest an unseen step waits for its fsync, checked as steps commit (`group_ms`)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS steps (
    seq INTEGER PRIMARY KEY,      -- 1, 2, 3 ... in the order the run asked for outside effects
    node TEXT NOT NULL,           -- the run node (pipeline call) that asked
    file TEXT NOT NULL,
    line INTEGER NOT NULL,
    kind TEXT NOT NULL,           -- skill | ambiguous
    name TEXT NOT NULL,           -- e.g. fs.append
    input_hash TEXT NOT NULL,     -- sha256 of the encoded arguments
    source_hash TEXT NOT NULL,    -- the program text that asked (meta `sources` holds the texts)
    ok INTEGER NOT NULL,          -- 1: result holds the value; 0: error holds the failure
    result TEXT,
    error TEXT,
    attempts INTEGER NOT NULL DEFAULT 1,
    finished REAL NOT NULL,
    statement INTEGER,            -- statements the run had started when it asked (`pipe fork --at` counts these)
    inputs TEXT                   -- each argument's first characters, length and hash (durable/inputs.py)
);
CREATE TABLE IF NOT EXISTS checkpoints (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    steps INTEGER NOT NULL,       -- VM steps (statements) done when it was taken
    effect_seq INTEGER NOT NULL,  -- journaled steps done when it was taken
    state TEXT NOT NULL,          -- RunState JSON
    created REAL NOT NULL
);
"""


class JournalError(UsageError):
    """The journal cannot be used: missing, corrupt, from a newer version, or in use."""


@dataclass(frozen=True)
class StepRecord:
    """One journaled step as stored."""

    seq: int
    node: str
    file: str
    line: int
    kind: str
    name: str
    input_hash: str
    source_hash: str
    ok: bool
    result: str | None  # encoded value (JSON text)
    error: dict[str, Any] | None
    attempts: int
    statement: int | None = None  # None in journals written before statements were recorded
    finished: float | None = None
    inputs: str | None = None  # durable.inputs.StepInputs.shown; None in journals written before it was kept


# Columns of `steps` that journals written by older versions lack: each is added when such a journal is written
# to again; reading one (show, replay, fork) leaves it exactly as it was, and what it lacks reads as NULL.
_LATER_COLUMNS = {"statement": "INTEGER", "inputs": "TEXT"}
_STEP_COLUMNS = ("seq, node, file, line, kind, name, input_hash, source_hash, ok, result, error, attempts, finished, "
                 + ", ".join(_LATER_COLUMNS))


class Journal:
    """One run's SQLite journal in WAL mode: a committed step survives kill -9; with durability "power" every step
    the outside world saw, and every step before it, also survives a power loss (group commit, see DURABILITY)."""

    def __init__(self, path: Path, connection: sqlite3.Connection, inline_bytes: int | None = None) -> None:
        self.path = path
        self.db = connection
        self.blobs = spiller_for(path.parent, inline_bytes)
        row = connection.execute("SELECT max(seq) FROM steps").fetchone() if _has_steps(connection) else None
        self._high_seq = (row[0] or 0) if row else 0
        self._later = _later_columns(connection) if _has_steps(connection) else set()
        self._mark_path = path.parent / MARK_FILE
        self._mark = self.committed_mark()
        self._held = False  # inside hold(): writes join one transaction and the mark waits for its commit
        self._power = False  # group commit (durability "power"); set from the metadata by create and open
        self._group = (GROUP_STEPS, GROUP_SECONDS)
        self._unsynced = 0  # commits since the last fsync
        self._unsynced_since = 0.0

    @property
    def fsyncs(self) -> bool:
        """Whether steps the outside world saw are fsynced before the run goes on (durability "power")."""
        return self._power

    def committed_mark(self) -> int:
        """The highest step number this journal ever committed, by the mark file (0 when there is none)."""
        try:
            data = self._mark_path.read_bytes()
        except OSError:
            return 0
        return int.from_bytes(data[:8], "little") if len(data) >= 8 else 0

    def lost_steps(self) -> tuple[int, int] | None:
        """(first, last) step numbers that were committed but are missing now, or None when none are."""
        row = self.db.execute("SELECT max(seq) FROM steps").fetchone()
        have = row[0] or 0
        mark = self.committed_mark()
        return (have + 1, mark) if mark > have else None

    def _set_mark(self, seq: int) -> None:
        # Written after the step commits and lowered before steps are deleted, so it is never above the truth
        # (a mark above it reads as lost steps). Inside hold() it moves only when the transaction commits.
        if self._held:
            return
        fd = os.open(self._mark_path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            os.pwrite(fd, seq.to_bytes(8, "little"), 0)
        finally:
            os.close(fd)
        self._mark = seq

    # ---- opening ------------------------------------------------------------

    @classmethod
    def create(cls, run_dir: Path, meta: dict[str, Any], *, inline_bytes: int | None = None) -> Journal:
        """A new journal with `meta`; `inline_bytes` is the run's `[blobs] inline_bytes` (None reads the file)."""
        run_dir.mkdir(parents=True, exist_ok=True)
        path = run_dir / JOURNAL_FILE
        if path.exists():
            raise JournalError(f"run folder {run_dir} already has a journal")
        durability = meta.get("durability", "power")
        if durability not in DURABILITY:
            raise JournalError(f"unknown durability {durability!r}; choose one of: {', '.join(DURABILITY)}")
        # Build the schema and metadata in a side file and rename it into place, so a kill at any instant
        # leaves either no journal or a complete one.
        draft = run_dir / (JOURNAL_FILE + ".draft")
        draft.unlink(missing_ok=True)
        db = sqlite3.connect(str(draft), isolation_level=None)
        try:
            # The draft is fsynced once below before it becomes the journal; syncing each statement would only
            # add a dozen waits for the disk to every run's start.
            db.execute("PRAGMA journal_mode=OFF")
            db.execute("PRAGMA synchronous=OFF")
            db.executescript(_SCHEMA)
            blobs = spiller_for(run_dir, inline_bytes)
            db.executemany("INSERT INTO meta (key, value) VALUES (?, ?)",
                           [(k, json.dumps(blobs.spill(v))) for k, v in {"format": JOURNAL_FORMAT, **meta}.items()])
        finally:
            db.close()
        fd = os.open(draft, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(draft, path)
        journal = cls(path, _connect(path), inline_bytes)
        journal._configure(meta)
        return journal

    @classmethod
    def open(cls, run_dir: Path, *, inline_bytes: int | None = None) -> Journal:
        """The journal in `run_dir`; `inline_bytes` as for `create` (what a reader passes changes nothing it reads)."""
        path = run_dir / JOURNAL_FILE
        if not path.is_file():
            raise JournalError(f"no journal in {run_dir}")
        connection = None
        try:
            connection = _connect(path)
            journal = cls(path, connection, inline_bytes)
            meta = journal.meta()
            fmt = meta.get("format")
            journal._configure(meta)
            if fmt is None:
                raise JournalError(f"the journal {path} has no format version; it is corrupt or not a journal")
            if fmt > JOURNAL_FORMAT:
                raise JournalError(f"the journal {path} has format {fmt}, newer than this orgtree_lang understands "
                                   f"({JOURNAL_FORMAT}); upgrade orgtree_lang to use it")
        except (sqlite3.DatabaseError, JournalError) as err:
            if connection is not None:
                connection.close()
            if isinstance(err, JournalError):
                raise
            raise JournalError(f"the journal {path} is corrupt ({err}); it was left unchanged") from None
        return journal

    def _configure(self, meta: dict[str, Any]) -> None:
        self._power = meta.get("durability", "power") == "power"
        group = meta.get("group") or {}
        self._group = (group.get("steps", GROUP_STEPS), group.get("seconds", GROUP_SECONDS))

    def close(self) -> None:
        self.sync()
        self.db.close()

    # ---- group commit -------------------------------------------------------

    def sync(self) -> None:
        """Make every commit so far durable (power): fsync the write-ahead log, then raise the mark to match."""
        if not self._power or self._held or not self._unsynced:
            return
        try:
            fd = os.open(f"{self.path}-wal", os.O_RDONLY)
        except FileNotFoundError:
            fd = None  # SQLite folded the log into journal.db, which it fsyncs itself when it does
        if fd is not None:
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self._unsynced = 0
        if self._high_seq > self._mark:
            self._set_mark(self._high_seq)

    def _committed(self, seq: int = 0, urgent: bool = False) -> None:
        """After a commit: count it towards the group (power), or raise the mark at once (process)."""
        if self._held:
            return
        if not self._power:
            if seq > self._mark:
                self._set_mark(seq)
            return
        now = time.monotonic()
        if not self._unsynced:
            self._unsynced_since = now
        self._unsynced += 1
        if urgent or self._unsynced >= self._group[0] or now - self._unsynced_since >= self._group[1]:
            self.sync()

    # ---- metadata -----------------------------------------------------------

    def meta(self) -> dict[str, Any]:
        """Every metadata value, with its big values (stored as blobs) back in place."""
        return {key: json.loads(self.blobs.resolve_text(value))
                for key, value in self.db.execute("SELECT key, value FROM meta")}

    def update_meta(self, **values: Any) -> None:
        with self._writing():
            self._set_meta(values)
        self._committed()

    def _set_meta(self, values: dict[str, Any]) -> None:
        self.db.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                            [(k, json.dumps(self.blobs.spill(v))) for k, v in values.items()])

    def start_over(self, **meta: Any) -> None:
        """Forget every step and checkpoint and update `meta`, in one transaction (`pipe resume --from-scratch`)."""
        if self._mark:
            self._set_mark(0)
        with self._writing():
            self.db.execute("DELETE FROM steps")
            self.db.execute("DELETE FROM checkpoints")
            self._set_meta(meta)
        self._high_seq = 0
        self._committed()

    # ---- steps --------------------------------------------------------------

    def record(self, seq: int, node: str, file: str, line: int, kind: str, name: str, digest: str,
               source_hash: str, ok: bool, result: str | None, error: dict[str, Any] | None,
               statement: int | None = None, attempts: int | None = None, finished: float | None = None,
               observed: bool = True, inputs: str | None = None) -> None:
        """Commit one finished step; a repeat of an in-flight step (same seq) replaces it and counts an attempt
        (unless `attempts` says how many there were: a step copied by a retry keeps its count and its time).
        An `observed` step (one the outside world saw) is fsynced before this returns; others join the group."""
        for column in _LATER_COLUMNS.keys() - self._later:
            with self._writing():
                self.db.execute(f"ALTER TABLE steps ADD COLUMN {column} {_LATER_COLUMNS[column]}")
            self._later.add(column)
        with self._writing():
            if attempts is None:
                attempts = 1
                if seq <= self._high_seq:  # a repeat: count the attempt (a new step needs no lookup)
                    previous = self.db.execute("SELECT attempts FROM steps WHERE seq = ?", (seq,)).fetchone()
                    attempts = previous[0] + 1 if previous else 1
            self._high_seq = max(self._high_seq, seq)
            self.db.execute(
                f"INSERT OR REPLACE INTO steps ({_STEP_COLUMNS}) VALUES ({', '.join('?' * 15)})",
                (seq, node, file, line, kind, name, digest, source_hash, int(ok), self.blobs.spill_text(result),
                 json.dumps(error) if error is not None else None, attempts, finished or time.time(), statement,
                 inputs),
            )
        self._committed(seq, observed)

    def forget_steps_from(self, seq: int) -> None:
        """Delete the steps numbered `seq` and above (work of a block that crashed and is being redone)."""
        if self._mark >= seq:
            self._set_mark(seq - 1)
        with self._writing():
            self.db.execute("DELETE FROM steps WHERE seq >= ?", (seq,))
        self._high_seq = min(self._high_seq, seq - 1)
        self._committed()

    def steps(self) -> dict[int, StepRecord]:
        rows = self.db.execute(f"SELECT {self._readable_columns()} FROM steps ORDER BY seq")
        return {row[0]: StepRecord(row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], bool(row[8]),
                                   self.blobs.resolve_text(row[9]), json.loads(row[10]) if row[10] else None,
                                   row[11], row[13], row[12], row[14])
                for row in rows}

    def _readable_columns(self) -> str:
        """`_STEP_COLUMNS`, with NULL for each later column this journal does not have."""
        return ", ".join(c if c not in _LATER_COLUMNS or c in self._later else "NULL" for c in _STEP_COLUMNS.split(", "))

    def truncate_steps(self, after_seq: int) -> None:
        """Forget steps after `after_seq` (they belong to a path the run no longer takes)."""
        if self._mark > after_seq:
            self._set_mark(after_seq)
        with self._writing():
            self.db.execute("DELETE FROM steps WHERE seq > ?", (after_seq,))
        self._high_seq = min(self._high_seq, after_seq)
        self._committed()

    def copy_steps_to(self, other: Journal, up_to_seq: int) -> None:
        rows = self.db.execute(f"SELECT {self._readable_columns()} FROM steps WHERE seq <= ? ORDER BY seq",
                               (up_to_seq,)).fetchall()
        with other.db:
            other.db.executemany(f"INSERT INTO steps ({_STEP_COLUMNS}) VALUES ({', '.join('?' * 15)})", rows)
        if rows:
            other._high_seq = max(other._high_seq, rows[-1][0])
            other._committed(rows[-1][0], urgent=True)

    # ---- one transaction for a whole attempt ------------------------------------

    def hold(self) -> None:
        """Start one transaction that every write joins until `commit()` or `rollback()`: a process killed in
        between leaves the journal exactly as it was before `hold()` (SQLite drops the uncommitted WAL frames)."""
        self.db.execute("BEGIN IMMEDIATE")
        self._held = True

    def commit(self) -> None:
        """Commit what was written since `hold()`, with the committed-step mark kept never above the steps."""
        high = self.db.execute("SELECT max(seq) FROM steps").fetchone()[0] or 0
        self._held = False
        if high < self._mark:
            self._set_mark(high)
        self.db.commit()
        self._high_seq = high
        self._committed(high, urgent=True)

    def rollback(self) -> None:
        """Forget what was written since `hold()`."""
        self.db.rollback()
        self._held = False
        self._high_seq = self.db.execute("SELECT max(seq) FROM steps").fetchone()[0] or 0

    def _writing(self):
        """The transaction a write goes in: its own, or the one `hold()` keeps open."""
        return contextlib.nullcontext() if self._held else self.db

    # ---- checkpoints --------------------------------------------------------

    def checkpoint(self, steps: int, effect_seq: int, state: str | dict[str, Any]) -> None:
        """Save a run state (RunState.to_json(), or its JSON text); its big values are stored once, as blobs."""
        text = json.dumps(self.blobs.spill(state, generation=True)) if isinstance(state, dict) \
            else self.blobs.spill_text(state)
        with self._writing():
            self.db.execute("INSERT INTO checkpoints (steps, effect_seq, state, created) VALUES (?, ?, ?, ?)",
                            (steps, effect_seq, text, time.time()))
            # Older checkpoints are kept only as far back as `pipe fork` is likely to want them.
            self.db.execute("DELETE FROM checkpoints WHERE id NOT IN "
                            "(SELECT id FROM checkpoints ORDER BY id DESC LIMIT 50)")
        self._committed()

    def latest_checkpoint(self) -> tuple[int, int, str] | None:
        """(steps, effect_seq, state JSON with its blobs resolved) of the newest checkpoint, or None."""
        row = self.db.execute("SELECT steps, effect_seq, state FROM checkpoints ORDER BY id DESC LIMIT 1").fetchone()
        return (row[0], row[1], self.blobs.resolve_text(row[2])) if row else None

    def checkpoint_at_or_before(self, steps: int) -> tuple[int, int, str] | None:
        row = self.db.execute("SELECT steps, effect_seq, state FROM checkpoints WHERE steps <= ? "
                              "ORDER BY steps DESC, id DESC LIMIT 1", (steps,)).fetchone()
        return (row[0], row[1], self.blobs.resolve_text(row[2])) if row else None

    def integrity_ok(self) -> bool:
        return self.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def spiller_for(run_dir: Path, inline_bytes: int | None = None) -> Spiller:
    """How a journal in `run_dir` stores big values: in its workspace's `.orgtree/blobs/` (shared by every run of
    the workspace, so a value is stored once), above `inline_bytes` (the run's `[blobs] inline_bytes`; None reads
    the workspace's orgtree.toml). A journal outside a workspace's `.orgtree/runs/` keeps its blobs in its own
    folder."""
    run_dir = Path(run_dir)
    threshold = INLINE_BYTES
    if run_dir.parent.name == "runs" and run_dir.parent.parent.name == ".orgtree":
        state = run_dir.parent.parent
        if inline_bytes is None:
            inline_bytes = config_section("blobs", state.parent / CONFIG_NAME, types={"inline_bytes": int}).get(
                "inline_bytes")
        threshold = max(256, inline_bytes if inline_bytes is not None else INLINE_BYTES)
        return Spiller(BlobStore(state / "blobs"), threshold)
    return Spiller(BlobStore(run_dir / "blobs"), threshold)


def _later_columns(db: sqlite3.Connection) -> set[str]:
    return {row[1] for row in db.execute("PRAGMA table_info(steps)")} & _LATER_COLUMNS.keys()


def _has_steps(db: sqlite3.Connection) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='steps'").fetchone() is not None


def _connect(path: Path) -> sqlite3.Connection:
    # Blocks resolved concurrently journal from threads of their own, one at a time (org/runlock.py).
    db = sqlite3.connect(str(path), isolation_level=None, timeout=10, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA busy_timeout=10000")
    # `with db:` needs transactions managed by the module, so switch back to deferred transactions.
    db.isolation_level = "DEFERRED"
    return db
