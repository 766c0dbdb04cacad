"""Crash harness: SIGKILL `pipe run` (and sometimes `pipe resume`) at random moments, resume until done, and check
that the run ends exactly as an uninterrupted one would, with no side effect applied twice.

Every trial runs the real CLI in its own process group (through tests/durable_testing.py, which is `pipe` plus a
log of every real skill execution) on a fresh workspace and kills it: mostly after a random delay drawn so that
kills land during start-up (before the journal exists), inside the loop and after it; sometimes right as an
fs.append starts (seen in the execution log), so that the kill lands while that step is in flight. Then it runs
`pipe resume` until the run is done, killing some of the resumes too. Per trial it checks:

- the run is `done`; the result printed by the last process, and the journal's result and printed lines, are
  exactly what the program computes from the journaled time/random/id values, and have the shape of an
  uninterrupted run's (the reference run, made once);
- `out.txt` (appended once per iteration with fs.append, which gets `<run id>:<seq>` as idempotency key) holds
  every line exactly once, in order, with the journaled values; the fs.append ledger has one done row per line;
- `PRAGMA integrity_check` is ok for the journal and the workspace's state.db;
- at most one step re-executed per kill: per process, every real execution ends as a journal row written by
  that process, except at most one for a killed process (its step in flight); in total, executions minus
  journaled steps <= kills; every keyed execution carried its step's key `<run id>:<seq>`. (The journal's
  `attempts` column is summed too, but it only counts repeats of failed steps: a step in flight had no row.)
- the finished run replays (the code of `pipe replay`) with zero outside calls, identically.

By default 12 trials run (well under a minute; on a loaded machine no new trial starts after 40 s, at least 6
run); PIPE_CRASH_TRIALS=100 runs the full harness (marked slow). Each run prints a summary line with the counts.
PIPE_CRASH_SEED picks the seed (the failure message names it; kill timing still depends on the machine).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from durable_testing import (cli_command, cli_env, counting_registry, exec_log, integrity, journal_meta,
                             journal_steps, pipe, run_dirs)
from orgtree_lang.run import runs as durable_runs
from orgtree_lang.durable.runs import list_runs
from orgtree_lang.run.registries import default_registry

DEFAULT_TRIALS = 12
DEFAULT_SECONDS = 40.0  # on a loaded machine the default run stops starting trials after this (at least 6 run)
MIN_TRIALS = 6
FULL_TRIALS = int(os.environ.get("PIPE_CRASH_TRIALS", "0") or 0)
SEED = int(os.environ.get("PIPE_CRASH_SEED", "20240501"))
ITERATIONS = 40
SPIN = 1200  # pure statements per iteration, so the loop lasts ~1 s and checkpoints are taken inside it
STEPS_PER_ITERATION = 4  # time.now, random.int, ids.new, fs.append (in a child pipeline)
MAX_RESUME_KILLS = 3
TRIAL_DEADLINE = 60.0  # seconds for one trial, all its processes included

PROGRAM = '''\
use fs, time, random, ids

pipeline write_line(i: int, r: int, id: str) -> int:
    """Append the line of iteration i (fs.append gets the run's idempotency key)."""
    return fs.append("out.txt", f"line {i} {r} {id}\\n")

pipeline main(n: int = 40, spin: int = 1200) -> str:
    total = 0
    for i in range(n):
        stamp = time.now()
        r = random.int(1, 1000000)
        id = ids.new()
        write_line(i, r, id)
        x = 0
        for j in range(spin):
            x += j
        total += r
        print(f"{i} {r} {id} {stamp}")
    return f"n={n} total={total} spin={x}"
'''

SKILLS = ["time.now", "random.int", "ids.new", "fs.append"]


@dataclass
class Totals:
    trials: int = 0
    kills: int = 0  # SIGKILLs that landed (the process was still running)
    kills_before_journal: int = 0  # ... of them before the run had a readable journal
    kills_of_resumes: int = 0
    kills_after_done: int = 0  # the run was already `done` in its journal when the kill landed
    missed: int = 0  # the process had exited before its kill was due
    aimed: int = 0  # kills planned for the moment an fs.append starts (the rest: at a random time)
    resumes: int = 0
    reexecuted_journal: int = 0  # sum(attempts - 1) over all trials
    reexecuted_log: int = 0  # real executions minus journaled steps over all trials
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (f"crash harness: {self.trials} trials (seed {SEED}), {self.kills} kills landed "
                f"({self.kills_before_journal} before the journal existed, {self.kills_of_resumes} of a resume, "
                f"{self.kills_after_done} after the run was done; {self.aimed} aimed at an fs.append in flight; "
                f"{self.missed} kills missed: the process had finished), {self.resumes} resumes, {self.reexecuted_journal} steps re-executed by the journal's "
                f"attempts ({self.reexecuted_log} by the execution log), {self.seconds:.1f} s")


@dataclass
class Reference:
    seconds: float
    output: list[str]
    result: str


def _norm(line: str) -> str:
    """A printed line or result with the run's random, id and time values blanked out."""
    line = re.sub(r"\b[0-9a-f]{32}\b", "<id>", line)
    line = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "<time>", line)
    return re.sub(r"^(\d+) \d+ ", r"\1 <r> ", re.sub(r"total=\d+", "total=<t>", line))


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Reference:
    """One uninterrupted run: its wall time sets the kill delays; its output is the shape every trial must have."""
    ws = tmp_path_factory.mktemp("reference")
    (ws / "prog.pipe").write_text(PROGRAM, encoding="utf-8")
    started = time.monotonic()
    done = pipe("run", "prog.pipe", "--workspace", str(ws), "-i", f"n={ITERATIONS}", "-i", f"spin={SPIN}", cwd=ws)
    seconds = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    meta = journal_meta(run_dirs(ws)[0])
    assert meta["status"] == "done" and len(meta["output"]) == ITERATIONS
    assert done.stdout.splitlines() == meta["output"] + [meta["result"]]
    _check_consistent(ws, run_dirs(ws)[0])
    return Reference(seconds, meta["output"], meta["result"])


def _expected_from_journal(steps: list[dict]) -> tuple[list[str], list[str], str]:
    """What the program must have printed, appended and returned, given the values its journal recorded."""
    assert [s["seq"] for s in steps] == list(range(1, ITERATIONS * STEPS_PER_ITERATION + 1))
    printed, appended, total = [], [], 0
    for i in range(ITERATIONS):
        row = steps[i * STEPS_PER_ITERATION: (i + 1) * STEPS_PER_ITERATION]
        assert [s["name"] for s in row] == SKILLS, row
        assert [s["node"] for s in row] == ["main"] * 3 + [f"main/write_line#{i + 1}"]
        assert all(s["ok"] == 1 for s in row), row
        stamp, r, ident, size = (json.loads(s["result"]) for s in row)
        line = f"line {i} {r} {ident}\n"
        assert size == len(line.encode())
        printed.append(f"{i} {r} {ident} {stamp}")
        appended.append(line)
        total += r
    return printed, appended, f"n={ITERATIONS} total={total} spin={sum(range(SPIN))}"


def _check_consistent(ws: Path, run_dir: Path) -> tuple[list[dict], dict]:
    """The checks every finished run must pass, whatever happened to it."""
    meta = journal_meta(run_dir)
    steps = journal_steps(run_dir)
    assert meta["status"] == "done", meta.get("error")
    printed, appended, result = _expected_from_journal(steps)
    assert meta["output"] == printed
    assert meta["result"] == result
    text = (ws / "out.txt").read_text(encoding="utf-8")
    assert text == "".join(appended), "out.txt is not every journaled line exactly once, in order"
    assert integrity(run_dir / "journal.db") == "ok"
    assert integrity(ws / ".orgtree" / "state.db") == "ok"
    ledger = sqlite3.connect(ws / ".orgtree" / "state.db")
    try:
        rows = ledger.execute("SELECT key, done, data FROM fs_appends ORDER BY offset").fetchall()
    finally:
        ledger.close()
    assert [(key, done, data) for key, done, data in rows] == [
        (f"{meta['run_id']}:{(i + 1) * STEPS_PER_ITERATION}", 1, None) for i in range(ITERATIONS)]
    return steps, meta


class Trial:
    """One workspace, its processes, and what happened to them."""

    def __init__(self, ws: Path, rng: random.Random, reference: Reference, totals: Totals) -> None:
        self.ws = ws
        self.rng = rng
        self.reference = reference
        self.totals = totals
        self.log = ws.parent / f"{ws.name}.exec.log"  # outside the workspace: not the program's business
        self.kills = 0
        self.extra: list[int] = []  # per process: steps it executed whose journal rows it did not write
        self.history: list[str] = []
        self.deadline = time.monotonic() + TRIAL_DEADLINE

    def spawn(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen(cli_command(*args), cwd=self.ws, env=cli_env(self.log), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)

    def run_or_kill(self, proc: subprocess.Popen, plan: tuple | None) -> tuple[bool, str, str, int | None]:
        """Wait for `proc` to exit, or SIGKILL its process group as `plan` says. (killed?, stdout, stderr, code)

        plan None: let it finish. ("timer", s): kill after s seconds. ("append", k): kill as soon as the k-th next
        fs.append starts (its execution is logged just before it runs), so the kill lands while that step is in
        flight: inside the keyed append, or after it but before its journal row is committed."""
        if plan is not None and plan[0] == "append":
            target = sum(1 for name, _ in exec_log(self.log) if name == "fs.append") + plan[1]
            while proc.poll() is None and time.monotonic() < self.deadline:
                if sum(1 for name, _ in exec_log(self.log) if name == "fs.append") >= target:
                    break
                time.sleep(0.0005)
            plan = ("timer", 0.0)
        try:
            if plan is None:
                out, err = proc.communicate(timeout=max(1.0, self.deadline - time.monotonic()))
                return False, out, err, proc.returncode
            if plan[1] <= 0 and proc.poll() is None:
                raise subprocess.TimeoutExpired(proc.args, 0)
            out, err = proc.communicate(timeout=plan[1])
            self.totals.missed += 1
            return False, out, err, proc.returncode
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):  # it may end between the timeout and the kill
                os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            if plan is None:
                raise AssertionError(f"a process of this trial ran past the deadline: {self.history}") from None
            if proc.returncode != -signal.SIGKILL:  # it exited on its own just before the kill
                self.totals.missed += 1
                return False, out, err, proc.returncode
            self.kills += 1
            self.totals.kills += 1
            return True, out, err, None

    def rows(self) -> int:
        journals = list((self.ws / ".orgtree" / "runs").glob("*/journal.db"))
        if not journals:
            return 0
        try:
            return len(journal_steps(journals[0].parent))
        except sqlite3.DatabaseError:  # killed while the journal was being created: no steps table yet
            return 0

    def measured(self, proc: subprocess.Popen, plan: tuple | None) -> tuple[bool, str, str, int | None]:
        """run_or_kill, checking what the process executed against what it journaled: every real execution ends
        as a journal row written by the same process, except at most one, the step in flight when it was killed."""
        executions, rows = len(exec_log(self.log)), self.rows()
        killed, out, err, code = self.run_or_kill(proc, plan)
        extra = (len(exec_log(self.log)) - executions) - (self.rows() - rows)
        assert 0 <= extra <= (1 if killed else 0), (
            f"a process {'killed' if killed else 'that finished'} executed {extra} step(s) it did not journal")
        self.extra.append(extra)
        return killed, out, err, code

    def plan(self, first: bool) -> tuple:
        """A kill: at a random time (covering start-up, the loop and its end), or right as an fs.append starts."""
        if self.rng.random() < 0.3:
            self.totals.aimed += 1
            return ("append", self.rng.randint(1, ITERATIONS // 2 if first else 6))
        return ("timer", self.rng.uniform(0.0, self.reference.seconds * (1.15 if first else 1.0)))

    def status(self) -> tuple[str | None, str | None]:
        """(run id, status) as `pipe runs` lists them; (None, None) while there is no readable journal."""
        runs = list_runs(self.ws)  # what `pipe runs --json` prints, without another interpreter start-up
        assert len(runs) <= 1, runs
        if not runs or runs[0].status.startswith("unreadable"):
            return None, None
        return runs[0].run_id, runs[0].status

    def play(self) -> None:
        (self.ws / "prog.pipe").write_text(PROGRAM, encoding="utf-8")
        args = ("--workspace", str(self.ws))
        plan = self.plan(first=True)
        proc = self.spawn("run", "prog.pipe", *args, "-i", f"n={ITERATIONS}", "-i", f"spin={SPIN}")
        killed, out, err, code = self.measured(proc, plan)
        self.history.append(f"run: kill {plan}, {'killed' if killed else f'exit {code}'}")
        run_id, status = self.status()
        if killed and run_id is None:
            self.totals.kills_before_journal += 1
            self.history.append("killed before the journal existed: nothing ran, nothing to resume")
            assert not (self.ws / "out.txt").exists()
            assert exec_log(self.log) == []
            return
        if not killed:
            assert code == 0, err
            final = out
        elif status == "done":
            self.totals.kills_after_done += 1
            final = None
        else:
            final = None
        assert status in ("done", "crashed"), status
        resume_kills = 0
        while status != "done":
            self.totals.resumes += 1
            kill_it = resume_kills < MAX_RESUME_KILLS and self.rng.random() < 0.35
            plan = self.plan(first=False) if kill_it else None
            proc = self.spawn("resume", run_id, *args)
            killed, out, err, code = self.measured(proc, plan)
            self.history.append(f"resume: kill {plan}, {'killed' if killed else f'exit {code}'}")
            if killed:
                resume_kills += 1
                self.totals.kills_of_resumes += 1
            else:
                assert code == 0, f"resume failed: {err}"
                final = out
            status = self.status()[1]
            if killed and status == "done":
                self.totals.kills_after_done += 1
            assert status in ("done", "crashed"), status
        self.check(run_id, final)

    def check(self, run_id: str, final_stdout: str | None) -> None:
        run_dir = self.ws / ".orgtree" / "runs" / run_id
        steps, meta = _check_consistent(self.ws, run_dir)
        assert [_norm(line) for line in meta["output"]] == [_norm(line) for line in self.reference.output]
        assert _norm(meta["result"]) == _norm(self.reference.result)
        if final_stdout is not None:
            lines = final_stdout.splitlines()
            assert lines and lines[-1] == meta["result"]
            # A process prints what it newly computes; lines from a checkpoint or the journal are not repeated,
            # so its output is a tail of the run's printed lines (plus at most the one in flight at a kill).
            assert lines[:-1] == meta["output"][len(meta["output"]) - len(lines) + 1:]
        else:
            shown = pipe("show", run_id, "--json", "--workspace", str(self.ws), cwd=self.ws)
            assert shown.returncode == 0 and json.loads(shown.stdout)["result"] == meta["result"]
        # At most one step re-executes per kill: the journal's attempts, and the real executions logged.
        by_journal = sum(s["attempts"] - 1 for s in steps)
        executions = exec_log(self.log)
        by_log = len(executions) - len(steps)
        assert 0 <= by_journal <= self.kills, (by_journal, self.kills)
        assert 0 <= by_log <= self.kills, (by_log, self.kills)
        assert by_log == sum(self.extra), (by_log, self.extra)  # each re-execution is one killed process's in-flight step
        counts = Counter(executions)
        keyed = [(name, f"{run_id}:{s['seq']}") for s, name in
                 ((s, s["name"]) for s in steps) if name in ("time.now", "fs.append")]
        assert all(1 <= counts[k] <= 1 + self.kills for k in keyed), "a keyed step ran without its key"
        assert not Counter(s["name"] for s in steps) - Counter(name for name, _ in executions), \
            "a journaled step has no execution behind it"
        self.totals.reexecuted_journal += by_journal
        self.totals.reexecuted_log += by_log
        # The finished run replays offline, identically, with no outside call (in this process: the same code
        # as `pipe replay`, with every non-pure skill counting its real executions in the log).
        before = len(executions)
        report = durable_runs.replay(self.ws, run_id, counting_registry(default_registry(plugins=False), str(self.log)))
        assert report.identical and report.outside_calls == 0, report.differences
        assert report.output == meta["output"] and report.result == meta["result"]
        assert len(exec_log(self.log)) == before


def _harness(trials: int, tmp_path: Path, reference: Reference, capsys, record_property,
             seconds: float | None = None) -> Totals:
    totals = Totals()
    started = time.monotonic()
    for n in range(trials):
        if seconds is not None and n >= MIN_TRIALS and time.monotonic() - started > seconds:
            totals.notes.append(f"stopped after {n} of {trials} trials: {seconds:.0f} s had passed")
            break
        rng = random.Random(SEED * 1000 + n)
        ws = tmp_path / f"trial{n:03d}"
        ws.mkdir()
        trial = Trial(ws, rng, reference, totals)
        try:
            trial.play()
        except BaseException as exc:
            raise AssertionError(f"crash trial {n} (PIPE_CRASH_SEED={SEED}) failed after {trial.history}: "
                                 f"{type(exc).__name__}: {exc}") from exc
        totals.trials += 1
        if n >= 3:  # keep the disk use of long harness runs small: passing trials need no evidence
            shutil.rmtree(ws, ignore_errors=True)
    totals.seconds = time.monotonic() - started
    line = f"{totals.line()} (an uninterrupted run takes {reference.seconds:.2f} s){''.join('; ' + n for n in totals.notes)}"
    with capsys.disabled():
        print("\n" + line)
    record_property("crash_harness", line)
    # The harness only means something if kills landed at the interesting moments.
    assert totals.kills >= totals.trials // 2, line
    assert totals.resumes >= totals.trials // 3, line
    return totals


def test_crash_harness(tmp_path: Path, reference: Reference, capsys, record_property) -> None:
    totals = _harness(DEFAULT_TRIALS, tmp_path, reference, capsys, record_property, seconds=DEFAULT_SECONDS)
    assert totals.kills - totals.kills_before_journal >= 3, totals.line()


@pytest.mark.slow
@pytest.mark.skipif(FULL_TRIALS <= 0, reason="set PIPE_CRASH_TRIALS=100 for the full crash harness")
def test_crash_harness_full(tmp_path: Path, reference: Reference, capsys, record_property) -> None:
    totals = _harness(FULL_TRIALS, tmp_path, reference, capsys, record_property)
    assert totals.kills_before_journal > 0 and totals.kills_of_resumes > 0, totals.line()
    assert totals.kills - totals.kills_before_journal - totals.kills_after_done >= FULL_TRIALS // 2, totals.line()


def test_reference_run_is_consistent(reference: Reference) -> None:
    """The uninterrupted run itself passes the checks (so a broken check cannot hide behind the trials)."""
    assert len(reference.output) == ITERATIONS
    assert reference.result.startswith(f"n={ITERATIONS} total=")
