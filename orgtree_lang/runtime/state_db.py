"""The workspace's shared SQLite file, `.orgtree/state.db`: where it is, and how every table owner opens it."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from orgtree_lang.runtime.workspace import STATE_DIR_NAME

STATE_DB_NAME = "state.db"


def state_db_path(workspace_root: Path | str) -> Path:
    """`<workspace>/.orgtree/state.db`, shared by the concern ledger, the org tree and the other state tables."""
    return Path(workspace_root) / STATE_DIR_NAME / STATE_DB_NAME


def open_state_db(path: Path | str, schema: str = "", *, synchronous: str = "FULL",
                  timeout: float = 10) -> sqlite3.Connection:
    """A connection in WAL mode (readers never block the writer), rows as sqlite3.Row, `schema` applied.

    Autocommit mode: group writes with `Transaction`. synchronous=FULL puts every commit on disk before it
    returns; NORMAL survives a crash of the process but may lose the last commits on a power loss."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(str(path), isolation_level=None, timeout=timeout, check_same_thread=False,
                         factory=StateConnection)
    db.row_factory = sqlite3.Row
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={synchronous}")
    db.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
    if schema:
        with Transaction(db):
            for statement in schema.split(";"):
                if statement.strip():
                    db.execute(statement)
    return db


class StateConnection(sqlite3.Connection):
    """A connection that carries the lock its threads take around each write transaction."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.write_lock = threading.RLock()


class Transaction:
    """`with Transaction(db):` one BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error), serialized across threads."""

    def __init__(self, db: StateConnection) -> None:
        self.db = db
        self.lock = db.write_lock

    def __enter__(self) -> sqlite3.Connection:
        self.lock.acquire()
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except BaseException:
            self.lock.release()
            raise
        return self.db

    def __exit__(self, exc_type: object, *rest: object) -> None:
        try:
            self.db.execute("COMMIT" if exc_type is None else "ROLLBACK")
        finally:
            self.lock.release()
