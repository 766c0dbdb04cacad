"""Crash harness over parallel blocks: SIGKILL `pipe run` / `pipe resume` while branches are running (slow calls in
flight, checkpoints holding several tasks and the outstanding-call table), resume until done, and check that the
run ends exactly as an uninterrupted one: same printed lines in the same order, every side effect exactly once,
no finished branch redone, and a replay with zero outside calls. A second program does the same work in the
nodes of two routes (messages routed by topic, each route's node started by a send or by the node before it).

Kills land at random times, or right after the k-th real skill execution of the process (seen in the execution
log of tests/durable_testing.py), so most of them hit the middle of a parallel block. By default up to 50 trials
run, a few at a time (up to 25 over the routed program); like the sequential harness (tests/test_durable_crash.py),
no new trial starts after 15 s of a program's trials, and at least 6 run whatever the load (trial n draws its kills
from its own seed, so a capped run is the first trials of the full one). PIPE_CRASH_TRIALS=N runs exactly N (and
half as many routed) with no time cap; PIPE_CRASH_SEED picks the seed.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import sqlite3
import subprocess
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from durable_testing import cli_command, cli_env, counting_registry, exec_log, integrity, journal_meta, journal_steps
from orgtree_lang.durable.runs import list_runs
from orgtree_lang.run import runs as durable_runs
from orgtree_lang.run.registries import default_registry

FULL_TRIALS = int(os.environ.get("PIPE_CRASH_TRIALS", "0") or 0)
TRIALS = FULL_TRIALS or 50
# Without PIPE_CRASH_TRIALS no trial starts after this many seconds of a program's trials (at least MIN_TRIALS run).
DEFAULT_SECONDS = None if FULL_TRIALS else 15.0
MIN_TRIALS = 6
SEED = int(os.environ.get("PIPE_CRASH_SEED", "20261201"))
AT_ONCE = 3  # trials running side by side (each mostly waits on its processes)
# The replay in check() compiles in this process, and the cached Lark parser is not thread-safe.
IN_PROCESS = threading.Lock()
TRIAL_DEADLINE = 120.0
N = 6  # iterations per branch
BRANCHES = 6
MOST_IN_FLIGHT = 3  # slow calls in flight at once: 3 branches in the first block, a limit of 2 in the second

PROGRAM = '''\
use fs, time

pipeline work(k: int, n: int, spin: int) -> int:
    total = 0
    for i in range(n):
        time.sleep(0.002 * ((k * 7 + i * 3) % 5))
        fs.append("out.txt", f"b{k} i{i}\\n")
        x = 0
        for j in range(spin):
            x += j
        total += k * 100 + i
        print(f"b{k} i{i}")
    return total

pipeline main(n: int = 6, spin: int = 200) -> str:
    parallel:
        a = work(1, n, spin)
        b = work(2, n, spin)
        c = work(3, n, spin)
    parallel(limit=2):
        d = work(4, n, spin)
        e = work(5, n, spin)
        f = work(6, n, spin)
    return f"{a + b + c} {d + e + f}"
'''
# sum over the branches of k * 100 * n + (0 + 1 + ... + n-1)
RESULT = f"{(100 + 200 + 300) * N + 3 * sum(range(N))} {(400 + 500 + 600) * N + 3 * sum(range(N))}"
ALL_LINES = {f"b{k} i{i}" for k in range(1, BRANCHES + 1) for i in range(N)}

# The same work, by route: odd and even items each go to the live node of their route; a node handles one item
# and ends, and the next item of its topic starts the next node. At most two sleeps are in flight at once.
ROUTED_PROGRAM = '''\
use fs, time

route "odd" -> desk
route "even" -> desk

pipeline desk(m: Message, n: int = 6, spin: int = 200) -> none:
    k = m.body
    total = 0
    for i in range(n):
        time.sleep(0.002 * ((k * 7 + i * 3) % 5))
        fs.append("out.txt", f"b{k} i{i}\\n")
        x = 0
        for j in range(spin):
            x += j
        total += k * 100 + i
        print(f"b{k} i{i}")
    send parent, total, topic=m.topic

pipeline main() -> str:
    topics = ["even", "odd"]
    for k in range(1, 7):
        send topics[k % 2], k
    total = 0
    for k in range(6):
        total += receive().body
    return f"{total}"
'''


@dataclass(frozen=True)
class Scenario:
    """A program the harness kills: what it must end with, and how many slow calls it has in flight at most."""

    name: str
    program: str
    result: str
    lines: frozenset
    most_in_flight: int
    trials: int


SCENARIOS = (
    Scenario("parallel", PROGRAM, RESULT, frozenset(ALL_LINES), MOST_IN_FLIGHT, TRIALS),
    Scenario("routed", ROUTED_PROGRAM, str(sum(k * 100 * N + sum(range(N)) for k in range(1, BRANCHES + 1))),
             frozenset(ALL_LINES), 2, max(TRIALS // 2, 1)),
)


@dataclass
class Reference:
    scenario: Scenario
    seconds: float
    output: list[str]
    appended: str


@dataclass
class Totals:
    trials: int = 0
    kills: int = 0
    kills_mid_run: int = 0  # landed after the journal had steps and before the run was done
    resumes: int = 0
    reexecuted: Counter = field(default_factory=Counter)
    not_started: int = 0  # trials left out by the time cap
    seconds: float = 0.0

    def line(self, name: str = "parallel") -> str:
        capped = f"; {self.not_started} more not started after {DEFAULT_SECONDS:.0f} s" if self.not_started else ""
        return (f"{name} crash harness: {self.trials} trials (seed {SEED}), {self.kills} kills "
                f"({self.kills_mid_run} in the middle of the run), {self.resumes} resumes, re-executed steps: "
                f"{dict(self.reexecuted) or 'none'}, {self.seconds:.1f} s{capped}")


def _run_dir(ws: Path) -> Path:
    return next((ws / ".orgtree" / "runs").iterdir())


@pytest.fixture(scope="module", params=SCENARIOS, ids=[scenario.name for scenario in SCENARIOS])
def reference(request, tmp_path_factory) -> Reference:
    """One uninterrupted run: the lines and appends every trial must reproduce exactly, in the same order."""
    scenario = request.param
    ws = tmp_path_factory.mktemp("reference")
    (ws / "prog.pipe").write_text(scenario.program, encoding="utf-8")
    started = time.monotonic()
    done = subprocess.run(cli_command("run", "prog.pipe", "--durability", "process"), cwd=ws, env=cli_env(),
                          capture_output=True, text=True, timeout=TRIAL_DEADLINE)
    seconds = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    meta = journal_meta(_run_dir(ws))
    assert meta["status"] == "done" and meta["result"] == scenario.result
    assert sorted(meta["output"]) == sorted(scenario.lines)
    appended = (ws / "out.txt").read_text(encoding="utf-8")
    assert sorted(appended.splitlines()) == sorted(scenario.lines)
    return Reference(scenario, seconds, meta["output"], appended)


class Trial:
    def __init__(self, ws: Path, rng: random.Random, reference: Reference) -> None:
        self.ws, self.rng, self.reference = ws, rng, reference
        self.log = ws.parent / f"{ws.name}.exec.log"
        self.kills = 0
        self.kills_mid_run = 0
        self.resumes = 0
        self.history: list[str] = []
        self.deadline = time.monotonic() + TRIAL_DEADLINE

    def _executions(self) -> int:
        return len(exec_log(self.log))

    def spawn_and_maybe_kill(self, *args: str, kill: bool) -> tuple[bool, subprocess.CompletedProcess | None]:
        proc = subprocess.Popen(cli_command(*args), cwd=self.ws, env=cli_env(self.log), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        if kill:
            if self.rng.random() < 0.7:  # right after the k-th next real execution: inside the blocks
                target = self._executions() + self.rng.randint(1, 40)
                while proc.poll() is None and self._executions() < target and time.monotonic() < self.deadline:
                    time.sleep(0.001)
            else:
                try:
                    proc.wait(timeout=self.rng.uniform(0.0, self.reference.seconds))
                except subprocess.TimeoutExpired:
                    pass
            if proc.poll() is None:
                before = self._state()
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
                self.kills += 1
                if before[0] is not None and before[1] != "done" and self._steps() > 0:
                    self.kills_mid_run += 1
                self.history.append(f"{args[0]} killed")
                return True, None
        out, err = proc.communicate(timeout=max(1.0, self.deadline - time.monotonic()))
        self.history.append(f"{args[0]} exit {proc.returncode}")
        return False, subprocess.CompletedProcess(args, proc.returncode, out, err)

    def _state(self) -> tuple[str | None, str | None]:
        runs = list_runs(self.ws)
        if not runs or runs[0].status.startswith("unreadable"):
            return None, None
        return runs[0].run_id, runs[0].status

    def _steps(self) -> int:
        try:
            return len(journal_steps(_run_dir(self.ws)))
        except (StopIteration, FileNotFoundError, sqlite3.DatabaseError):
            return 0

    def play(self) -> None:
        (self.ws / "prog.pipe").write_text(self.reference.scenario.program, encoding="utf-8")
        killed, done = self.spawn_and_maybe_kill("run", "prog.pipe", "--durability", "process", kill=True)
        run_id, status = self._state()
        if run_id is None:  # killed before the journal existed: start again, as a user would
            assert killed
            shutil.rmtree(self.ws / ".orgtree", ignore_errors=True)
            (self.ws / "out.txt").unlink(missing_ok=True)
            self.log.unlink(missing_ok=True)
            killed, done = self.spawn_and_maybe_kill("run", "prog.pipe", "--durability", "process", kill=False)
            run_id, status = self._state()
        if done is not None:
            assert done.returncode == 0, done.stderr
        resume_kills = 0
        while status != "done":
            assert status == "crashed", status
            self.resumes += 1
            kill = resume_kills < 2 and self.rng.random() < 0.3
            killed, done = self.spawn_and_maybe_kill("resume", run_id, kill=kill)
            resume_kills += killed
            if done is not None:
                assert done.returncode == 0, f"resume failed: {done.stderr}"
            status = self._state()[1]

    def check(self, run_id: str) -> Counter:
        run_dir = self.ws / ".orgtree" / "runs" / run_id
        scenario = self.reference.scenario
        meta = journal_meta(run_dir)
        assert meta["status"] == "done" and meta["result"] == scenario.result
        # The scheduler is deterministic: whatever was killed and redone, the run printed and appended exactly
        # what the uninterrupted run did, in the same order, each line once.
        assert meta["output"] == self.reference.output
        assert (self.ws / "out.txt").read_text(encoding="utf-8") == self.reference.appended
        assert integrity(run_dir / "journal.db") == "ok"
        ledger = sqlite3.connect(self.ws / ".orgtree" / "state.db")
        try:
            keys = [key for key, in ledger.execute("SELECT key FROM fs_appends WHERE done = 1")]
        finally:
            ledger.close()
        assert len(keys) == len(set(keys)) == len(scenario.lines)
        # Nothing finished was redone: a real execution beyond the journaled steps is a step that was in flight
        # at a kill, at most one fs.append (run inline) and MOST_IN_FLIGHT sleeps (on the executor) per kill.
        steps = journal_steps(run_dir)
        journaled = Counter(s["name"] for s in steps)
        executed = Counter(name for name, _ in exec_log(self.log))
        extra = executed - journaled
        assert not journaled - executed, "a journaled step has no execution behind it"
        assert extra["fs.append"] <= self.kills, (extra, self.kills)
        assert extra["time.sleep"] <= scenario.most_in_flight * self.kills, (extra, self.kills)
        assert set(extra) <= {"fs.append", "time.sleep"}, extra
        appends = [key for name, key in exec_log(self.log) if name == "fs.append"]
        journaled_keys = {f"{run_id}:{s['seq']}" for s in steps if s["name"] == "fs.append"}
        assert set(appends) == journaled_keys, "an fs.append ran with a key that is not its journal step's"
        # The finished run replays offline, identically, with no outside call.
        before = self._executions()
        with IN_PROCESS:
            report = durable_runs.replay(self.ws, run_id,
                                         counting_registry(default_registry(plugins=False), str(self.log)))
        assert report.identical and report.outside_calls == 0, report.differences
        assert report.output == meta["output"] and report.result == meta["result"]
        assert self._executions() == before
        return extra


def test_kill_9_in_the_middle_of_parallel_blocks(tmp_path: Path, reference: Reference, capsys,
                                                 record_property) -> None:
    totals = Totals()
    scenario = reference.scenario
    started = time.monotonic()

    def one(n: int) -> Counter | None:
        if DEFAULT_SECONDS is not None and n >= MIN_TRIALS and time.monotonic() - started > DEFAULT_SECONDS:
            totals.not_started += 1
            return None
        ws = tmp_path / f"trial{n:03d}"
        ws.mkdir()
        trial = Trial(ws, random.Random(SEED * 1000 + n), reference)
        try:
            trial.play()
            extra = trial.check(trial._state()[0])
        except BaseException as exc:
            raise AssertionError(f"{scenario.name} crash trial {n} (PIPE_CRASH_SEED={SEED}) failed after "
                                 f"{trial.history}: {type(exc).__name__}: {exc}") from exc
        totals.trials += 1
        totals.kills += trial.kills
        totals.kills_mid_run += trial.kills_mid_run
        totals.resumes += trial.resumes
        totals.reexecuted.update(extra)
        shutil.rmtree(ws, ignore_errors=True)
        return extra

    with ThreadPoolExecutor(AT_ONCE) as pool:
        list(pool.map(one, range(scenario.trials)))
    totals.seconds = time.monotonic() - started
    with capsys.disabled():
        print("\n" + totals.line(scenario.name))
    record_property(f"{scenario.name}_crash_harness", totals.line(scenario.name))
    assert totals.trials + totals.not_started == scenario.trials
    assert totals.trials >= min(MIN_TRIALS, scenario.trials)
    assert DEFAULT_SECONDS is not None or totals.not_started == 0  # PIPE_CRASH_TRIALS=N runs all N
    # The harness only means something if most kills hit a run in the middle of its parallel blocks.
    assert totals.kills_mid_run >= totals.trials // 2, totals.line(scenario.name)
    assert totals.resumes >= totals.trials // 2, totals.line(scenario.name)
