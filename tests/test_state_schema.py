"""state.db has one owner: declared tables, a schema version, migrations, and workspaces of older and newer versions."""

from __future__ import annotations

import re
import shutil
import sqlite3
import threading
from pathlib import Path

import pytest

from orgtree_lang.cli.main import main as pipe_main
from orgtree_lang.runtime.schema import (MIGRATIONS, SCHEMA_VERSION, Index, Migration, Table, declared_indexes,
                                         declared_tables)
from orgtree_lang.runtime.skills import SkillContext
from orgtree_lang.runtime.state_db import StateMigrationError, StateSchemaError, open_state_db, schema_version, state_db_path
from orgtree_lang.runtime.workspace import Workspace

pytestmark = pytest.mark.fast

REPO = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "workspace_v0"
FIRST_RUN, SECOND_RUN = "803a5993e8b2", "82fb0928cf90"  # "Please add CSV export" -> feature; "How do I ...?" -> question


@pytest.fixture
def v0(tmp_path: Path) -> Path:
    """A copy of the workspace fa31da4 wrote (tests/fixtures/workspace_v0/README.md)."""
    root = tmp_path / "ws"
    shutil.copytree(FIXTURE, root)
    return root


def _raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path)


def _schema(path: Path) -> dict[str, list[tuple]]:
    """Every table's columns (name, type, not null, default, primary key) and every named index's columns."""
    db = _raw(path)
    try:
        found = {}
        for kind, name in db.execute("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"):
            pragma = "table_xinfo" if kind == "table" else "index_xinfo"
            found[f"{kind} {name}"] = [tuple(row[1:]) for row in db.execute(f"PRAGMA {pragma}({name})")]
        return found
    finally:
        db.close()


def _pipe(capsys, *argv: str) -> tuple[int, str, str]:
    code = pipe_main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ---- the declaration -------------------------------------------------------------------------------------


def test_migrations_are_numbered_one_two_three_and_the_last_is_the_schema_version() -> None:
    assert [m.version for m in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1))
    assert SCHEMA_VERSION == MIGRATIONS[-1].version


def test_every_table_has_an_owner_module_that_exists() -> None:
    for table in declared_tables().values():
        parts = table.owner.split(".")
        assert parts[0] == "orgtree_lang", table
        folder = REPO / "stdlib" if parts[1] == "stdlib" else REPO / "orgtree_lang" / parts[1]
        assert (folder / Path(*parts[2:])).with_suffix(".py").is_file(), table


def test_a_new_workspace_holds_exactly_the_declared_tables_and_indexes(tmp_path: Path) -> None:
    path = state_db_path(tmp_path)
    open_state_db(path).close()
    schema = _schema(path)
    assert {k.split()[1] for k in schema if k.startswith("table ")} == set(declared_tables())
    assert {k.split()[1] for k in schema if k.startswith("index ")} == set(declared_indexes())
    db = _raw(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    db.close()


def test_no_module_but_the_schema_creates_or_changes_a_table_of_state_db() -> None:
    """Only runtime/schema.py writes DDL for state.db (the run journal, a file of its own, keeps its own schema);
    only runtime/state_db.py and the journal connect to SQLite; stdlib skills never touch a database directly."""
    ddl = re.compile(r"\b(CREATE\s+(TABLE|INDEX|UNIQUE\s+INDEX|VIEW|TRIGGER)|ALTER\s+TABLE|DROP\s+(TABLE|INDEX))\b", re.I)
    allowed_ddl = {REPO / "orgtree_lang/runtime/schema.py", REPO / "orgtree_lang/durable/journal.py"}
    allowed_connect = {REPO / "orgtree_lang/runtime/state_db.py", REPO / "orgtree_lang/durable/journal.py"}
    offenders = []
    for path in sorted([*(REPO / "orgtree_lang").rglob("*.py"), *(REPO / "stdlib").rglob("*.py")]):
        text = path.read_text(encoding="utf-8")
        if path not in allowed_ddl and ddl.search(text):
            offenders.append(f"{path.relative_to(REPO)}: DDL")
        if path not in allowed_connect and re.search(r"sqlite3\.connect|executescript", text):
            offenders.append(f"{path.relative_to(REPO)}: opens SQLite itself")
        if path.is_relative_to(REPO / "stdlib") and "open_state_db" in text:
            offenders.append(f"{path.relative_to(REPO)}: opens state.db instead of asking the skill context")
    assert offenders == []
    assert "ctx.state_db(" in (REPO / "stdlib" / "fs_ledger.py").read_text()


# ---- migrations ------------------------------------------------------------------------------------------

_LATER = Migration(SCHEMA_VERSION + 1, "a test table, an index on an older table, and a column", tables=(
    Table("later", "orgtree_lang.runtime.schema", "key TEXT PRIMARY KEY, value TEXT NOT NULL"),),
    indexes=(Index("pad_notes_by_kind", "pad_notes (kind)"),),
    statements=("ALTER TABLE later ADD COLUMN at REAL NOT NULL DEFAULT 0",))


def test_two_migrations_applied_twice_change_nothing_the_second_time(v0: Path) -> None:
    path = state_db_path(v0)
    two = (*MIGRATIONS, _LATER)
    db = open_state_db(path, migrations=two)
    db.execute("INSERT INTO later (key, value) VALUES ('k', 'v')")
    db.close()
    once = _schema(path)
    db = open_state_db(path, migrations=two)
    assert schema_version(db) == SCHEMA_VERSION + 1
    assert [tuple(row) for row in db.execute("SELECT key, value, at FROM later")] == [("k", "v", 0)]
    db.close()
    assert _schema(path) == once
    assert once["table later"] == [("key", "TEXT", 0, None, 1, 0), ("value", "TEXT", 1, None, 0, 0),
                                ("at", "REAL", 1, "0", 0, 0)]
    assert "index pad_notes_by_kind" in once and set(declared_indexes(two)) == set(declared_indexes()) | {
        "pad_notes_by_kind"}


def test_a_failing_migration_leaves_the_previous_version_and_nothing_of_itself(tmp_path: Path) -> None:
    path = state_db_path(tmp_path)
    broken = Migration(SCHEMA_VERSION + 1, "creates a table, then fails", tables=(Table("half", "x", "a INT"),),
                       statements=("ALTER TABLE no_such_table ADD COLUMN b INT",))
    with pytest.raises(StateMigrationError, match="no_such_table"):
        open_state_db(path, migrations=(*MIGRATIONS, broken))
    db = open_state_db(path)
    assert schema_version(db) == SCHEMA_VERSION
    assert db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'half'").fetchone()[0] == 0
    db.close()


def test_threads_opening_one_new_workspace_at_once_all_see_one_migrated_schema(tmp_path: Path) -> None:
    path = state_db_path(tmp_path)
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            db = open_state_db(path, migrations=(*MIGRATIONS, _LATER))
            assert schema_version(db) == SCHEMA_VERSION + 1
            db.close()
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


# ---- the workspace fa31da4 wrote -------------------------------------------------------------------------


def test_the_fixture_was_written_before_versions(v0: Path) -> None:
    db = _raw(state_db_path(v0))
    assert db.execute("PRAGMA user_version").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM tree_nodes").fetchone()[0] == 24
    db.close()


def test_the_fixture_migrates_to_the_same_tables_a_new_workspace_gets(v0: Path, tmp_path: Path) -> None:
    open_state_db(state_db_path(v0)).close()
    fresh = state_db_path(tmp_path / "fresh")
    open_state_db(fresh).close()
    assert _schema(state_db_path(v0)) == _schema(fresh)
    db = _raw(state_db_path(v0))
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    counts = {t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
              for t in ("tree_nodes", "pad_notes", "insights", "skill_bugs", "concerns", "review_rounds",
                        "decompose_attempts", "fs_appends", "memory_nodes")}
    db.close()
    # review_rounds: two rounds for the module classify, one for the insight.
    assert counts == {"tree_nodes": 24, "pad_notes": 2, "insights": 1, "skill_bugs": 1, "concerns": 1,
                      "review_rounds": 3, "decompose_attempts": 2, "fs_appends": 2, "memory_nodes": 4}


def test_the_migrated_fixture_answers_pipe_tree(v0: Path, capsys) -> None:
    code, out, _ = _pipe(capsys, "tree", "--workspace", str(v0))
    assert code == 0
    assert out.startswith(f"run {SECOND_RUN}:")
    assert 'in: report="How do I export a list?"  out: "question"' in out
    assert "classify@3  ambiguous  ok" in out and "[reused " in out
    code, out, _ = _pipe(capsys, "tree", FIRST_RUN[:6], "--workspace", str(v0))
    assert code == 0
    assert "(2 review round(s))" in out and 'out: label="feature"' in out and "insight.propose" in out
    assert schema_version(open_state_db(state_db_path(v0))) == SCHEMA_VERSION


def test_the_migrated_fixture_answers_pipe_modules(v0: Path, capsys) -> None:
    open_state_db(state_db_path(v0)).close()
    code, out, _ = _pipe(capsys, "modules", "list", "--workspace", str(v0))
    assert code == 0
    assert "triage/classify.pipe" in out and "block classify" in out and "review rounds 2" in out
    code, out, _ = _pipe(capsys, "modules", "show", "triage/classify.pipe", "--workspace", str(v0))
    assert code == 0 and "lowered = text.lower(text.strip(report))" in out


def test_the_migrated_fixture_answers_pipe_skills_history(v0: Path, capsys) -> None:
    code, out, err = _pipe(capsys, "skills", "history", "text.contains", "--workspace", str(v0))
    assert code == 0
    assert 'text.contains("please add csv export", "please add") -> true' in out
    assert 'text.contains("How do I export a list?", "Traceback") -> false' in out
    assert "8 call(s) shown, 0 failed" in err


def test_the_migrated_fixture_answers_pipe_pad_show(v0: Path, capsys) -> None:
    code, out, _ = _pipe(capsys, "pad", "show", "--workspace", str(v0))
    assert code == 0
    assert out.splitlines()[0].endswith("turn 1  [#1 triage] plan: label the report: Please add CSV export")
    assert out.splitlines()[1].endswith("turn 2  [#2 triage] plan: label the report: How do I export a list?")


def test_the_migrated_fixture_keeps_insights_bugs_and_memory(v0: Path, capsys) -> None:
    code, out, _ = _pipe(capsys, "insights", "list", "--workspace", str(v0))
    assert code == 0 and "insight #1 [triage]: Feature requests often start with a capital 'Please add'" in out
    code, out, _ = _pipe(capsys, "skills", "bugs", "--workspace", str(v0))
    assert code == 0 and "#1 text.contains [open] by fixture" in out
    code, out, _ = _pipe(capsys, "ctx", "search", "empty lists", "--mode", "keyword", "--workspace", str(v0))
    assert code == 0 and "notes/release.txt" in out and "notes/standup.txt" in out


def test_the_migrated_fixture_keeps_the_append_ledger(v0: Path, registry) -> None:
    """A keyed append the fixture's first run made is recognized: repeating it appends nothing."""
    ctx = SkillContext(workspace=Workspace(v0), run_id=FIRST_RUN, idempotency_key=f"{FIRST_RUN}:7")
    before = (v0 / "labels.txt").read_text()
    assert registry.get("fs.append").invoke(["labels.txt", "feature: Please add CSV export\n"], {}, ctx) == 31
    assert (v0 / "labels.txt").read_text() == before == "feature: Please add CSV export\nquestion: How do I export a list?\n"


# ---- a workspace from a newer orgtree-lang ---------------------------------------------------------------


def _newer(root: Path) -> Path:
    path = state_db_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    db = _raw(path)
    db.execute("PRAGMA journal_mode=DELETE")
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.commit()
    db.close()
    return path


def test_a_newer_state_db_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = _newer(tmp_path)
    with pytest.raises(StateSchemaError) as caught:
        open_state_db(path)
    assert (caught.value.found, caught.value.supported) == (SCHEMA_VERSION + 1, SCHEMA_VERSION)
    db = _raw(path)
    assert db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    db.close()


@pytest.mark.parametrize("argv", [["tree"], ["skills", "history", "text.contains"], ["pad", "show"],
                                  ["insights", "list"]], ids=" ".join)
def test_the_cli_exits_2_on_a_newer_state_db_and_says_to_upgrade(v0: Path, capsys, argv: list[str]) -> None:
    _newer(v0)
    code, out, err = _pipe(capsys, *argv, "--workspace", str(v0))
    assert code == 2 and out == ""
    assert f"schema version {SCHEMA_VERSION + 1}" in err
    assert f"supports state.db schema versions up to {SCHEMA_VERSION}" in err
    assert "upgrade orgtree-lang" in err
    assert "Traceback" not in err


def test_pipe_run_exits_2_on_a_newer_state_db(v0: Path, capsys) -> None:
    _newer(v0)
    code, _, err = _pipe(capsys, "run", str(v0 / "triage.pipe"), "-i", "report=Traceback: boom")
    assert code == 2 and "upgrade orgtree-lang" in err
    assert (v0 / "labels.txt").read_text().count("\n") == 2  # the program did not run


# ---- a workspace a development build numbered differently ------------------------------------------------


def _at_7_with_module_versions(root: Path) -> Path:
    """state.db as a build between 70913a7 and 557033e wrote it: version 7 with migration 8's table already there."""
    path = state_db_path(root)
    db = open_state_db(path, migrations=MIGRATIONS[:7])
    db.execute("CREATE TABLE module_versions (key TEXT PRIMARY KEY)")
    db.execute("INSERT INTO module_versions VALUES ('kept')")
    db.close()
    return path


def test_a_failing_migration_is_a_usage_error_that_names_the_step_and_leaves_the_database_as_it_was(tmp_path) -> None:
    path = _at_7_with_module_versions(tmp_path)
    with pytest.raises(StateMigrationError) as caught:
        open_state_db(path)
    assert (caught.value.found, caught.value.version) == (7, 8)
    assert "table module_versions already exists" in caught.value.message
    assert "move .orgtree/state.db aside" in caught.value.hint
    db = _raw(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 7
    assert db.execute("SELECT key FROM module_versions").fetchall() == [("kept",)]
    db.close()


def test_pipe_run_exits_2_with_the_migration_it_could_not_apply(v0: Path, capsys) -> None:
    (v0 / ".orgtree" / "state.db").unlink()
    _at_7_with_module_versions(v0)
    code, _, err = _pipe(capsys, "run", str(v0 / "triage.pipe"), "-i", "report=Traceback: boom")
    assert code == 2, err
    assert "could not be migrated to version 8" in err and "internal error" not in err and "Traceback" not in err
    assert (v0 / "labels.txt").read_text().count("\n") == 2  # the program did not run


# ---- migration 9: the context tree's key-only tables ------------------------------------------------------

_KEYED = {"memory_edges": "parent, position, child", "memory_covers": "node, document",
          "memory_summaries": "key, blob, tokens"}


def _tree_rows(path: Path) -> dict[str, list[tuple]]:
    db = _raw(path)
    try:
        return {table: db.execute(f"SELECT {columns} FROM {table} ORDER BY {columns}").fetchall()
                for table, columns in _KEYED.items()}
    finally:
        db.close()


def _memory_with_a_tree(root: Path) -> None:
    from orgtree_lang.memory import Memory

    words = ("crash", "editor", "window", "saving", "file", "start", "the", "on")
    with Memory(root, index=False) as memory:
        docs = [memory.add(" ".join(words[(i * 7 + j) % len(words)] for j in range(6000)), name=f"log{i}.txt")
                for i in range(4)]
        memory.fit(docs, "gpt-4o", 0.01)


def test_migration_9_keeps_every_edge_cover_and_cached_summary_and_stores_them_by_key(tmp_path: Path) -> None:
    from orgtree_lang.memory import Memory

    _memory_with_a_tree(tmp_path / "now")
    written = _tree_rows(state_db_path(tmp_path / "now"))
    assert all(written.values()), written  # pieces under documents, summaries over pieces, a summary cache
    # The same workspace as version 8 wrote it (the blobs as they are), then opened by this version.
    shutil.copytree(tmp_path / "now" / ".orgtree" / "blobs", tmp_path / "v8" / ".orgtree" / "blobs")
    old = state_db_path(tmp_path / "v8")
    open_state_db(old, migrations=MIGRATIONS[:8]).close()
    db = _raw(old)
    db.execute("ATTACH ? AS now", (str(state_db_path(tmp_path / "now")),))
    for table, columns in {**_KEYED, "memory_nodes": "*"}.items():
        db.execute(f"INSERT INTO main.{table} SELECT {columns} FROM now.{table}")
    db.commit()
    db.close()
    assert schema_version(open_state_db(old, migrations=MIGRATIONS[:8])) == 8
    open_state_db(old).close()
    assert _tree_rows(old) == written
    db = _raw(old)
    sql = dict(db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall())
    autoindexes = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE name LIKE 'sqlite_autoindex_%'")}
    db.close()
    for table in _KEYED:
        assert sql[table].endswith("WITHOUT ROWID"), sql[table]
        assert f"sqlite_autoindex_{table}_1" not in autoindexes  # the key's index is the table
    assert _schema(old) == _schema(state_db_path(tmp_path / "now"))
    # The migrated tree is the one written: fit finds every summary in the cache, a document's pieces are its text.
    with Memory(tmp_path / "v8", index=False) as memory:
        documents = memory.store.documents()
        assert memory.fit(documents, "gpt-4o", 0.01).summarized == 0
        pieces = memory.expand(documents[0])
        assert len(pieces) > 1 and "".join(memory.text(p) for p in pieces) == memory.text(documents[0])
