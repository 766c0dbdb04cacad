"""The workspace's state.db for the scratchpad and insight tables: a connection set up like the other tables'
(WAL, synchronous=FULL, busy timeout), one-transaction writes, and the errors these tables report."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from orgtree_lang.runtime.errors import PipeError


class StateError(PipeError):
    """A request the scratchpad or insight pool refuses; the message says what was wrong, the hint how to fix it."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


def connect(path: Path, schema: str) -> sqlite3.Connection:
    """Open (and create) `path` in WAL mode with synchronous=FULL, so a committed row survives a crash, and
    create `schema`'s tables if they are missing. One connection may be shared by threads under a lock."""
    from orgtree_lang.runtime.state_db import open_state_db

    return open_state_db(path, schema)


@contextmanager
def transaction(db: sqlite3.Connection, lock: threading.RLock) -> Iterator[sqlite3.Connection]:
    """One write transaction: all of it is committed, or (on any error) none of it."""
    with lock:
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
