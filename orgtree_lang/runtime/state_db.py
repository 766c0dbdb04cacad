"""The workspace's shared SQLite file `.orgtree/state.db`: its path, and connections every table owner opens alike."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from orgtree_lang.runtime.workspace import STATE_DIR_NAME


def state_db_path(workspace_root: Path | str) -> Path:
    """`<workspace>/.orgtree/state.db`, the one file the ledger, the skill pool and other state tables share."""
    return Path(workspace_root) / STATE_DIR_NAME / "state.db"


def connect(path: Path | str) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), WAL, synchronous=FULL (a committed row survives
    a crash), a 10 s busy timeout, and rows as sqlite3.Row; its folder is created if needed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(str(path), isolation_level=None, timeout=10, check_same_thread=False)
    db.row_factory = sqlite3.Row
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("PRAGMA busy_timeout=10000")
    return db
