"""Find, lock and list the run folders of a workspace (`.orgtree/runs/<id>/`)."""

from __future__ import annotations

import fcntl
import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orgtree_lang.durable.journal import JOURNAL_FILE, Journal, JournalError

LOCK_FILE = "lock"


def runs_dir(workspace: Path) -> Path:
    return Path(workspace) / ".orgtree" / "runs"


def find_run(workspace: Path, ref: str) -> Path:
    """The folder of run `ref` (an id, a unique prefix of one, or a path to a run folder)."""
    as_path = Path(ref)
    if (as_path / JOURNAL_FILE).is_file():
        return as_path
    folder = runs_dir(workspace)
    if (folder / ref / JOURNAL_FILE).is_file():
        return folder / ref
    matches = sorted(p for p in folder.glob(f"{ref}*") if (p / JOURNAL_FILE).is_file()) if folder.is_dir() else []
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise JournalError(f"run id `{ref}` is ambiguous: {', '.join(p.name for p in matches[:5])}")
    raise JournalError(f"no run `{ref}` in {folder}; `pipe runs` lists the runs of a workspace "
                       "(use --workspace for another folder)")


class RunLock:
    """An exclusive lock on a run folder, held while a process runs or resumes it."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise JournalError(f"run {self.path.parent.name} is in use by process {holder}; "
                               "wait for it to finish or stop it first") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def is_locked(run_dir: Path) -> bool:
    """True if some process holds the run's lock right now."""
    try:
        with RunLock(run_dir):
            return False
    except JournalError:
        return True


@dataclass
class RunSummary:
    """One line of `pipe runs`."""

    run_id: str
    program: str
    status: str
    started: float
    duration: float
    steps: int
    meta: dict[str, Any]


def list_runs(workspace: Path) -> list[RunSummary]:
    """Every run with a readable journal, oldest first; a running run whose lock is free is `crashed`."""
    summaries = []
    folder = runs_dir(workspace)
    for run_dir in sorted(folder.iterdir()) if folder.is_dir() else []:
        if not (run_dir / JOURNAL_FILE).is_file():
            continue
        try:
            journal = Journal.open(run_dir)
            try:
                meta = view_meta(run_dir, journal)
            finally:
                journal.close()
        except JournalError as err:
            summaries.append(RunSummary(run_dir.name, "?", f"unreadable: {err}", 0, 0, 0, {}))
            continue
        summaries.append(RunSummary(run_dir.name, meta.get("program", "?"), effective_status(run_dir, meta),
                                    meta.get("created", 0), meta.get("elapsed", 0.0), meta.get("steps", 0), meta))
    return sorted(summaries, key=lambda s: s.started)


def view_meta(run_dir: Path, journal: Journal) -> dict[str, Any]:
    """The run's metadata as the views show it. The metadata is only brought up to date when an attempt ends, so
    for a run still running, or whose process died, the counters and printed lines are those of its last
    checkpoint or of the figures it wrote meanwhile (`progress`: while it waited long for a call, and about once a
    second otherwise), whichever is later."""
    meta = journal.meta()
    if effective_status(run_dir, meta) not in ("running", "crashed"):
        return meta
    progress = meta.get("progress") or {}
    # Only the newer of the two is read whole: a checkpoint holds the run's entire state.
    row = journal.db.execute("SELECT steps, created FROM checkpoints ORDER BY id DESC LIMIT 1").fetchone()
    latest = progress
    if row is not None and row[0] > progress.get("steps", 0):
        checkpoint = journal.latest_checkpoint()
        latest = {**json.loads(checkpoint[2]), "taken": row[1]} if checkpoint is not None else progress
    if latest.get("steps", 0) <= meta.get("steps", 0):
        return meta
    # The state's own clock only counts stretches that ended; the time it was taken covers the one still going.
    taken = latest.get("taken", meta.get("created", 0.0))
    elapsed = max(latest.get("elapsed", 0.0), meta.get("elapsed", 0.0) + taken - meta.get("created", taken))
    return {**meta, "steps": latest["steps"], "elapsed": elapsed,
            "output": latest.get("output", []), "skill_calls": latest.get("skill_calls", meta.get("skill_calls", 0)),
            "messages": latest.get("messages", meta.get("messages", []))}


def effective_status(run_dir: Path, meta: dict[str, Any]) -> str:
    status = meta.get("status", "?")
    if status == "running" and not is_locked(run_dir):
        return "crashed"
    return status


def new_run_id() -> str:
    """A fresh run id: twelve hex digits."""
    return uuid.uuid4().hex[:12]
