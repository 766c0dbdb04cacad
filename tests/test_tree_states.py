"""The org tree's node states (running, waiting, receiving, cancelled, interrupted) and message edges: stored as
such in state.db (migration 6 rebuilds the tables of a version-4 file and keeps every row), shown by `pipe tree`
and `pipe show`, repaired after kill -9."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from cli_testing import pipe as run_pipe

from orgtree_lang.compile.api import compile_source
from orgtree_lang.durable.reconcile import reconciled
from orgtree_lang.run.registries import default_registry
from orgtree_lang.run.runner import RunOptions, run_program
from orgtree_lang.runlog.store import TreeNode, TreeStore
from orgtree_lang.runtime.schema import SCHEMA_VERSION
from orgtree_lang.runtime.state_db import open_state_db, schema_version, state_db_path

REPO = Path(__file__).resolve().parent.parent
V4 = REPO / "tests" / "fixtures" / "state_v4.db"  # tests/fixtures/state_v4.md says how it was written
PARALLEL_RUN, KILLED_RUN = "564d251f16e4", "c937e07fa9ba"
REGISTRY = default_registry(plugins=False)


def pipe(*args, cwd: Path):
    return run_pipe(*args, cwd=cwd, env={"PIPE_NO_PLUGINS": "1", "PIPE_MODEL": None})


def _rows(path: Path, sql: str) -> list[tuple]:
    db = sqlite3.connect(path)
    try:
        return [tuple(row) for row in db.execute(sql)]
    finally:
        db.close()


@pytest.fixture
def v4(tmp_path: Path) -> Path:
    """A workspace whose state.db is a copy of the version-4 fixture."""
    path = state_db_path(tmp_path)
    path.parent.mkdir(parents=True)
    shutil.copy(V4, path)
    return tmp_path


# ---- migration 6 on a real version-4 file -------------------------------------------------------------------


def test_the_fixture_is_a_version_4_file_with_the_old_marks() -> None:
    assert _rows(V4, "PRAGMA user_version") == [(4,)]
    assert (f"{KILLED_RUN}/main", "error", "[interrupted] ") in _rows(V4, "SELECT id, status, error FROM tree_nodes")
    assert ("branch 1 (line 10)", "pipeline") in _rows(V4, "SELECT name, kind FROM tree_calls")


def test_migration_6_keeps_every_row_and_reads_the_old_marks_as_states(v4: Path) -> None:
    path = state_db_path(v4)
    nodes_before = _rows(path, "SELECT * FROM tree_nodes ORDER BY id")
    calls_before = _rows(path, "SELECT * FROM tree_calls ORDER BY rowid")
    open_state_db(path).close()
    assert _rows(path, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    nodes_after = _rows(path, "SELECT * FROM tree_nodes ORDER BY id")
    calls_after = _rows(path, "SELECT * FROM tree_calls ORDER BY rowid")
    assert len(nodes_after) == len(nodes_before) == 4 and len(calls_after) == len(calls_before) == 8

    # Every column of every node is kept, but the interrupted mark, which becomes the status.
    for before, after in zip(nodes_before, nodes_after):
        if before[0] == f"{KILLED_RUN}/main":
            assert (before[7], before[10]) == ("error", "[interrupted] ")
            assert (after[7], after[10]) == ("interrupted", None)
            assert after[:7] + after[8:10] + after[11:] == before[:7] + before[8:10] + before[11:]
        else:
            assert after == before

    # Grouped calls: the same calls in the same order, a cancelled one's status says so, branches are branches.
    kinds = {}
    for before, after in zip(calls_before, calls_after):
        old, new = json.loads(before[9]), json.loads(after[9])
        assert [c[:2] + c[3:] for c in old] == [c[:2] + c[3:] for c in new]
        for old_call, new_call in zip(old, new):
            cancelled = old_call[5] is not None and old_call[5].endswith("was cancelled")
            assert new_call[2] == ("cancelled" if cancelled else old_call[2])
        assert after[7:9] == (sum(c[2] == "ok" for c in new), sum(c[2] == "error" for c in new))
        kinds[after[2]] = after[3]
        assert after[:3] + after[4:7] == before[:3] + before[4:7]
    assert kinds["branch 1 (line 10)"] == kinds["branch 2 (line 11)"] == "branch"
    assert kinds["slow"] == "pipeline" and kinds["time.sleep"] == "skill"


def test_the_rebuilt_table_takes_the_new_states_and_refuses_unknown_ones(v4: Path) -> None:
    db = open_state_db(state_db_path(v4))
    try:
        db.execute("UPDATE tree_nodes SET status = 'receiving' WHERE id = ?", (f"{PARALLEL_RUN}/main",))
        with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
            db.execute("UPDATE tree_nodes SET status = 'asleep' WHERE id = ?", (f"{PARALLEL_RUN}/main",))
        with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
            db.execute("UPDATE tree_nodes SET kind = 'person' WHERE id = ?", (f"{PARALLEL_RUN}/main",))
        assert schema_version(db) == SCHEMA_VERSION
    finally:
        db.close()


def test_pipe_tree_reads_a_migrated_version_4_workspace(v4: Path) -> None:
    out = pipe("tree", PARALLEL_RUN, cwd=v4)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"run {PARALLEL_RUN}: 2 branch nodes, 2 pipeline nodes, 1 skill node"
    assert lines[2].startswith("├─ parallel#1.1  branch  cancelled")
    assert "└─ slow#1  pipeline  cancelled" in lines[3] and "why: branch 1 (line 10) was cancelled" in lines[3]
    assert lines[5].startswith("└─ parallel#1.2  branch  error") and lines[5].endswith("error: division by zero")
    out = pipe("tree", KILLED_RUN, cwd=v4)
    assert out.stdout.splitlines()[1].startswith("main  pipeline  interrupted  [its process ended before it did]")


# ---- states as runs record them -----------------------------------------------------------------------------

CANCELLING = """\
use time

pipeline slow(n: int) -> int:
    time.sleep(0.05)
    return n

pipeline main() -> str:
    try:
        parallel:
            a = slow(1)
            b = 10 / 0
    except err:
        print(err.kind)
    return "done"
"""


def test_a_cancelled_branch_is_stored_cancelled_and_a_failed_one_as_an_error(tmp_path: Path) -> None:
    (tmp_path / "par.pipe").write_text(CANCELLING)
    assert pipe("run", "par.pipe", cwd=tmp_path).returncode == 0
    with TreeStore.for_workspace(tmp_path) as store:
        run = store.run_ids()[0]
        nodes = {node.id.split("/", 1)[1]: node for node in store.run_nodes(run)}
    assert (nodes["main/parallel#1.1"].kind, nodes["main/parallel#1.1"].status) == ("branch", "cancelled")
    assert nodes["main/parallel#1.1"].name == "branch 1 (line 10)"
    assert nodes["main/parallel#1.1/slow#1"].status == "cancelled"
    assert (nodes["main/parallel#1.2"].status, nodes["main/parallel#1.2"].error) == ("error", "division by zero")
    show = pipe("show", run, cwd=tmp_path).stdout
    assert "main/parallel#1.1  (cancelled)" in show and "main/parallel#1.1/slow#1  (cancelled)" in show


RECEIVING = """\
use time

pipeline worker() -> int:
    m = receive()
    return m.body

pipeline main() -> int:
    w = spawn worker()
    time.sleep(0.01)
    send w, 7
    return await w
"""


def test_a_node_waiting_in_receive_is_marked_receiving_until_its_message_comes(tmp_path: Path) -> None:
    events: list[tuple[str, str, str]] = []
    options = RunOptions(printer=lambda line: None, executor="threads:2",
                         tree_listener=lambda event, node: events.append((event, node.id.split("/", 1)[1],
                                                                          node.status)))
    machine = run_program(compile_source(RECEIVING, "recv.pipe", REGISTRY).program, tmp_path, REGISTRY, options)
    assert machine.state.result == 7
    worker = [(event, status) for event, node, status in events if node == "main/worker#1"]
    assert worker == [("open", "running"), ("state", "receiving"), ("state", "running"), ("close", "ok")]


def test_a_run_waiting_for_a_person_shows_its_nodes_waiting_and_resumes_to_ok(tmp_path: Path) -> None:
    shutil.copy(REPO / "examples" / "org_approval.pipe", tmp_path / "approval.pipe")
    assert pipe("run", "approval.pipe", cwd=tmp_path).returncode == 75
    run = json.loads(pipe("runs", "--json", cwd=tmp_path).stdout)[0]["id"]
    tree = pipe("tree", run, cwd=tmp_path).stdout.splitlines()
    assert tree[1].startswith("main  pipeline  waiting"), tree
    assert "(waiting)" in pipe("show", run, cwd=tmp_path).stdout
    assert pipe("reply", "--resume", run, "yes", cwd=tmp_path).returncode == 75
    assert pipe("reply", "--resume", run, "Ada", cwd=tmp_path).returncode == 0
    assert pipe("tree", run, cwd=tmp_path).stdout.splitlines()[1].startswith("main  pipeline  ok")


# ---- after kill -9 --------------------------------------------------------------------------------------------


def _node(node_id: str, status: str) -> TreeNode:
    return TreeNode(f"r1/{node_id}", "r1", "r1/main" if node_id != "main" else None, 1, node_id, "pipeline", "",
                    status, "", "", None, 1.0, None)


def test_reconcile_interrupts_open_nodes_of_a_dead_process_but_keeps_a_waiting_run_waiting() -> None:
    nodes = [_node("main", "waiting"), _node("main/worker#1", "receiving"), _node("main/done#1", "ok"),
             _node("main/cut#1", "cancelled")]
    dead = {n.id: n.status for n in reconciled("r1", nodes, {})}
    assert dead == {"r1/main": "interrupted", "r1/main/worker#1": "interrupted", "r1/main/done#1": "ok",
                    "r1/main/cut#1": "cancelled"}
    paused = {n.id: n.status for n in reconciled("r1", nodes, {}, waiting=True)}
    assert paused["r1/main"] == "waiting" and paused["r1/main/worker#1"] == "interrupted"


# ---- message edges --------------------------------------------------------------------------------------------


def test_pipe_tree_draws_who_sent_what_to_whom(tmp_path: Path) -> None:
    program = tmp_path / "supervisor.pipe"
    program.write_text((REPO / "tests" / "golden" / "messages" / "supervisor.pipe").read_text())
    assert pipe("run", program, cwd=tmp_path).returncode == 0
    run = json.loads(pipe("runs", "--json", cwd=tmp_path).stdout)[0]["id"]
    lines = pipe("tree", run, cwd=tmp_path).stdout.splitlines()
    main_edge = next(i for i, line in enumerate(lines) if "→ main/worker#1" in line)
    worker = next(i for i, line in enumerate(lines) if "worker#1  pipeline" in line)
    assert main_edge < worker  # under main, before its children
    assert lines[main_edge].endswith('→ main/worker#1 ×4: 1, 2, 3, …')
    assert lines[worker + 1].strip() == '→ main "worker done at 6"'
