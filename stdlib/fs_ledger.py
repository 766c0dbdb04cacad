"""Append bytes to a workspace file at most once per idempotency key, across crashes, with a ledger in state.db.

The ledger is the table `fs_appends` in `<workspace>/.orgtree/state.db` (SQLite, WAL, synchronous=FULL), declared
in runtime/schema.py and reached only through the skill context (`ctx.state_db()`), writing through the connection's shared write
lock (`conn.transaction()`).
A keyed append is a small write-ahead log:

1. under an exclusive lock on the file, first roll forward every interrupted append to that file;
2. if the key is already in the ledger, the append happened: return its byte count, write nothing;
3. otherwise commit a *pending* row (key, path, the file's current size as `offset`, the bytes), then
   append and fsync the file, then mark the row *done* (and drop the stored bytes).

A process killed anywhere in step 3 leaves a pending row. Whoever next appends to that file (the
repeated call with the same key, or any other append) truncates the file back to `offset` and writes the
stored bytes again before doing anything else, so the region after `offset` only ever holds bytes of that
one interrupted append, and the ledger's word "done" is never wrong.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.runtime.skills import SkillContext
from orgtree_lang.runtime.workspace import Workspace

try:
    import fcntl
except ImportError:  # Windows: appends are still exactly-once for one process at a time
    fcntl = None  # type: ignore[assignment]

STATE_DB_NAME = "state.db"
BUSY_TIMEOUT_MS = 30_000


def state_db_path(workspace: Workspace) -> Path:
    """Where the ledger is, for messages; it is opened only through the skill context."""
    return workspace.state_dir / STATE_DB_NAME


def open_ledger(ctx: SkillContext, *, create: bool) -> sqlite3.Connection | None:
    """The workspace's state.db from the skill context (the table `fs_appends` is declared in runtime/schema.py);
    None if it is absent and not `create`."""
    return ctx.state_db(create=create, timeout=BUSY_TIMEOUT_MS / 1000)


def append(ctx: SkillContext, real: Path, data: bytes) -> int:
    """Append `data` to the file `real` (inside the workspace); with the call's idempotency key, at most once per
    key. Returns len(data).

    Raises OSError and sqlite3.Error as they come; SkillError if the key already names a different append.
    """
    key = ctx.idempotency_key
    rel = ctx.workspace.relative(real)
    digest = hashlib.sha256(data).hexdigest()
    conn = open_ledger(ctx, create=key is not None)
    try:
        if key is not None:
            assert conn is not None
            _recorded(conn, key, rel, data, digest)  # a misused key fails before the file is touched
        with _locked_for_append(real) as fd:
            if conn is not None:
                _roll_forward(conn, fd, rel)
            if key is None:
                _write_all(fd, data)
                return len(data)
            # Read again under the lock: another process may have applied this key while we waited.
            size = _recorded(conn, key, rel, data, digest)
            if size is not None:  # done by an earlier attempt, or rolled forward just now
                return size
            offset = os.fstat(fd).st_size
            with conn.transaction():
                conn.execute(
                    "INSERT INTO fs_appends (key, path, offset, size, digest, data, done) VALUES (?, ?, ?, ?, ?, ?, 0)",
                    (key, rel, offset, len(data), digest, data),
                )
            _write_all(fd, data)
            os.fsync(fd)
            _mark_done(conn, key)
            return len(data)
    finally:
        if conn is not None:
            conn.close()


def _recorded(conn: sqlite3.Connection, key: str, rel: str, data: bytes, digest: str) -> int | None:
    """The byte count the ledger holds for `key` (None if it has none); SkillError if it names another append."""
    row = conn.execute("SELECT path, size, digest FROM fs_appends WHERE key = ?", (key,)).fetchone()
    if row is None:
        return None
    if (row[0], row[2]) != (rel, digest):
        raise SkillError(
            f"fs.append: idempotency key `{key}` already names an append of {row[1]} bytes to "
            f"`{row[0]}`, not this one of {len(data)} bytes to `{rel}`",
            hint="a key names exactly one call; a different append needs a different key",
        )
    return int(row[1])


def _roll_forward(conn: sqlite3.Connection, fd: int, rel: str) -> None:
    """Finish every append to this file that a killed process left pending: truncate back, write, mark done."""
    pending = conn.execute(
        "SELECT key, offset, data FROM fs_appends WHERE path = ? AND done = 0 ORDER BY offset", (rel,)
    ).fetchall()
    for key, offset, data in pending:
        size = os.fstat(fd).st_size
        if size < offset:
            # The file was replaced or cut since (e.g. by fs.write), taking any partial bytes with it:
            # the append starts again at the new end, and the ledger must say so before anything is written.
            offset = size
            with conn.transaction():
                conn.execute("UPDATE fs_appends SET offset = ? WHERE key = ?", (offset, key))
        os.ftruncate(fd, offset)
        _write_all(fd, bytes(data))
        os.fsync(fd)
        _mark_done(conn, key)


def _mark_done(conn: sqlite3.Connection, key: str) -> None:
    with conn.transaction():
        conn.execute("UPDATE fs_appends SET done = 1, data = NULL WHERE key = ?", (key,))


@contextmanager
def _locked_for_append(real: Path) -> Iterator[int]:
    """An O_APPEND descriptor on the file (created if missing) holding an exclusive lock until the block ends."""
    created = not real.exists()
    fd = os.open(real, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o666)
    try:
        if created:
            _fsync_folder(real.parent)  # so a pending row never outlives the file it points into
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)  # also releases the lock


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # not every platform can open a folder; the file's own fsync still holds
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
