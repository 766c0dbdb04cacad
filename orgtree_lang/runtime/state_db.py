"""The workspace's shared SQLite file, `.orgtree/state.db`: where it is, how every table owner opens and migrates it."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from orgtree_lang.runtime.errors import UsageError
from orgtree_lang.runtime.schema import MIGRATIONS, Migration
from orgtree_lang.runtime.workspace import STATE_DIR_NAME

STATE_DB_NAME = "state.db"


class StateMigrationError(UsageError):
    """A migration of state.db failed (a table it adds is there already, a rebuild's rows do not fit): exit 2, the
    database left at the version it had (each migration is one transaction)."""

    def __init__(self, path: Path, found: int, version: int, summary: str, error: sqlite3.Error) -> None:
        super().__init__(f"{path} is at schema version {found} but could not be migrated to version {version} "
                         f"({summary}): {error}",
                         hint="a development build of orgtree-lang may have written this workspace with another "
                              "version numbering; nothing was changed: open it with the build that wrote it, or move "
                              ".orgtree/state.db aside (the ledger, org tree, pad, insights and memory index are in "
                              "it; runs' journals and saved modules are files of their own)")
        self.path, self.found, self.version = path, found, version


class StateSchemaError(UsageError):
    """state.db was written by a newer orgtree-lang (a schema version this one does not know): exit 2."""

    def __init__(self, path: Path, found: int, supported: int) -> None:
        from orgtree_lang import __version__

        super().__init__(f"{path} has schema version {found}, but this pipe (orgtree-lang {__version__}) "
                         f"supports state.db schema versions up to {supported}",
                         hint="the workspace was written by a newer orgtree-lang: upgrade orgtree-lang "
                              "(pip install --upgrade orgtree-lang) to use it; this pipe changes nothing in it")
        self.path, self.found, self.supported = path, found, supported


def state_db_path(workspace_root: Path | str) -> Path:
    """`<workspace>/.orgtree/state.db`, shared by the concern ledger, the org tree and the other state tables."""
    return Path(workspace_root) / STATE_DIR_NAME / STATE_DB_NAME


def open_state_db(path: Path | str, *, synchronous: str = "FULL", timeout: float = 10,
                  migrations: tuple[Migration, ...] = MIGRATIONS) -> StateConnection:
    """A connection in WAL mode (readers never block the writer), rows as sqlite3.Row, migrated to the newest schema.

    Autocommit mode: group writes with `Transaction`. synchronous=FULL puts every commit on disk before it
    returns; NORMAL survives a crash of the process but may lose the last commits on a power loss.
    Raises StateSchemaError, and leaves the file as it was, when it has a newer schema than `migrations`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(str(path), isolation_level=None, timeout=timeout, check_same_thread=False,
                         factory=StateConnection)
    db.row_factory = sqlite3.Row
    try:
        db.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
        # Checked before anything is set, so that a newer workspace is left exactly as it was.
        if schema_version(db) > migrations[-1].version:
            raise StateSchemaError(path, schema_version(db), migrations[-1].version)
        _enter_wal(db, timeout)
        db.execute(f"PRAGMA synchronous={synchronous}")
        migrate(db, path, migrations)
    except BaseException:
        db.close()
        raise
    return db


def _enter_wal(db: sqlite3.Connection, timeout: float) -> None:
    """Switch a database to WAL mode, waiting up to `timeout` for others that open the same new file at once.

    SQLite answers `database is locked` at once, without its busy handler, when another connection is
    switching the file's journal mode at the same moment."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def schema_version(db: sqlite3.Connection) -> int:
    """The version the database's schema is at (`PRAGMA user_version`; 0 before versions existed)."""
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def migrate(db: StateConnection, path: Path, migrations: tuple[Migration, ...] = MIGRATIONS) -> int:
    """Apply the migrations the database has not had yet, each in one transaction with its version; returns it.

    Several processes may open a version-0 workspace at once: each migration re-reads the version inside its
    write transaction, so it runs exactly once."""
    supported = migrations[-1].version
    found = schema_version(db)
    if found > supported:
        raise StateSchemaError(path, found, supported)
    for migration in migrations:
        if migration.version <= found:
            continue
        with Transaction(db):
            found = schema_version(db)
            if found > supported:
                raise StateSchemaError(path, found, supported)
            if migration.version <= found:
                continue
            try:
                for statement in migration.sql():
                    db.execute(statement)
            except sqlite3.DatabaseError as err:
                raise StateMigrationError(path, found, migration.version, migration.summary, err) from err
            # PRAGMA takes no parameters; the version is an int from the declared migrations.
            db.execute(f"PRAGMA user_version = {int(migration.version)}")
        found = migration.version
    return found


class StateConnection(sqlite3.Connection):
    """A connection that carries the lock its threads take around each write transaction."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.write_lock = threading.RLock()

    def transaction(self) -> Transaction:
        """`with db.transaction():` the same as `with Transaction(db):`, for callers that hold only the connection."""
        return Transaction(self)


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
