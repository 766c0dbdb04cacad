"""Parallel blocks: overlapping slow calls, the same output whatever the thread timing, shared budgets, saved
states that hold every task, and replays with no outside call."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orgtree_lang.compile.api import compile_source
from orgtree_lang.run import runs as durable_runs
from orgtree_lang.run.factory import plain_machine
from orgtree_lang.run.registries import default_registry
from orgtree_lang.run.runner import RunOptions, run_program
from orgtree_lang.executors.threads import ThreadExecutor
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.skills import SkillContext
from orgtree_lang.runtime.workspace import Workspace
from orgtree_lang.vm.budget import Budget, BudgetExceeded
from orgtree_lang.vm.state import RunState

REGISTRY = default_registry(plugins=False)

HELPERS = '''\
use time

pipeline work(name: str, pause: int, spin: int) -> str:
    print(f"{name} starts")
    time.sleep(pause / 1000)
    x = 0
    for i in range(spin):
        x += i
    print(f"{name} ends {x}")
    return name

pipeline explode(name: str, pause: int) -> str:
    print(f"{name} starts")
    time.sleep(pause / 1000)
    fail f"{name} exploded"
'''


class DelayedExecutor:
    """Runs each call on a thread after a random delay: a worker pool with the worst timing we can make."""

    name = "delayed"

    def __init__(self, seed: int, most: float = 0.02) -> None:
        self.rng = random.Random(seed)
        self.most = most
        self.pool = ThreadExecutor(8)
        self.lock = threading.Lock()

    def submit(self, call):
        with self.lock:
            delay = self.rng.uniform(0, self.most)

        def late():
            time.sleep(delay)
            return call()

        return self.pool.submit(late)

    def close(self) -> None:
        self.pool.close()


def _machine(source, root: Path, executor=None, budget: Budget | None = None, printed: list | None = None):
    program = compile_source(source, "par.pipe", REGISTRY).program if isinstance(source, str) else source
    out = printed if printed is not None else []
    machine = plain_machine(program, REGISTRY, SkillContext(Workspace(root)), budget=budget, printer=out.append,
                            executor=executor)
    return machine, out


def _run(source: str, root: Path, executor=None, budget: Budget | None = None) -> list[str]:
    machine, out = _machine(source, root, executor, budget)
    machine.start()
    try:
        machine.run()
    except PipeRuntimeError as err:
        out.append(f"ERROR {err.kind}: {err.message}")
    finally:
        if executor is not None:
            executor.close()
    return out


def test_slow_calls_in_branches_overlap(tmp_path: Path) -> None:
    source = HELPERS + '''
pipeline main():
    parallel:
        a = work("a", 300, 0)
        b = work("b", 300, 0)
        c = work("c", 300, 0)
        d = work("d", 300, 0)
    print(a + b + c + d)
'''
    executor = ThreadExecutor(8)
    machine, out = _machine(source, tmp_path, executor)
    machine.start()
    started = time.monotonic()
    try:
        machine.run()
    finally:
        executor.close()
    elapsed = time.monotonic() - started
    assert out[-1] == "abcd"
    assert elapsed < 0.9, f"four 0.3 s sleeps in parallel took {elapsed:.2f} s"


PROGRAM = HELPERS + '''
pipeline main():
    try:
        parallel(limit=3):
            a = work("a", 15, 100)
            b = work("b", 1, 300)
            parallel:
                c = work("c", 8, 10)
                d = work("d", 2, 200)
            e = work("e", 4, 0)
        print(a + b + c + d + e)
        parallel:
            f = work("f", 5, 70)
            g = explode("g", 1)
            h = work("h", 1, 0)
    except err:
        print(err.message)
'''


def test_worker_delays_do_not_change_what_the_program_sees(tmp_path: Path) -> None:
    inline = _run(PROGRAM, tmp_path)  # no executor: every slow call runs on the VM's thread, in issue order
    assert "abcde" in inline and inline[-1].startswith("parallel block: branch 2 (line ")
    for seed in range(4):
        assert _run(PROGRAM, tmp_path, DelayedExecutor(seed)) == inline, f"seed {seed}"
    assert _run(PROGRAM, tmp_path, ThreadExecutor(1)) == inline


SPAWNING = HELPERS + '''
pipeline watcher() -> int:
    n = 0
    try:
        while true:
            time.sleep(0.002)
            n += 1
    except err:
        print(f"watcher stops: {err.kind}")
    return n

pipeline main():
    h = spawn work("s", 6, 50)
    w = spawn watcher()
    parallel:
        a = work("a", 3, 20)
        b = work("b", 1, 80)
    print(await h)
    names = for k in [3, 1, 2] parallel(limit=2):
        work(f"it{k}", k, 10 * k)
    print(names)
    cancel w
    print(await w)
    late = spawn explode("late", 1)
    try:
        print(await late)
    except err:
        print(err.message)
'''


@pytest.mark.parametrize("source", [PROGRAM, SPAWNING], ids=["parallel", "spawn"])
def test_a_state_saved_at_any_statement_continues_identically(tmp_path: Path, source: str) -> None:
    """Pause after every statement, save the state as JSON, and continue in a new machine: all tasks, the
    calls in flight (issued again) and the scheduler's turn are in the state, so the output is the same."""
    expected = _run(source, tmp_path)
    assert _run(source, tmp_path, DelayedExecutor(7)) == expected
    program = compile_source(source, "par.pipe", REGISTRY).program
    executor = ThreadExecutor(4)
    machine, out = _machine(program, tmp_path, executor)
    machine.start()
    saved_with_tasks = 0
    try:
        while True:
            try:
                state = machine.run(pause_after=1)
            except PipeRuntimeError as err:
                out.append(f"ERROR {err.kind}: {err.message}")
                break
            if state.status != "paused":
                break
            text = state.dumps()
            loaded = RunState.loads(text)
            assert loaded.dumps() == text
            saved_with_tasks += len(loaded.tasks) > 1
            machine, out = _machine(program, tmp_path, executor, printed=out)
            machine.attach(loaded)
    finally:
        executor.close()
    assert out == expected
    assert saved_with_tasks > 20


def test_branches_share_the_run_budgets_and_seconds_are_wall_time(tmp_path: Path) -> None:
    source = HELPERS + '''
pipeline main():
    parallel:
        a = work("a", 300, 0)
        b = work("b", 300, 0)
        c = work("c", 300, 0)
    print("done")
'''
    # Three 0.3 s sleeps side by side fit in 0.7 s of wall time, though they add up to 0.9 s.
    assert _run(source, tmp_path, ThreadExecutor(4), Budget(max_seconds=0.7))[-1] == "done"
    spin = HELPERS + '''
pipeline main():
    parallel:
        a = work("a", 0, 200)
        b = work("b", 0, 200)
    print("done")
'''
    # Each branch alone runs about 206 statements; together they go over 300.
    assert _run(spin, tmp_path, ThreadExecutor(4), Budget(max_steps=300))[-1].startswith("ERROR budget")
    assert _run(spin, tmp_path, ThreadExecutor(4), Budget(max_steps=600))[-1] == "done"
    calls = HELPERS + '''
pipeline main():
    parallel:
        a = work("a", 0, 0)
        b = work("b", 0, 0)
        c = work("c", 0, 0)
    print("done")
'''
    assert _run(calls, tmp_path, ThreadExecutor(4), Budget(max_skill_calls=2))[-1].startswith("ERROR budget")


def test_the_seconds_budget_stops_a_run_waiting_on_slow_calls(tmp_path: Path) -> None:
    source = HELPERS + '''
pipeline main():
    parallel:
        a = work("a", 2000, 0)
        b = work("b", 2000, 0)
    print("done")
'''
    machine, _ = _machine(source, tmp_path, ThreadExecutor(4), Budget(max_seconds=0.3))
    machine.start()
    started = time.monotonic()
    with pytest.raises(BudgetExceeded):
        machine.run()
    assert time.monotonic() - started < 1.5


# ---- random programs ------------------------------------------------------------------------------------


_LEAF = st.tuples(st.sampled_from(["work", "work", "work", "explode", "try"]), st.integers(0, 8), st.integers(0, 160))
_BRANCH = st.recursive(_LEAF, lambda inner: st.tuples(st.just("nested"), st.lists(inner, min_size=1, max_size=3),
                                                      st.one_of(st.none(), st.integers(1, 3))), max_leaves=8)


def _lines(branch, names: list[str]) -> list[str]:
    """A branch as lines: a call, a failing call, a try that catches, or a nested parallel block."""
    if branch[0] == "nested":
        _, inner, limit = branch
        lines = [f"parallel(limit={limit}):" if limit else "parallel:"]
        for sub in inner:
            lines.extend("    " + line for line in _lines(sub, names))
        return lines
    kind, pause, spin = branch
    name = f"v{len(names)}"
    names.append(name)
    if kind == "work":
        return [f'{name} = work("{name}", {pause}, {spin})']
    if kind == "explode":
        return [f'{name} = explode("{name}", {pause})']
    return ["try:", f'    {name} = explode("{name}", {pause})', "except e:", '    print(f"caught {e.kind}")',
            f'    {name} = "saved"']


@st.composite
def _programs(draw) -> str:
    names: list[str] = []
    branches = draw(st.lists(_BRANCH, min_size=1, max_size=5))
    limit = draw(st.one_of(st.none(), st.integers(1, 4)))
    body = [f"parallel(limit={limit}):" if limit else "parallel:"]
    for branch in branches:
        body.extend("    " + line for line in _lines(branch, names))
    body.append("print(" + " + \",\" + ".join(names) + ")")
    lines = ["pipeline main():", "    try:"] + ["        " + line for line in body]
    lines += ["    except err:", "        print(err.message)"]
    return HELPERS + "\n" + "\n".join(lines) + "\n"


@pytest.mark.slow
@settings(max_examples=15)
@given(source=_programs(), seeds=st.lists(st.integers(0, 10_000), min_size=2, max_size=2))
def test_random_parallel_programs_print_the_same_under_any_timing(tmp_path_factory, source: str,
                                                                  seeds: list[int]) -> None:
    root = tmp_path_factory.mktemp("random")
    inline = _run(source, root)
    assert inline, source
    for seed in seeds:
        assert _run(source, root, DelayedExecutor(seed)) == inline, source


@pytest.mark.slow
@settings(max_examples=8)
@given(source=_programs())
def test_random_parallel_programs_replay_identically_with_no_outside_call(tmp_path_factory, source: str) -> None:
    root = tmp_path_factory.mktemp("replay")
    path = root / "par.pipe"
    path.write_text(source, encoding="utf-8")
    printed: list[str] = []
    options = RunOptions(printer=printed.append, durable=True, durability="process", executor="threads:4")
    try:
        machine = run_program(compile_source(source, "par.pipe", REGISTRY).program, root, REGISTRY, options,
                              source=source, program_path=path)
        run_id = machine.state.run_id
    except PipeRuntimeError as err:
        run_id = err.state.run_id
    report = durable_runs.replay(root, run_id, REGISTRY)
    assert report.identical and report.outside_calls == 0, report.differences
    assert report.output == printed


def test_the_readme_parallel_session_prints_what_it_shows(tmp_path: Path) -> None:
    from cli_testing import pipe
    from readme_examples import programs, sessions

    (tmp_path / "fanout.pipe").write_text(programs()["fanout.pipe"], encoding="utf-8")
    argv, expected = next(s for s in sessions() if "fanout.pipe" in s[0])
    done = pipe(*argv[1:], cwd=tmp_path, env={"PIPE_NO_PLUGINS": "1"})
    assert done.stdout + done.stderr == expected


def test_a_terminal_shows_a_line_as_each_branch_starts_and_ends(capsys) -> None:
    from types import SimpleNamespace

    from orgtree_lang.cli.run import RunSession

    session = RunSession(SimpleNamespace(json=False), "run1")
    session.progress = SimpleNamespace(clear=lambda: None)  # as on a terminal
    node = SimpleNamespace(kind="pipeline", id="run1/main/parallel#1.2", name="branch 2 (line 7)",
                           status="running", error=None, duration_ms=None)
    session._tree_progress("open", node)
    node.status, node.error, node.duration_ms = "error", "cancelled", 312
    session._tree_progress("close", node)
    session._tree_progress("open", SimpleNamespace(kind="pipeline", id="run1/main/fetch#1", name="fetch"))
    assert capsys.readouterr().err.splitlines() == [
        "  ⇉ main/parallel#1.2: branch 2 (line 7) started",
        "  ✗ main/parallel#1.2: branch 2 (line 7) cancelled in 0.31 s"]


@pytest.mark.parametrize("name", ["PROGRAM", "SPAWNING"])
def test_a_durable_run_with_tasks_replays_identically_with_no_outside_call(tmp_path: Path, name: str) -> None:
    source = globals()[name]
    path = tmp_path / "par.pipe"
    path.write_text(source, encoding="utf-8")
    printed: list[str] = []
    options = RunOptions(printer=printed.append, durable=True, durability="process", executor="threads:4")
    machine = run_program(compile_source(source, "par.pipe", REGISTRY).program, tmp_path, REGISTRY, options,
                          source=source, program_path=path)
    assert printed == _run(source, tmp_path)  # the same lines as an in-memory run with no executor
    report = durable_runs.replay(tmp_path, machine.state.run_id, REGISTRY)
    assert report.identical and report.outside_calls == 0, report.differences
    assert report.output == printed


def test_the_research_example_runs_three_branches_then_merges(tmp_path: Path) -> None:
    from cli_testing import pipe

    repo = Path(__file__).resolve().parent.parent
    result = pipe("run", str(repo / "examples" / "org_research.pipe"), "--workspace", str(tmp_path),
                  "--model", f"scripted:{repo / 'examples' / 'models' / 'research.yaml'}",
                  env={"PIPE_NO_PLUGINS": "1"})
    assert result.returncode == 0, result.stderr
    # Each branch prints when its answer is delivered: in the order the questions were asked.
    assert result.stdout.splitlines() == [
        "researched the history of the org tree",
        "researched the design of the org tree",
        "researched the risks of the org tree",
        "The org tree began as a record of calls, its nodes now run as tasks of one run, and the price is "
        "head-of-line waiting.",
    ]
