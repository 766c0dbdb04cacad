"""`[executor] remote_nodes = true` on the default thread executor: a spawned node runs whole on its own machine.

The Ray side (workers killed, drivers killed, the tree's Ray nodes) is in tests/test_ray_executor.py; these run
everywhere: the same output and result as a node run in the driver's machine, one journal step per node, the
node's own steps reported and keyed under it, replay without outside calls, budgets, cancel, and the spawns
that must stay on the driver.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from orgtree_lang.run import runs as durable_runs
from orgtree_lang.run.registries import default_registry
from orgtree_lang.run.runner import RunOptions, run_file
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.skills import SkillContext, skill
from orgtree_lang.vm.budget import Budget


@skill("tally.add", remote=True)
def add(ctx: SkillContext, folder: str, tag: str) -> str:
    """Append `tag` and the call's idempotency key to `folder`/tally.

    Args:
        folder: Where the tally is.
        tag: What to write.
    """
    with open(Path(folder) / "tally", "a", encoding="utf-8") as out:
        out.write(f"{tag} {ctx.idempotency_key}\n")
    return tag


def registry():
    skills = default_registry(plugins=False)
    skills.register(add)
    return skills


NODES = '''\
use tally, text, time

pipeline work(folder: str, name: str, n: int) -> str:
    total = 0
    for i in range(n):
        time.sleep(0.001)
        total += i
    tally.add(folder, name)
    print(name + " counted " + str(total))
    return text.upper(name) + "=" + str(total)

pipeline main(folder: str) -> str:
    a = spawn work(folder, "a", 3)
    b = spawn work(folder, "bb", 5)
    first = await a
    second = await b
    print("both done")
    return first + " " + second
'''


def _run(workspace: Path, run_id: str, source: str = NODES, remote: bool = True, **options):
    workspace.mkdir(exist_ok=True)
    (workspace / "program.pipe").write_text(source)
    if remote:
        (workspace / "orgtree.toml").write_text("[executor]\nremote_nodes = true\n")
    return run_file(workspace / "program.pipe", RunOptions(inputs={"folder": str(workspace)}, registry=registry(),
                                                           durable=True, run_id=run_id, workspace=workspace,
                                                           **options))


def _steps(workspace: Path, run_id: str) -> list[tuple]:
    with sqlite3.connect(workspace / ".orgtree" / "runs" / run_id / "journal.db") as db:
        return db.execute("SELECT seq, kind, name, node FROM steps ORDER BY seq").fetchall()


def test_remote_nodes_give_the_output_and_result_of_nodes_run_in_the_drivers_machine(tmp_path) -> None:
    here = _run(tmp_path / "here", "here", remote=False).state
    there = _run(tmp_path / "there", "there").state
    assert here.output == ["a counted 3", "bb counted 10", "both done"]
    assert there.output == here.output and there.result == here.result == "A=3 BB=10"
    assert there.steps + there.usage["steps"] == here.steps  # the nodes' statements count for the run

    # Each node is one step of the journal; its own steps are keyed under it (`there:1.4`: node 1, its step 4).
    assert [(seq, kind, name) for seq, kind, name, _ in _steps(tmp_path / "there", "there")] == \
        [(1, "node", "work"), (2, "node", "work")]
    assert (tmp_path / "there" / "tally").read_text().splitlines() == ["a there:1.4", "bb there:2.6"]
    # In the driver's machine both nodes number their steps in one sequence, taking turns at each sleep.
    assert (tmp_path / "here" / "tally").read_text().splitlines() == ["a here:7", "bb here:10"]
    reported = [json.loads(line) for line in
                (tmp_path / "there" / ".orgtree" / "runs" / "there" / "node_steps.jsonl").read_text().splitlines()]
    assert sorted((r["node"], r["seq"], r["name"]) for r in reported) == \
        [(1, 1, "time.sleep"), (1, 2, "time.sleep"), (1, 3, "time.sleep"), (1, 4, "tally.add")] + \
        [(2, i, "time.sleep") for i in range(1, 6)] + [(2, 6, "tally.add")]

    report = durable_runs.replay(tmp_path / "there", "there", registry())
    assert report.identical, report.differences
    assert report.outside_calls == 0
    assert len((tmp_path / "there" / "tally").read_text().splitlines()) == 2


def test_a_spawn_whose_pipeline_needs_the_driver_runs_in_the_drivers_machine(tmp_path) -> None:
    source = NODES.replace("use tally, text, time", "use tally, text, time, fs").replace(
        "    tally.add(folder, name)\n", "    tally.add(folder, name)\n    fs.exists(\"x\")\n")
    _run(tmp_path, "stays", source)
    assert {kind for _, kind, _, _ in _steps(tmp_path, "stays")} == {"skill"}  # fs is not remote: no node step
    assert not (tmp_path / ".orgtree" / "runs" / "stays" / "node_steps.jsonl").exists()


def test_the_steps_budget_of_the_run_stops_a_remote_node(tmp_path) -> None:
    source = ("use tally\n\npipeline spin(folder: str) -> int:\n    tally.add(folder, \"go\")\n    n = 0\n"
              "    while true:\n        n += 1\n    return n\n\n"
              "pipeline main(folder: str) -> int:\n    h = spawn spin(folder)\n    return await h\n")
    with pytest.raises(PipeRuntimeError, match="steps budget exceeded: limit 5000 steps") as stopped:
        _run(tmp_path, "spun", source, budget=Budget(max_steps=5000))
    assert stopped.value.kind == "budget"
    assert "in remote node main/spin#1 (spawned at line 11)" in stopped.value.message
    assert (tmp_path / "tally").read_text().split() == ["go", "spun:1.1"]


def test_a_remote_node_stopped_by_the_steps_budget_goes_on_in_a_resume_without_repeating_its_steps(tmp_path):
    source = ("use tally\n\npipeline count(folder: str) -> int:\n    tally.add(folder, \"go\")\n    n = 0\n"
              "    for i in range(6000):\n        n += 1\n    tally.add(folder, \"end\")\n    return n\n\n"
              "pipeline main(folder: str) -> int:\n    h = spawn count(folder)\n    return await h\n")
    with pytest.raises(PipeRuntimeError, match="steps budget exceeded"):
        _run(tmp_path, "short", source, budget=Budget(max_steps=5000))
    assert (tmp_path / "tally").read_text().splitlines() == ["go short:1.1"]
    resumed = durable_runs.resume(tmp_path, "short", registry(), RunOptions(budget=Budget(max_steps=100_000)))
    assert resumed.state.result == 6000
    # The node ran again from its start, given its first step's record: "go" was not written again.
    assert (tmp_path / "tally").read_text().splitlines() == ["go short:1.1", "end short:1.2"]
    assert [kind for _, kind, _, _ in _steps(tmp_path, "short")] == ["node"]


CANCELLED = '''\
use tally, time

pipeline watch(folder: str) -> int:
    n = 0
    try:
        while true:
            time.sleep(0.005)
            n += 1
    except err:
        tally.add(folder, "cleanup " + err.kind)
    return -1

pipeline main(folder: str) -> int:
    h = spawn watch(folder)
    time.sleep(0.2)
    cancel h
    return await h
'''


def test_a_cancelled_remote_node_sees_the_cancel_and_its_except_handler_runs(tmp_path) -> None:
    # One worker thread: the node, which runs until it is cancelled, must not hold it from main's sleep.
    state = _run(tmp_path, "cancelled", CANCELLED, executor="threads:1").state
    assert state.result == -1
    [line] = (tmp_path / "tally").read_text().splitlines()
    assert line.startswith("cleanup cancelled cancelled:1.")
    report = durable_runs.replay(tmp_path, "cancelled", registry())
    assert report.identical and report.outside_calls == 0, report.differences


def test_a_remote_nodes_failure_is_raised_where_it_is_awaited_as_a_local_nodes_is(tmp_path) -> None:
    source = ("use tally\n\npipeline bad(folder: str) -> int:\n    tally.add(folder, \"x\")\n"
              "    fail \"no luck\"\n\npipeline main(folder: str) -> str:\n    h = spawn bad(folder)\n    try:\n"
              "        await h\n    except err:\n        return err.kind + \": \" + err.message\n    return \"no\"\n")
    here = _run(tmp_path / "here", "here", source, remote=False).state
    there = _run(tmp_path / "there", "there", source).state
    assert here.result.startswith("fail: spawned bad#1 (line 8) failed: ") and "no luck" in here.result
    assert there.result == here.result
    assert [kind for _, kind, _, _ in _steps(tmp_path / "there", "there")] == ["node"]
    assert durable_runs.replay(tmp_path / "there", "there", registry()).outside_calls == 0
