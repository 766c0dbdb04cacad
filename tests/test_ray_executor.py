"""--executor ray on a real two-node Ray cluster on 127.0.0.1: same results as threads, durable runs, faults."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from orgtree_lang.run import runs as durable_runs
from orgtree_lang.run.runner import RunOptions, run_file
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.vm.budget import Budget
from tests import ray_skills
from tests.cli_testing import pipe

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                                reason="the ray extra is not installed: pip install 'orgtree-lang[ray]'")

# Ray swaps 127.0.0.1 for the machine's network address unless told the cluster is single-machine; the
# executor does the same for a loopback address (executors/ray_cluster.py).
LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


def start_cluster(temp: str, second_node: bool):
    """A head node with 1 CPU and, if asked, a second node with 1 CPU and its own resource `second`."""
    from ray._common.utils import get_default_ray_temp_dir
    from ray.cluster_utils import Cluster

    # Cluster writes the head's address to /tmp/ray/ray_current_cluster whatever temp_dir says, and does
    # not make that folder: on a fresh machine it is missing.
    os.makedirs(get_default_ray_temp_dir(), exist_ok=True)
    cluster = Cluster(initialize_head=True, connect=False, head_node_args={
        "num_cpus": 1, "node_ip_address": "127.0.0.1", "include_dashboard": False, "temp_dir": temp})
    if second_node:
        cluster.add_node(num_cpus=1, resources={"second": 1}, node_ip_address="127.0.0.1", temp_dir=temp)
    return cluster


@pytest.fixture(scope="module")
def cluster():
    """One cluster for the module (starting one takes 10-30 s here); this process is connected to it."""
    saved = {name: os.environ.get(name) for name in LOOPBACK}
    os.environ.update(LOOPBACK)
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    import ray

    running = start_cluster(temp, second_node=True)
    # Ray puts the driver's working folder first on its workers' path: from a checkout, its orgtree_lang/
    # (which has no stdlib: that is the top-level stdlib/ folder, installed as orgtree_lang.stdlib) would
    # shadow the installed package.
    previous = os.getcwd()
    os.chdir(temp)
    try:
        ray.init(address=running.address, include_dashboard=False, log_to_driver=False)
        # The test skills live in this checkout, not in an installed package a worker could import.
        ray.cloudpickle.register_pickle_by_value(ray_skills)
        yield running
    finally:
        os.chdir(previous)
        ray.shutdown()
        running.shutdown()
        shutil.rmtree(temp, ignore_errors=True)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


LEDGER = '''\
use ledger, code, time, web

pipeline main(folder: str) -> str:
    first = ledger.apply(folder, "a")
    ran = code.run("python", "print(sum(range(10)))")
    print(ran["stdout"])
    time.sleep(0.05)
    print(web.extract("<p>hello from a page</p>"))
    second = ledger.apply(folder, "b")
    return first + " | " + second
'''


def _durable_run(program: Path, folder: Path, executor: str, run_id: str):
    options = RunOptions(inputs={"folder": str(folder)}, registry=ray_skills.registry(), durable=True,
                         executor=executor, run_id=run_id, workspace=program.parent)
    return run_file(program, options)


def test_a_program_gives_the_same_output_on_threads_and_on_ray_whose_workers_run_its_remote_calls(
        cluster, tmp_path) -> None:
    program = tmp_path / "ledger.pipe"
    program.write_text(LEDGER)
    here, there = tmp_path / "threads", tmp_path / "ray"
    here.mkdir(), there.mkdir()
    local = _durable_run(program, here, "threads:2", "local1").state
    remote = _durable_run(program, there, f"ray:{cluster.address}", "remote1").state
    assert local.output == ["45\n", "hello from a page"]
    assert remote.output == local.output
    assert local.result == "a local1:1 | b local1:4"  # the keys: run id and step (web.extract is pure: no step)
    assert remote.result == "a remote1:1 | b remote1:4"
    pids = {line.split()[1] for line in (there / "tries").read_text().splitlines()}
    assert str(os.getpid()) not in pids  # the remote calls ran in Ray worker processes
    assert {line.split()[1] for line in (here / "tries").read_text().splitlines()} == {str(os.getpid())}

    tree = pipe("tree", "remote1", "--every-call", "--workspace", tmp_path)
    calls = [line.split("─ ", 1)[1] for line in tree.stdout.splitlines() if "─ " in line]
    assert [call.split()[0] for call in calls] == ["ledger.apply", "code.run", "time.sleep", "web.extract",
                                                   "ledger.apply"]
    assert all("  [ray node " in call for call in calls), tree.stdout
    assert "[ray node " not in tree.stdout.split("ledger.apply")[0]  # the pipeline node ran on the driver
    assert "[ray node " not in pipe("tree", "local1", "--every-call", "--workspace", tmp_path).stdout


BRANCHES = '''\
use ledger, code

pipeline work(folder: str, name: str) -> str:
    ran = code.run("python", "print(" + str(len(name)) + " * 7)")
    print(name + " " + ran["stdout"])
    return ledger.apply(folder, name)

pipeline main(folder: str) -> str:
    parallel:
        a = work(folder, "a")
        b = work(folder, "bb")
        c = work(folder, "ccc")
    return a + " | " + b + " | " + c
'''


def test_parallel_branches_give_the_same_output_on_threads_and_on_ray(cluster, tmp_path) -> None:
    program = tmp_path / "branches.pipe"
    program.write_text(BRANCHES)
    here, there = tmp_path / "threads", tmp_path / "ray"
    here.mkdir(), there.mkdir()
    local = _durable_run(program, here, "threads:4", "plocal").state
    remote = _durable_run(program, there, f"ray:{cluster.address}", "premote").state
    assert sorted(local.output) == ["a 7\n", "bb 14\n", "ccc 21\n"]
    assert remote.output == local.output and remote.result == local.result.replace("plocal", "premote")
    assert str(os.getpid()) not in {line.split()[1] for line in (there / "tries").read_text().splitlines()}
    tree = pipe("tree", "premote", "--every-call", "--workspace", tmp_path).stdout
    assert tree.count("[ray node ") == 6, tree  # 3 code.run and 3 ledger.apply, each on a worker


def test_replay_of_a_ray_run_makes_no_outside_call(cluster, tmp_path) -> None:
    program = tmp_path / "ledger.pipe"
    program.write_text(LEDGER)
    folder = tmp_path / "effects"
    folder.mkdir()
    _durable_run(program, folder, f"ray:{cluster.address}", "rayrun")
    tries = (folder / "tries").read_text()
    report = durable_runs.replay(tmp_path, "rayrun", ray_skills.registry())
    assert report.identical, report.differences
    assert report.outside_calls == 0
    assert (folder / "tries").read_text() == tries


GATED = """\
use ledger, fs

pipeline main(folder: str) -> str:
    first = ledger.apply(folder, "a")
    gate = fs.read("gate.txt")
    return first + " | " + ledger.apply(folder, gate)
"""


def test_resume_on_ray_reuses_the_journaled_remote_calls_and_runs_the_rest_there(cluster, tmp_path) -> None:
    program = tmp_path / "gated.pipe"
    program.write_text(GATED)
    folder = tmp_path / "effects"
    folder.mkdir()
    with pytest.raises(Exception, match="gate.txt"):
        _durable_run(program, folder, f"ray:{cluster.address}", "gated")
    (tmp_path / "gate.txt").write_text("b")
    resumed = durable_runs.resume(tmp_path, "gated", ray_skills.registry(),
                                  RunOptions(executor=f"ray:{cluster.address}"))
    assert resumed.state.result == "a gated:1 | b gated:3"
    tries = [line.split() for line in (folder / "tries").read_text().splitlines()]
    assert [key for key, _ in tries] == ["gated:1", "gated:3"]  # step 1 was not called again
    assert str(os.getpid()) not in {pid for _, pid in tries}


# ledger.apply takes a CPU, so each call is a task of its own; ledger.apply_waiting, a tenth, runs on the waiting pool.
@pytest.mark.parametrize("apply", ["ledger.apply", "ledger.apply_waiting"])
def test_a_worker_killed_mid_task_is_retried_with_the_same_key_and_the_effect_happens_once(cluster, tmp_path, apply):
    program = tmp_path / "hold.pipe"
    program.write_text('use ledger\n\npipeline main(folder: str) -> str:\n'
                       f'    return {apply}(folder, "held", hold=true)\n')
    folder = tmp_path / "effects"
    folder.mkdir()
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["state"] = _durable_run(program, folder, f"ray:{cluster.address}", "killed").state
        except Exception as exc:  # reported by the assertions below
            outcome["error"] = exc

    runner = threading.Thread(target=run)
    runner.start()
    pid_file = folder / "pid"
    deadline = time.monotonic() + 60
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pid_file.exists(), "the task never started on a worker"
    time.sleep(0.2)  # the pid is written after the effect: the worker dies holding an applied effect
    os.kill(int(pid_file.read_text()), signal.SIGKILL)
    runner.join(90)
    assert not runner.is_alive()
    assert "error" not in outcome, outcome.get("error")
    assert outcome["state"].result == "held killed:1"
    tries = [line.split() for line in (folder / "tries").read_text().splitlines()]
    assert len(tries) == 2 and tries[0][0] == tries[1][0] == "killed:1"
    assert tries[0][1] != tries[1][1]  # a second worker process made the second try
    assert (folder / "ledger").read_text().split() == ["killed:1"]


@pytest.mark.parametrize("apply", ["ledger.apply", "ledger.apply_waiting"])
def test_the_seconds_budget_holds_for_a_call_on_a_worker_and_its_task_is_cancelled(cluster, tmp_path, apply) -> None:
    program = tmp_path / "hold.pipe"
    program.write_text('use ledger\n\npipeline main(folder: str) -> str:\n'
                       f'    return {apply}(folder, "held", hold=true)\n')
    folder = tmp_path / "effects"
    folder.mkdir()
    options = RunOptions(inputs={"folder": str(folder)}, registry=ray_skills.registry(), durable=True,
                         executor=f"ray:{cluster.address}", run_id="limited", workspace=tmp_path,
                         budget=Budget(max_seconds=4))
    started = time.monotonic()
    with pytest.raises(PipeRuntimeError, match="seconds") as stopped:
        run_file(program, options)
    assert stopped.value.kind == "budget"
    assert time.monotonic() - started < 30  # not the 120 s the call would take
    worker = int((folder / "pid").read_text())
    deadline = time.monotonic() + 30
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(worker), "the task went on on the cluster after the run stopped"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a killed worker may stay a zombie until Ray's raylet reaps it
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


PATIENT = '''\
use time

pipeline main() -> str:
    time.sleep(0.05)
    print("started")
    time.sleep(4)
    return "done"
'''


def test_a_driver_killed_while_ray_runs_its_call_is_resumed_on_ray(cluster, tmp_path) -> None:
    program = tmp_path / "patient.pipe"
    program.write_text(PATIENT)
    driver = subprocess.Popen([sys.executable, "-m", "orgtree_lang.cli.main", "run", str(program),
                               "--executor", f"ray:{cluster.address}"], cwd=tmp_path, text=True,
                              env={**os.environ, "PYTHONUNBUFFERED": "1"}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    assert driver.stdout.readline().strip() == "started"
    driver.send_signal(signal.SIGKILL)
    driver.communicate(timeout=60)
    [run_id] = [p.name for p in (tmp_path / ".orgtree" / "runs").iterdir()]
    done = pipe("resume", run_id, "--executor", f"ray:{cluster.address}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    # Prints are not journaled (docs/durability.md, Limits): a line printed after the last checkpoint may
    # show again on the terminal, never twice in the run's recorded output.
    assert done.stdout.splitlines() in (["done"], ["started", "done"])
    shown = pipe("show", run_id, cwd=tmp_path)
    assert shown.stdout.count("started") == 1, shown.stdout


def test_a_lost_cluster_stops_the_run_with_a_clear_error_and_resume_finishes_it_locally(tmp_path, monkeypatch):
    for name, value in LOOPBACK.items():
        monkeypatch.setenv(name, value)
    program = tmp_path / "patient.pipe"
    program.write_text(PATIENT)
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")
    doomed = start_cluster(temp, second_node=False)  # its own: this test shuts it down under a run
    address = doomed.address
    try:
        driver = subprocess.Popen([sys.executable, "-m", "orgtree_lang.cli.main", "run", str(program),
                                   "--executor", f"ray:{address}"], cwd=tmp_path, text=True,
                                  env={**os.environ, "PYTHONUNBUFFERED": "1"},
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            assert driver.stdout.readline().strip() == "started"
            time.sleep(1)  # the driver now waits on `time.sleep(4)`, which runs on the cluster
        finally:
            doomed.shutdown()
        out, err = driver.communicate(timeout=120)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    assert driver.returncode == 70, err
    assert f"the Ray cluster at {address} was lost" in err
    run_id = err.split("continue it with `pipe resume ")[1].split()[0].rstrip("`")
    done = pipe("resume", run_id, "--workspace", tmp_path, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["done"]  # "started" was printed by the first attempt, not again


def test_a_waiting_skill_asks_ray_for_the_cpu_share_it_declares(cluster, tmp_path) -> None:
    program = tmp_path / "waits.pipe"
    program.write_text("use ledger\n\npipeline main(folder: str) -> int:\n"
                       "    done = for i in range(3) parallel:\n        ledger.wait(folder, 0.2)\n        i\n"
                       "    return len(done)\n")
    assert _durable_run(program, tmp_path, f"ray:{cluster.address}", "waits").state.result == 3
    lines = [line.split() for line in (tmp_path / "waits").read_text().splitlines()]
    assert [cpu for cpu, _ in lines] == ["0.1"] * 3  # ledger.wait says cpu=0.1; a task's default is 1
    assert str(os.getpid()) not in {pid for _, pid in lines}


def test_waiting_calls_made_at_once_wait_together_in_one_worker_process(cluster, tmp_path) -> None:
    # Each ledger.gather call returns only once all eight are waiting: run one after another, they would fail.
    program = tmp_path / "gather.pipe"
    program.write_text("use ledger\n\npipeline main(folder: str) -> list[str]:\n"
                       "    done = for i in range(8) parallel:\n        ledger.gather(folder, 8)\n"
                       "    return done\n")
    assert _durable_run(program, tmp_path, f"ray:{cluster.address}", "gather").state.result == ["met"] * 8
    pids = set((tmp_path / "arrived").read_text().split())
    assert len(pids) == 1 and str(os.getpid()) not in pids  # the waiting pool's one process, not a worker per call


# ---- remote nodes: `[executor] remote_nodes = true` runs whole spawned nodes on the cluster --------------------

NODES = '''\
use ledger, code

pipeline work(folder: str, name: str) -> str:
    ran = code.run("python", "print(" + str(len(name)) + " * 7)")
    print(name + " " + ran["stdout"])
    tag = ledger.apply(folder, name)
    return name + "=" + ran["stdout"]

pipeline main(folder: str) -> str:
    a = spawn work(folder, "a")
    b = spawn work(folder, "bb")
    first = await a
    second = await b
    print("both done")
    return first + second
'''


def _remote_nodes(workspace: Path) -> None:
    (workspace / "orgtree.toml").write_text("[executor]\nremote_nodes = true\n")


def test_spawned_nodes_run_whole_on_ray_workers_with_the_output_they_give_locally(cluster, tmp_path) -> None:
    here, there = tmp_path / "local", tmp_path / "ray"
    for workspace in (here, there):
        (workspace / "effects").mkdir(parents=True)
        (workspace / "nodes.pipe").write_text(NODES)
    _remote_nodes(there)
    local = _durable_run(here / "nodes.pipe", here / "effects", "threads:4", "nlocal").state
    remote = _durable_run(there / "nodes.pipe", there / "effects", f"ray:{cluster.address}", "nremote").state
    assert local.output == ["a 7\n", "bb 14\n", "both done"]
    assert remote.output == local.output and remote.result == local.result == "a=7\nbb=14\n"
    tries = [line.split() for line in (there / "effects" / "tries").read_text().splitlines()]
    # Each node is one journal step (1 and 2); its own steps are keyed under it: code.run is .1, ledger.apply .2.
    assert sorted(key for key, _ in tries) == ["nremote:1.2", "nremote:2.2"]
    assert str(os.getpid()) not in {pid for _, pid in tries}  # the nodes' machines ran in Ray workers
    local_keys = sorted(line.split()[0] for line in (here / "effects" / "tries").read_text().splitlines())
    assert local_keys == ["nlocal:3", "nlocal:4"]  # locally every step of the run shares one numbering

    tree = pipe("tree", "nremote", "--every-call", "--workspace", there).stdout
    nodes = [line for line in tree.splitlines() if "work#" in line]
    assert len(nodes) == 2 and all("[ray node " in line for line in nodes), tree
    assert tree.count("code.run  skill  ok") == 2 and tree.count("[ray node ") == 6, tree
    assert "[ray node " not in pipe("tree", "nlocal", "--every-call", "--workspace", here).stdout

    report = durable_runs.replay(there, "nremote", ray_skills.registry())
    assert report.identical, report.differences
    assert report.outside_calls == 0
    assert len((there / "effects" / "tries").read_text().splitlines()) == 2


HELD = '''\
use ledger

pipeline hold(folder: str) -> str:
    first = ledger.apply(folder, "a")
    second = ledger.apply(folder, "b", hold=true)
    return first + " | " + second

pipeline main(folder: str) -> str:
    h = spawn hold(folder)
    return await h
'''


def _held_node(tmp_path: Path) -> Path:
    (tmp_path / "held.pipe").write_text(HELD)
    _remote_nodes(tmp_path)
    folder = tmp_path / "effects"
    folder.mkdir()
    return folder


def _wait_for(path: Path, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert path.exists(), f"{path.name} never appeared"


def test_a_worker_killed_in_the_middle_of_a_remote_node_runs_it_again_without_repeating_its_effects(
        cluster, tmp_path) -> None:
    folder = _held_node(tmp_path)
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["state"] = _durable_run(tmp_path / "held.pipe", folder, f"ray:{cluster.address}", "nodekill").state
        except Exception as exc:  # reported by the assertions below
            outcome["error"] = exc

    runner = threading.Thread(target=run)
    runner.start()
    _wait_for(folder / "pid")
    time.sleep(0.5)  # the worker dies after it reported step 1 and applied step 2's effect
    os.kill(int((folder / "pid").read_text()), signal.SIGKILL)
    runner.join(120)
    assert not runner.is_alive()
    assert "error" not in outcome, outcome.get("error")
    assert outcome["state"].result == "a nodekill:1.1 | b nodekill:1.2"
    tries = [line.split() for line in (folder / "tries").read_text().splitlines()]
    assert [key for key, _ in tries] == ["nodekill:1.1", "nodekill:1.2", "nodekill:1.2"]  # step 1 not again
    assert tries[1][1] != tries[2][1]  # a second worker ran the node again
    assert (folder / "ledger").read_text().split() == ["nodekill:1.1", "nodekill:1.2"]


DRIVER = '''\
import importlib.util, sys
from pathlib import Path

import ray

spec = importlib.util.spec_from_file_location("ray_skills", {skills!r})
ray_skills = importlib.util.module_from_spec(spec)
sys.modules["ray_skills"] = ray_skills
spec.loader.exec_module(ray_skills)
ray.cloudpickle.register_pickle_by_value(ray_skills)
from orgtree_lang.run.runner import RunOptions, run_file

run_file(Path("held.pipe"), RunOptions(inputs={{"folder": {folder!r}}}, registry=ray_skills.registry(), durable=True,
                                       executor={executor!r}, run_id="nodedriver", workspace=Path(".")))
'''


def test_a_driver_killed_while_a_remote_node_runs_is_resumed_without_repeating_the_nodes_effects(
        cluster, tmp_path) -> None:
    folder = _held_node(tmp_path)
    script = tmp_path / "driver.py"
    script.write_text(DRIVER.format(skills=ray_skills.__file__, folder=str(folder),
                                    executor=f"ray:{cluster.address}"))
    driver = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    try:
        _wait_for(folder / "pid")
        time.sleep(0.5)  # step 1's record has reached the driver, which wrote it to the run's folder
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.communicate(timeout=60)
    resumed = durable_runs.resume(tmp_path, "nodedriver", ray_skills.registry(),
                                  RunOptions(executor=f"ray:{cluster.address}"))
    assert resumed.state.result == "a nodedriver:1.1 | b nodedriver:1.2"
    keys = [line.split()[0] for line in (folder / "tries").read_text().splitlines()]
    assert keys == ["nodedriver:1.1", "nodedriver:1.2", "nodedriver:1.2"]  # step 1 was handed back, not rerun
    assert (folder / "ledger").read_text().split() == ["nodedriver:1.1", "nodedriver:1.2"]
    report = durable_runs.replay(tmp_path, "nodedriver", ray_skills.registry())
    assert report.identical and report.outside_calls == 0, report.differences


SPINNING = '''\
use ledger

pipeline spin(folder: str) -> int:
    ledger.apply(folder, "started")
    n = 0
    while true:
        n += 1
    return n

pipeline main(folder: str) -> int:
    h = spawn spin(folder)
    return await h
'''


def test_the_steps_budget_of_the_run_stops_a_remote_node(cluster, tmp_path) -> None:
    (tmp_path / "spin.pipe").write_text(SPINNING)
    _remote_nodes(tmp_path)
    folder = tmp_path / "effects"
    folder.mkdir()
    options = RunOptions(inputs={"folder": str(folder)}, registry=ray_skills.registry(), durable=True,
                         executor=f"ray:{cluster.address}", run_id="spun", workspace=tmp_path,
                         budget=Budget(max_steps=20_000))
    with pytest.raises(PipeRuntimeError, match="steps budget exceeded: limit 20000 steps") as stopped:
        run_file(tmp_path / "spin.pipe", options)
    assert stopped.value.kind == "budget" and "in remote node main/spin#1" in stopped.value.message
    [(key, pid)] = [line.split() for line in (folder / "tries").read_text().splitlines()]
    assert key == "spun:1.1" and pid != str(os.getpid())  # it ran on a worker, and stopped there


def test_the_seconds_budget_of_the_run_stops_a_remote_node_and_its_task(cluster, tmp_path) -> None:
    folder = _held_node(tmp_path)
    options = RunOptions(inputs={"folder": str(folder)}, registry=ray_skills.registry(), durable=True,
                         executor=f"ray:{cluster.address}", run_id="nodelimited", workspace=tmp_path,
                         budget=Budget(max_seconds=6))
    started = time.monotonic()
    with pytest.raises(PipeRuntimeError, match="seconds") as stopped:
        run_file(tmp_path / "held.pipe", options)
    assert stopped.value.kind == "budget"
    assert time.monotonic() - started < 40  # not the 120 s the node's second step would take
    worker = int((folder / "pid").read_text())
    deadline = time.monotonic() + 30
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(worker), "the node went on on the cluster after the run stopped"


def test_a_run_on_a_new_local_cluster_prints_no_note_about_ray_token_authentication(cluster, tmp_path) -> None:
    # As from a shell: no RAY_AUTH_MODE (a Ray started in this process sets it), no cluster address.
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_AUTH_MODE", "RAY_ADDRESS")}
    program = tmp_path / "nap.pipe"
    program.write_text("use time\n\npipeline main() -> int:\n    time.sleep(0.1)\n    return 1\n")
    ran = subprocess.run([sys.executable, "-m", "orgtree_lang.cli.main", "run", str(program), "--executor", "ray",
                          "--run-id", "private"],
                         cwd=tmp_path, env={**env, **LOOPBACK}, capture_output=True, text=True, timeout=300)
    assert (ran.returncode, ran.stdout) == (0, "1\n"), ran.stderr
    assert "Token authentication" not in ran.stderr, ran.stderr  # Ray's note that its default is on (it stays on)
    # A private instance: not the module's cluster, which Ray recorded in /tmp/ray/ray_current_cluster as the
    # machine's current one (ray.init(address=None) would have joined it).
    import ray

    tree = pipe("tree", "private", "--every-call", "--workspace", tmp_path).stdout
    [where] = re.findall(r"\[ray node (\w+)\]", tree)
    assert where not in {node["NodeID"][:8] for node in ray.nodes()}, tree
