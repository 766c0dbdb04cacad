"""The org tree written behind the run: finished calls stored in groups, read back as the same nodes."""

from __future__ import annotations

import sqlite3

from orgtree_lang.compile.api import compile_source
from orgtree_lang.run.factory import plain_machine
from orgtree_lang.run.registries import default_registry
from orgtree_lang.runlog.recorder import TreeRecorder
from orgtree_lang.runlog.store import TreeStore
from orgtree_lang.runtime.skills import SkillContext
from orgtree_lang.runtime.workspace import Workspace

REGISTRY = default_registry(plugins=False)
LOOP = '''\
use text

pipeline twice(word: str) -> str:
    return word + word

pipeline main(n: int) -> int:
    total = 0
    for i in range(n):
        total = total + len(text.upper(twice(str(i))))
    return total
'''


def recorded_run(tmp_path, n: int, recorder: TreeRecorder | None = None, run_id: str = "r1"):
    recorder = recorder or TreeRecorder(TreeStore(tmp_path / "state.db"))
    program = compile_source(LOOP, "loop.pipe", REGISTRY).program
    machine = plain_machine(program, registry=REGISTRY, context=SkillContext(Workspace(tmp_path)), recorder=recorder)
    machine.start(None, {"n": n}, run_id=run_id)
    machine.run()
    recorder.finish()
    return machine


def table_rows(tmp_path, table: str) -> int:
    db = sqlite3.connect(tmp_path / "state.db")
    try:
        return db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    finally:
        db.close()


def test_a_loop_of_calls_costs_a_few_rows_and_reads_back_every_node(tmp_path):
    recorded_run(tmp_path, 1500)
    # 3,000 finished calls (1,500 pipeline calls and 1,500 skill calls): grouped, two groups per batch.
    assert table_rows(tmp_path, "tree_nodes") == 1  # the run's entry
    assert table_rows(tmp_path, "tree_calls") <= 6
    with TreeStore(tmp_path / "state.db") as store:
        nodes = store.run_nodes("r1")
        uppers = [n for n in nodes if n.name == "text.upper"]
        twices = [n for n in nodes if n.name == "twice"]
        assert len(uppers) == len(twices) == 1500 and len(nodes) == 3001
        assert [n.inputs for n in uppers[:3]] == ['"00"', '"11"', '"22"'] and uppers[12].output == '"1212"'
        assert twices[7].inputs == 'word="7"' and twices[7].parent_id == "r1/main" and twices[7].status == "ok"
        assert all(n.parent_id == "r1/main" and n.caller == "main" for n in uppers)
        assert [n.seq for n in uppers] == sorted(n.seq for n in uppers)  # the order the calls were made in
        assert store.count("text.upper", "skill", "ok") == 1500 and store.count("twice", "pipeline", "ok") == 1500
        newest = store.calls("text.upper", limit=3)
        assert [n.inputs for n in newest] == ['"14991499"', '"14981498"', '"14971497"']
        assert store.node(uppers[5].id).output == '"55"'


def test_a_call_written_while_running_is_updated_in_place_not_twice(tmp_path):
    ticks = iter(range(0, 10_000_000, 10))  # every clock read is 10 s later: each flush check finds a second passed
    recorder = TreeRecorder(TreeStore(tmp_path / "state.db"), clock=lambda: float(next(ticks)))
    node = recorder.open("r1/main", "r1", None, "main", "pipeline")
    recorder.open("r1/main/slow#1", "r1", "r1/main", "slow", "pipeline", caller="main")
    recorder.flush()  # both written as running
    recorder.open("r1/main/quick#2", "r1", "r1/main", "quick", "pipeline", caller="main")
    recorder.close("r1/main/quick#2", "ok", output="1")
    recorder.close("r1/main/slow#1", "ok", output="2")
    recorder.close(node.id, "ok")
    recorder.finish()
    with TreeStore(tmp_path / "state.db") as store:
        nodes = {n.id: (n.status, n.output) for n in store.run_nodes("r1")}
    assert nodes == {"r1/main": ("ok", ""), "r1/main/slow#1": ("ok", "2"), "r1/main/quick#2": ("ok", "1")}
    assert table_rows(tmp_path, "tree_nodes") == 2 and table_rows(tmp_path, "tree_calls") == 1


def test_call_history_merges_grouped_and_single_rows_newest_first(tmp_path):
    recorder = TreeRecorder(TreeStore(tmp_path / "state.db"))
    recorded_run(tmp_path, 5, recorder, "r1")
    recorded_run(tmp_path, 5, TreeRecorder(TreeStore(tmp_path / "state.db")), "r2")
    with TreeStore(tmp_path / "state.db") as store:
        calls = store.calls("twice", limit=7)
        assert [n.run_id for n in calls] == ["r2"] * 5 + ["r1"] * 2
        assert [n.inputs for n in calls[:2]] == ['word="4"', 'word="3"']
        assert len(store.calls("twice", run_id="r1", limit=None)) == 5


def test_a_call_still_running_at_the_timer_is_written_so_pipe_tree_shows_it(tmp_path):
    now = [0.0]
    recorder = TreeRecorder(TreeStore(tmp_path / "state.db"), clock=lambda: now[0])
    recorder.open("r1/main", "r1", None, "main", "pipeline")
    recorder.open("r1/main/slow#1", "r1", "r1/main", "slow", "pipeline", caller="main")
    recorder.tick()
    with TreeStore(tmp_path / "state.db") as store:
        assert [n.id for n in store.run_nodes("r1")] == []  # within the second: nothing written yet
    now[0] = 1.5
    recorder.tick()
    with TreeStore(tmp_path / "state.db") as store:
        assert {n.id: n.status for n in store.run_nodes("r1")} == {"r1/main": "running", "r1/main/slow#1": "running"}
    recorder.finish()
