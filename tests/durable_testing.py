"""Helpers for the durable-run tests: run the real `pipe` CLI (in a subprocess when it must crash), with every real
skill execution logged.

`python tests/durable_testing.py ARGS...` is `pipe ARGS...` (it calls orgtree_lang.cli.main.main) with one change
when PIPE_TEST_EXEC_LOG is set: each non-pure skill of the registry is wrapped so that every time it really
executes (as opposed to its result coming from the journal) it first appends one line
`<skill name> <idempotency key>` to that file with a plain O_APPEND write. The write has no key and no ledger,
so it counts executions, repeats included; a SIGKILL cannot lose it (it is in the kernel once write returns).
With PIPE_TEST_KILL_AFTER=SKILL:N as well, the process SIGKILLs itself right after the N-th execution of SKILL:
a crash with that step in flight, at a chosen place. With PIPE_TEST_SYNC_COPY set, every time a journal fsyncs its
write-ahead log the log is copied to `journal.db-wal.synced` beside it: what a power loss would leave of it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
EXEC_LOG_ENV = "PIPE_TEST_EXEC_LOG"
KILL_AFTER_ENV = "PIPE_TEST_KILL_AFTER"  # "SKILL:N", see counting_registry (needs PIPE_TEST_EXEC_LOG)
SYNC_COPY_ENV = "PIPE_TEST_SYNC_COPY"  # "1": keep a copy of each journal's WAL as of its last fsync
MODEL_LOG_ENV = "PIPE_TEST_MODEL_LOG"  # a file: one line per scripted model call really made (not from a journal)
KILL_AT_MODEL_ENV = "PIPE_TEST_KILL_AT_MODEL"  # "NEEDLE:N": SIGKILL once the N-th call asking NEEDLE has answered
TIMEOUT = 60  # seconds for any one CLI call


def _log_line(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)


def counting_registry(registry, log_path: str, kill_after: str | None = None):
    """The registry with every non-pure skill wrapped to log its real executions to `log_path`.

    `kill_after` = "SKILL:N": the process SIGKILLs itself right after the N-th real execution of SKILL has
    returned (its effect happened, its journal row is not written yet): a crash with that step in flight."""
    kill_name, _, kill_count = (kill_after or "").partition(":")
    executed: dict[str, int] = {}
    for name in registry.names():
        skill = registry.get(name)
        if skill.pure:
            continue

        def wrapped(__skill=skill, **call):
            ctx = call.get("ctx")
            key = getattr(ctx, "idempotency_key", None)
            _log_line(log_path, f"{__skill.name} {key}\n")
            result = __skill.func(**call)
            executed[__skill.name] = executed.get(__skill.name, 0) + 1
            if __skill.name == kill_name and executed[__skill.name] == int(kill_count):
                os.kill(os.getpid(), signal.SIGKILL)
            return result

        registry._skills[name] = dataclasses.replace(skill, func=wrapped)
    return registry


def exec_log(path: Path) -> list[tuple[str, str]]:
    """The (skill, key) pairs of an execution log, in order."""
    if not path.is_file():
        return []
    return [tuple(line.split(" ", 1)) for line in path.read_text(encoding="utf-8").splitlines() if line]


def cli_env(exec_log_path: Path | None = None, kill_after: str | None = None,
            sync_copy: bool = False) -> dict[str, str]:
    env = dict(os.environ)
    env["PIPE_NO_PLUGINS"] = "1"
    env.pop(EXEC_LOG_ENV, None)
    env.pop(KILL_AFTER_ENV, None)
    env.pop(SYNC_COPY_ENV, None)
    if sync_copy:
        env[SYNC_COPY_ENV] = "1"
    if exec_log_path is not None:
        env[EXEC_LOG_ENV] = str(exec_log_path)
    if kill_after is not None:
        assert exec_log_path is not None
        env[KILL_AFTER_ENV] = kill_after
    return env


def cli_command(*args: str) -> list[str]:
    return [sys.executable, str(HERE), *args]


def pipe(*args: str, cwd: Path | None = None, exec_log_path: Path | None = None, kill_after: str | None = None,
         timeout: float = TIMEOUT, sync_copy: bool = False):
    """Run `pipe ARGS` to completion: in this process, or in a subprocess (bounded by `timeout`) when `kill_after`
    asks it to die on the way. Either way the result has returncode, stdout and stderr."""
    if kill_after is not None:
        return subprocess.run(cli_command(*args), cwd=cwd, env=cli_env(exec_log_path, kill_after, sync_copy),
                              capture_output=True, text=True, timeout=timeout)
    from cli_testing import pipe as pipe_here
    from orgtree_lang.run import registries

    original = registries.default_registry
    if exec_log_path is not None:
        def default_registry(*args, **kwargs):
            return counting_registry(original(*args, **kwargs), str(exec_log_path))

        registries.default_registry = default_registry
    try:
        return pipe_here(*args, cwd=cwd, env={"PIPE_NO_PLUGINS": "1"})
    finally:
        registries.default_registry = original


# ---- reading a run folder ---------------------------------------------------------


def run_dirs(workspace: Path) -> list[Path]:
    folder = workspace / ".orgtree" / "runs"
    return sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def only_run_id(workspace: Path) -> str:
    dirs = [p for p in run_dirs(workspace) if (p / "journal.db").is_file()]
    assert len(dirs) == 1, dirs
    return dirs[0].name


def read_only(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def journal_meta(run_dir: Path) -> dict[str, Any]:
    db = sqlite3.connect(run_dir / "journal.db")
    try:
        return {k: json.loads(v) for k, v in db.execute("SELECT key, value FROM meta")}
    finally:
        db.close()


def journal_steps(run_dir: Path) -> list[dict[str, Any]]:
    db = sqlite3.connect(run_dir / "journal.db")
    db.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in db.execute("SELECT * FROM steps ORDER BY seq")]
    finally:
        db.close()


def journal_snapshot(run_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]], int]:
    """Everything a command must leave unchanged: meta, steps, and the number of checkpoints."""
    db = sqlite3.connect(run_dir / "journal.db")
    db.row_factory = sqlite3.Row
    try:
        meta = {k: json.loads(v) for k, v in db.execute("SELECT key, value FROM meta")}
        steps = [dict(row) for row in db.execute("SELECT * FROM steps ORDER BY seq")]
        checkpoints = db.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
        return meta, steps, checkpoints
    finally:
        db.close()


def integrity(path: Path) -> str:
    db = sqlite3.connect(path)
    try:
        return db.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        db.close()


def copy_at_each_sync() -> None:
    """Journals keep a copy of their WAL as it was at their last fsync (journal.db-wal.synced), for a test to put
    in place of the WAL after a kill: the journal as a power loss would leave it."""
    import shutil

    from orgtree_lang.durable.journal import Journal

    original = Journal.sync

    def sync(self) -> None:
        original(self)
        wal = Path(f"{self.path}-wal")
        if wal.is_file():
            draft = wal.with_name(wal.name + ".synced-draft")
            shutil.copyfile(wal, draft)
            os.replace(draft, wal.with_name(wal.name + ".synced"))

    Journal.sync = sync


def logging_models(log_path: str, kill_at: str | None = None) -> None:
    """Every call a scripted model really answers appends `<role> <sha256 of its messages> <first words>` to
    `log_path` (a call repeated word for word logs the same hash twice); with `kill_at` = "NEEDLE:N" the process
    SIGKILLs itself right after the N-th call whose last message contains NEEDLE has its answer, before the journal
    records it: a crash with that model step in flight."""
    import hashlib

    from orgtree_lang.models.scripted import ScriptedModel

    needle, _, count = (kill_at or "").rpartition(":")
    seen = [0]
    original = ScriptedModel._complete

    def complete(self, messages, **kwargs):
        answer = original(self, messages, **kwargs)
        digest = hashlib.sha256(json.dumps([m.to_dict() for m in messages]).encode()).hexdigest()[:16]
        last = messages[-1].content
        _log_line(log_path, f"{self.role} {digest} {' '.join(last.split())[:80]}\n")
        if needle and needle in last:
            seen[0] += 1
            if seen[0] == int(count):
                os.kill(os.getpid(), signal.SIGKILL)
        return answer

    ScriptedModel._complete = complete


def main() -> int:
    if os.environ.get(SYNC_COPY_ENV):
        copy_at_each_sync()
    if os.environ.get(MODEL_LOG_ENV):
        logging_models(os.environ[MODEL_LOG_ENV], os.environ.get(KILL_AT_MODEL_ENV))
    log = os.environ.get(EXEC_LOG_ENV)
    if log:
        from orgtree_lang.run import registries

        original = registries.default_registry

        def default_registry(*args, **kwargs):
            return counting_registry(original(*args, **kwargs), log, os.environ.get(KILL_AFTER_ENV))

        registries.default_registry = default_registry
    from orgtree_lang.cli.main import main as pipe_main

    return pipe_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
