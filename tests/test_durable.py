"""Durable runs through the CLI (`pipe` in-process; a subprocess where one is killed) and the Python API: resume
after a fix, refusal when the executed prefix changed, --from-scratch, budgets across resume, replay, retry, fork,
`pipe runs`/`show`, and bad input (unknown or ambiguous run id, corrupt or newer journal, moved program, a run in use).

Skill executions are counted with tests/durable_testing.py: every real execution of a non-pure skill appends
`<skill> <idempotency key>` to an execution log, so a step whose result comes from the journal leaves no line.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from durable_testing import (counting_registry, exec_log, journal_meta, journal_snapshot, journal_steps, only_run_id,
                             pipe)
from orgtree_lang.durable import attempt as durable_attempt
from orgtree_lang.durable import replay as durable_replay
from orgtree_lang.run import runs as durable_runs
from orgtree_lang.durable.effects import NonDeterminismError
from orgtree_lang.durable.journal import JournalError
from orgtree_lang.durable.runs import RunLock
from orgtree_lang.run.runner import RunOptions, run_file
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.run.registries import default_registry
from orgtree_lang.runtime.skills import SkillRegistry, skill
from orgtree_lang.vm.budget import Budget

pytestmark = pytest.mark.fast

EXIT_USAGE, EXIT_RUNTIME = 2, 70


class Workspace:
    """A temporary workspace with one program, its execution log, and `pipe` run inside it."""

    def __init__(self, root: Path, program: str, name: str = "prog.pipe") -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self.program = root / name
        self.program.write_text(program, encoding="utf-8")
        self.log = root.parent / f"{root.name}.exec.log"

    def pipe(self, *args: str, **kwargs):
        return pipe(*args, "--workspace", str(self.root), cwd=self.root, exec_log_path=self.log, **kwargs)

    def run(self, *args: str, **kwargs):
        return self.pipe("run", self.program.name, *args, **kwargs)

    def executions(self) -> list[tuple[str, str]]:
        return exec_log(self.log)

    def run_dir(self, run_id: str) -> Path:
        return self.root / ".orgtree" / "runs" / run_id

    def only_run(self) -> str:
        return only_run_id(self.root)

    def file(self, name: str) -> str:
        return (self.root / name).read_text(encoding="utf-8")

    def edit(self, old: str, new: str) -> None:
        text = self.program.read_text(encoding="utf-8")
        assert text.count(old) == 1, old
        self.program.write_text(text.replace(old, new), encoding="utf-8")

    def state(self, run_id: str) -> tuple:
        """Everything a refused command must leave as it was: the journal's rows, the run folder's other files,
        the workspace's files (not .orgtree, not the programs the test edits), the runs, the execution log."""
        run_dir = self.run_dir(run_id)
        files = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.name not in ("journal.db", "lock")
                 and not p.name.startswith("journal.db-")}
        workspace = {str(p.relative_to(self.root)): p.read_bytes() for p in self.root.rglob("*")
                     if p.is_file() and ".orgtree" not in p.parts and p.suffix != ".pipe"}
        runs = sorted(p.name for p in run_dir.parent.iterdir())
        return journal_snapshot(run_dir), files, workspace, runs, self.executions()


@pytest.fixture
def ws(tmp_path: Path):
    def make(program: str, name: str = "prog.pipe") -> Workspace:
        return Workspace(tmp_path / f"ws{len(list(tmp_path.iterdir()))}", program, name)

    return make


FIX_ME = '''\
use fs

pipeline main() -> str:
    for i in range(3):
        fs.append("log.txt", f"a{i}\\n")
    data = fs.read("input.txt")
    print(f"read {data}")
    fail "not finished yet"
'''


# ---- resume ---------------------------------------------------------------------------


def test_resume_reruns_the_failed_step_then_uses_the_fixed_code_past_the_failure(ws) -> None:
    w = ws(FIX_ME)
    first = w.run()
    assert first.returncode == EXIT_RUNTIME
    run_id = w.only_run()
    assert f"run {run_id} is saved: after fixing the cause, continue it with `pipe resume {run_id}" in first.stderr
    assert "fs.read: no file `input.txt`" in first.stderr
    assert w.executions() == [("fs.append", f"{run_id}:1"), ("fs.append", f"{run_id}:2"),
                              ("fs.append", f"{run_id}:3"), ("fs.read", f"{run_id}:4")]
    assert journal_meta(w.run_dir(run_id))["status"] == "failed"

    # The cause outside the program is fixed: the failed step (the last one) runs again, nothing before it does.
    (w.root / "input.txt").write_text("hello", encoding="utf-8")
    second = w.pipe("resume", run_id)
    assert second.returncode == EXIT_RUNTIME and "runtime error: not finished yet" in second.stderr
    assert second.stdout == "read hello\n"
    assert w.executions()[4:] == [("fs.read", f"{run_id}:4")]
    assert [s["attempts"] for s in journal_steps(w.run_dir(run_id))] == [1, 1, 1, 2]

    # The program is fixed after the failure point: the new code runs; journaled steps are not executed again.
    w.edit('    fail "not finished yet"\n', '    fs.append("log.txt", "done\\n")\n    return data\n')
    third = w.pipe("resume", run_id)
    assert third.returncode == 0, third.stderr
    assert third.stdout.splitlines()[-1] == "hello"
    assert w.executions()[5:] == [("fs.append", f"{run_id}:5")]
    assert w.file("log.txt") == "a0\na1\na2\ndone\n"
    meta = journal_meta(w.run_dir(run_id))
    assert (meta["status"], meta["result"], meta["output"], meta["attempts"]) == ("done", "hello", ["read hello"], 3)
    assert meta["sources"][meta["source_hash"]] == w.program.read_text(encoding="utf-8")
    assert len(meta["sources"]) == 2  # both versions of the code are kept

    # The finished run cannot be resumed, and replays offline with the code that finished it.
    again = w.pipe("resume", run_id)
    assert again.returncode == EXIT_USAGE and f"run {run_id} already finished" in again.stderr
    replay = w.pipe("replay", run_id, "--quiet")
    assert replay.returncode == 0 and "0 outside call(s)" in replay.stderr, replay.stderr
    assert len(w.executions()) == 6


def test_a_step_in_flight_at_a_crash_runs_again_once_with_the_same_key(ws) -> None:
    """SIGKILL right after the 2nd fs.append did its work, before its journal row: resume repeats only that step,
    with the same idempotency key, and fs.append applies the key once."""
    w = ws(FIX_ME.replace('    fail "not finished yet"\n', '    return data\n'))
    (w.root / "input.txt").write_text("x", encoding="utf-8")
    killed = w.run(kill_after="fs.append:2")
    assert killed.returncode == -9
    run_id = w.only_run()
    assert [s["seq"] for s in journal_steps(w.run_dir(run_id))] == [1]
    listed = json.loads(w.pipe("runs", "--json").stdout)
    assert [(r["id"], r["status"]) for r in listed] == [(run_id, "crashed")]
    assert w.file("log.txt") == "a0\na1\n"

    done = w.pipe("resume", run_id)
    assert done.returncode == 0, done.stderr
    assert w.executions() == [("fs.append", f"{run_id}:1"), ("fs.append", f"{run_id}:2"),
                              ("fs.append", f"{run_id}:2"), ("fs.append", f"{run_id}:3"), ("fs.read", f"{run_id}:4")]
    assert w.file("log.txt") == "a0\na1\na2\n"  # the repeated append did not add a second a1
    assert done.stdout == "read x\nx\n"


def test_a_refusal_for_inputs_that_differ_shows_the_values_that_differ(ws) -> None:
    """The step's own line is unchanged (the value comes from an edited line above it), so the two source lines
    alone look identical: the refusal shows the argument that differs, old and new, cut to a short length."""
    w = ws('use fs\n\npipeline main() -> str:\n    name = "log.txt"\n    body = "first version"\n'
           '    fs.append(name, body + "' + "x" * 100 + '")\n    fail "not finished yet"\n')
    w.run()
    run_id = w.only_run()
    w.edit('"first version"', '"second version"')
    refused = w.pipe("resume", run_id)
    assert refused.returncode == EXIT_RUNTIME
    err = refused.stderr
    assert "(its inputs differ)" in err
    assert '         6 |     fs.append(name, body + "xxx' in err  # the same line, twice
    assert "  argument 2 differs:\n" in err
    # Each value as the journal encodes it (JSON), its first 60 characters and its whole length.
    old, new = '"first version' + "x" * 100 + '"', '"second version' + "x" * 100 + '"'
    assert f"      the journal has: {old[:60]}… (115 characters in all)\n" in err
    assert f"      this code gives: {new[:60]}… (116 characters in all)\n" in err
    assert "argument 1" not in err  # the name is the same: only what differs is shown


def test_resume_refuses_when_the_executed_prefix_changed_and_changes_nothing(ws) -> None:
    w = ws(FIX_ME)
    w.run()
    run_id = w.only_run()
    before = w.state(run_id)

    w.edit('f"a{i}\\n"', 'f"b{i}\\n"')
    refused = w.pipe("resume", run_id)
    assert refused.returncode == EXIT_RUNTIME
    err = refused.stderr
    assert f"the program no longer matches the journal of run {run_id} at step 1 (its inputs differ)" in err
    assert "  the journal has: skill fs.append at prog.pipe:5 in main\n" in err
    assert '         5 |         fs.append("log.txt", f"a{i}\\n")' in err  # the old line, from the journal
    assert "  this code asks:  skill fs.append at prog.pipe:5 in main\n" in err
    assert '         5 |         fs.append("log.txt", f"b{i}\\n")' in err  # the new line
    assert f"`pipe fork {run_id} --at STEP`" in err and f"`pipe resume {run_id} --from-scratch`" in err
    assert "is saved" not in err  # resuming again would be refused again
    assert w.state(run_id) == before  # the journal's rows, the trace, the workspace: all as they were

    # A different skill at the same step names both skills.
    w.edit('fs.append("log.txt", f"b{i}\\n")', 'fs.write("log.txt", f"b{i}\\n")')
    refused = w.pipe("resume", run_id)
    assert refused.returncode == EXIT_RUNTIME
    assert "at step 1" in refused.stderr and "skill fs.append at prog.pipe:5" in refused.stderr
    assert "skill fs.write at prog.pipe:5" in refused.stderr
    assert w.state(run_id) == before

    # The run still replays as it ran, with the code it ran (the refused code is not recorded).
    replay = w.pipe("replay", run_id, "--quiet")
    assert replay.returncode == 0, replay.stderr

    # --from-scratch forgets the journal and runs the new code from the start: its side effects happen again.
    w.edit('fs.write("log.txt", f"b{i}\\n")', 'fs.append("log.txt", f"b{i}\\n")')
    w.edit('    fail "not finished yet"\n', '    return "fresh"\n')
    (w.root / "input.txt").write_text("in", encoding="utf-8")
    fresh = w.pipe("resume", run_id, "--from-scratch")
    assert fresh.returncode == 0, fresh.stderr
    assert fresh.stdout == "read in\nfresh\n"
    assert w.file("log.txt") == "a0\na1\na2\nb0\nb1\nb2\n"
    # ... under keys of their own (under the old ones fs.append would refuse them, or skip them as done).
    assert w.executions()[len(before[4]):] == [("fs.append", f"{run_id}:{i}:scratch1") for i in (1, 2, 3)] + [
        ("fs.read", f"{run_id}:4:scratch1")]
    steps = journal_steps(w.run_dir(run_id))
    assert [s["name"] for s in steps] == ["fs.append"] * 3 + ["fs.read"] and all(s["ok"] for s in steps)
    assert journal_meta(w.run_dir(run_id))["status"] == "done"


def test_a_budget_stop_resumes_with_a_larger_limit_and_steps_done_count(ws) -> None:
    w = ws('''\
use fs

pipeline main(n: int = 30) -> int:
    total = 0
    for i in range(n):
        fs.append("log.txt", f"{i}\\n")
        total += i
    return total
''')
    stopped = w.run("--max-steps", "20", "--json")
    assert stopped.returncode == EXIT_RUNTIME
    envelope = json.loads(stopped.stdout)
    assert envelope["error"]["kind"] == "budget" and envelope["usage"]["steps"] == 20
    run_id = envelope["run_id"]
    assert journal_meta(w.run_dir(run_id))["status"] == "stopped"
    shown = w.pipe("show", run_id)
    assert f"run {run_id}: stopped, 20 steps" in shown.stdout

    more = w.pipe("resume", run_id, "--max-steps", "40", "--json")
    assert more.returncode == EXIT_RUNTIME
    assert json.loads(more.stdout)["usage"]["steps"] == 40  # 20 done + 20 more: the total never passes the limit
    assert "limit 40 steps, used 40" in json.loads(more.stdout)["error"]["message"]

    done = w.pipe("resume", run_id, "--max-steps", "100", "--json")
    assert done.returncode == 0, done.stderr
    envelope = json.loads(done.stdout)
    assert envelope["output"] == sum(range(30)) and 40 < envelope["usage"]["steps"] <= 100
    assert w.file("log.txt") == "".join(f"{i}\n" for i in range(30))
    assert [key for _, key in w.executions()] == [f"{run_id}:{i}" for i in range(1, 31)]  # each step ran once
    meta = journal_meta(w.run_dir(run_id))
    assert meta["steps"] == envelope["usage"]["steps"] and meta["attempts"] == 3
    assert meta["budget"]["max_steps"] == 100  # the run keeps its new limit: its replay finishes as it did
    replay = w.pipe("replay", run_id, "--quiet")
    assert replay.returncode == 0, replay.stderr


@pytest.mark.parametrize("flag, limit, larger", [("--max-steps", "20", "40"), ("--max-skill-calls", "5", "10"),
                                                  ("--max-memory", "300", "600")])
def test_a_budget_stop_says_which_flag_to_resume_with_and_that_command_goes_on(ws, flag, limit, larger) -> None:
    w = ws('use fs\n\npipeline main(n: int = 12) -> int:\n    s = ""\n    for i in range(n):\n'
           '        fs.append("log.txt", f"{i}\\n")\n        s = s + "' + "x" * 30 + '"\n    return len(s)\n')
    stopped = w.run(flag, limit)
    assert stopped.returncode == EXIT_RUNTIME
    run_id = w.only_run()
    # The hint names the flag with a value, and the saved-run line is the command that goes on with it
    # (a plain `pipe resume` keeps the run's limit and stops again at once).
    assert f"raise the limit, e.g. `{flag} {larger}`" in stopped.stderr
    command = f"pipe resume {run_id} {flag} {larger}"
    assert f"run {run_id} is saved: continue it with a larger budget: `{command}`" in stopped.stderr
    assert "after fixing the cause" not in stopped.stderr
    done = w.pipe(*command.split()[1:], "--max-steps", "100000") if flag != "--max-steps" else \
        w.pipe(*command.split()[1:])
    assert done.returncode in (0, EXIT_RUNTIME)
    assert f"limit {limit} " not in done.stderr  # the run went past where it stopped


def test_a_budget_stop_resumes_through_the_api_without_redoing_steps(tmp_path: Path) -> None:
    calls: list[int] = []

    @skill("probe.work")
    def work(i: int) -> int:
        """Count one real call."""
        calls.append(i)
        return i * i

    registry = default_registry(plugins=False)
    registry.register(work)
    program = tmp_path / "prog.pipe"
    program.write_text('''\
use probe

pipeline main(n: int = 10) -> int:
    total = 0
    for i in range(n):
        total += probe.work(i)
    return total
''', encoding="utf-8")
    options = RunOptions(durable=True, registry=registry, workspace=tmp_path, run_id="apirun", use_cache=False,
                         budget=Budget(max_steps=6))
    with pytest.raises(PipeRuntimeError) as stopped:
        run_file(program, options)
    assert stopped.value.kind == "budget"
    assert calls == list(range(len(calls))) and 0 < len(calls) < 10
    machine = durable_runs.resume(tmp_path, "apirun", registry, RunOptions(budget=Budget(max_steps=1000)))
    assert machine.state.result == sum(i * i for i in range(10))
    assert calls == list(range(10))  # no call twice


# ---- replay -------------------------------------------------------------------------------

EFFECTS = '''\
use fs, time, random, ids

pipeline main() -> str:
    stamp = time.now()
    n = random.int(1, 1000000)
    x = random.number()
    id = ids.new()
    fs.append("log.txt", f"{id}\\n")
    print(f"{stamp} {n} {x} {id}")
    return f"{n}-{id}"
'''


def test_replay_makes_no_outside_call_and_sees_the_same_time_random_values_and_ids(ws, monkeypatch) -> None:
    w = ws(EFFECTS)
    first = w.run()
    assert first.returncode == 0, first.stderr
    run_id = w.only_run()
    printed, result = first.stdout.splitlines()
    refused_by: list = []

    class Spy(durable_replay.SealedRegistry):
        def __init__(self, registry) -> None:
            super().__init__(registry)
            refused_by.append(self)

    monkeypatch.setattr(durable_replay, "SealedRegistry", Spy)
    counted = w.root.parent / "api.exec.log"
    for _ in range(2):
        lines: list[str] = []
        report = durable_runs.replay(w.root, run_id, counting_registry(default_registry(plugins=False), str(counted)),
                                printer=lines.append)
        assert report.identical, report.differences
        assert report.outside_calls == 0 and report.reused == 5 and report.trace_compared
        assert lines == report.output == [printed] and report.result == result
    assert [r.refused for r in refused_by] == [[], []]
    assert exec_log(counted) == []

    replay = w.pipe("replay", run_id)
    assert replay.returncode == 0, replay.stderr
    assert replay.stdout == f"{printed}\n"
    assert f"replayed run {run_id}: 5 journaled step(s) reused, 0 outside call(s)" in replay.stderr
    assert "identical to the original run (output, result, error and trace; timestamps ignored)" in replay.stderr
    assert len(w.executions()) == 5 and w.file("log.txt").count("\n") == 1


def test_a_sealed_registry_refuses_side_effecting_skills_and_lets_pure_ones_run() -> None:
    sealed = durable_replay.SealedRegistry(default_registry(plugins=False))
    assert sealed.get("text.upper").func is default_registry(plugins=False).get("text.upper").func
    with pytest.raises(RuntimeError, match="replay tried to call the side-effecting skill fs.append"):
        sealed.get("fs.append").func(path="x", text="y")
    assert sealed.refused == ["fs.append"] and sealed.get("no.such") is None


def test_replay_reports_a_run_whose_journal_lost_its_last_steps(ws) -> None:
    w = ws(EFFECTS)
    w.run()
    run_id = w.only_run()
    db = sqlite3.connect(w.run_dir(run_id) / "journal.db")
    with db:
        db.execute("DELETE FROM steps WHERE seq >= 4")
    db.close()
    replay = w.pipe("replay", run_id, "--quiet")
    assert replay.returncode == EXIT_RUNTIME
    assert f"the journal of run {run_id} ends at step 3, but the replay asks for step 4: skill ids.new" in replay.stderr
    assert len(w.executions()) == 5  # nothing ran


# ---- retry ----------------------------------------------------------------------------------

CHILDREN = '''\
use fs, lists

pipeline fetch(k: int) -> str:
    fs.append("calls.txt", f"fetch {k}\\n")
    if k == 2 and not fs.exists("fixed.txt"):
        fail f"fetch {k} failed"
    return f"v{k}"

pipeline main(n: int = 4) -> list[str]:
    out = []
    for k in range(n):
        try:
            out = lists.append(out, fetch(k))
        except err:
            out = lists.append(out, "failed")
    return out
'''


def test_retry_of_one_failed_child_reuses_its_siblings_results(ws) -> None:
    w = ws(CHILDREN)
    first = w.run()
    assert first.returncode == 0 and json.loads(first.stdout) == ["v0", "v1", "failed", "v3"]
    run_id = w.only_run()
    shown = w.pipe("show", run_id).stdout
    for k in range(1, 5):
        assert f"    fetch#{k}  [{2 if k == 3 else 1} step(s)]  main/fetch#{k}" in shown
    assert len(w.executions()) == 5

    (w.root / "fixed.txt").write_text("", encoding="utf-8")
    retried = w.pipe("retry", run_id, "--node", "main/fetch#3")
    assert retried.returncode == 0, retried.stderr
    assert json.loads(retried.stdout) == ["v0", "v1", "v2", "v3"]
    # Only the retried node's steps ran, with keys of their own; fetch#1, #2 and #4 came from the journal.
    assert w.executions()[5:] == [("fs.append", f"{run_id}:3:retry2"), ("fs.exists", f"{run_id}:4:retry2")]
    assert w.file("calls.txt") == "fetch 0\nfetch 1\nfetch 2\nfetch 3\nfetch 2\n"
    meta = journal_meta(w.run_dir(run_id))
    assert (meta["status"], meta["result"], meta["attempts"]) == ("done", ["v0", "v1", "v2", "v3"], 2)
    steps = journal_steps(w.run_dir(run_id))
    assert [(s["seq"], s["node"], s["result"]) for s in steps] == [
        (1, "main/fetch#1", "8"), (2, "main/fetch#2", "8"), (3, "main/fetch#3", "8"), (4, "main/fetch#3", "true"),
        (5, "main/fetch#4", "8")]
    replay = w.pipe("replay", run_id, "--quiet")
    assert replay.returncode == 0, replay.stderr


def test_retry_through_the_api_counts_calls(tmp_path: Path) -> None:
    calls: list[str] = []
    broken = {"b"}

    @skill("probe.fetch")
    def fetch(name: str) -> str:
        """Fetch one item; the names in `broken` fail."""
        calls.append(name)
        if name in broken:
            raise ValueError(f"{name} is broken")
        return name.upper()

    registry = SkillRegistry()
    registry.register(fetch)
    program = tmp_path / "prog.pipe"
    program.write_text('''\
use probe

pipeline get(name: str) -> str:
    return probe.fetch(name)

pipeline main() -> list[str]:
    out = []
    for name in ["a", "b", "c"]:
        try:
            out = out + [get(name)]
        except:
            out = out + ["?"]
    return out
''', encoding="utf-8")
    machine = run_file(program, RunOptions(durable=True, registry=registry, workspace=tmp_path, run_id="r",
                                           use_cache=False))
    assert machine.state.result == ["A", "?", "C"] and calls == ["a", "b", "c"]
    broken.clear()
    machine = durable_runs.retry(tmp_path, "r", registry, RunOptions(), "main/get#2")
    assert machine.state.result == ["A", "B", "C"]
    assert calls == ["a", "b", "c", "b"]  # one call: the retried child; its siblings' results were reused


def test_retry_of_an_unknown_node_names_the_nodes(ws) -> None:
    w = ws(CHILDREN)
    w.run()
    run_id = w.only_run()
    before = w.state(run_id)
    bad = w.pipe("retry", run_id, "--node", "main/fetch#9")
    assert bad.returncode == EXIT_USAGE
    assert f"pipe retry: run {run_id} has no node `main/fetch#9`" in bad.stderr
    assert "main/fetch#1, main/fetch#2, main/fetch#3, main/fetch#4" in bad.stderr
    assert w.state(run_id) == before


# ---- fork -------------------------------------------------------------------------------------

FORKED = '''\
use fs

pipeline main(tag: str = "a") -> str:
    base = 10
    fs.append("log.txt", f"{tag} first\\n")
    fs.append("log.txt", f"{tag} second {base}\\n")
    print(f"{tag} {base}")
    return f"{tag}:{base}"
'''


def test_fork_at_step_zero_with_a_changed_input(ws) -> None:
    w = ws(FORKED)
    w.run()
    parent = w.only_run()
    before = journal_snapshot(w.run_dir(parent))
    forked = w.pipe("fork", parent, "--at", "0", "-i", "tag=b")
    assert forked.returncode == 0, forked.stderr
    assert forked.stdout == "b 10\nb:10\n"
    child = forked.stderr.split("into run ")[1].split()[0]
    assert f"forked run {parent} at step 0 into run {child}" in forked.stderr
    assert w.file("log.txt") == "a first\na second 10\nb first\nb second 10\n"
    assert w.executions()[2:] == [("fs.append", f"{child}:1"), ("fs.append", f"{child}:2")]
    meta = journal_meta(w.run_dir(child))
    assert (meta["parent_run"], meta["fork_step"], meta["inputs"], meta["status"]) == (parent, 0, {"tag": "b"}, "done")
    assert journal_snapshot(w.run_dir(parent)) == before  # the parent is untouched
    shown = w.pipe("show", child).stdout
    assert f"forked from run {parent} at step 0" in shown and 'inputs: tag="b"' in shown


def test_fork_at_a_later_step_with_a_changed_variable_reuses_the_steps_before_it(ws) -> None:
    w = ws(FORKED)
    w.run()
    parent = w.only_run()
    forked = w.pipe("fork", parent, "--at", "2", "-i", "base=99")
    assert forked.returncode == 0, forked.stderr
    assert forked.stdout == "a 99\na:99\n"
    child = forked.stderr.split("into run ")[1].split()[0]
    # Step 1 (base = 10) and step 2 (the first append) are the parent's; only the second append ran again.
    assert w.executions()[2:] == [("fs.append", f"{child}:2")]
    assert w.file("log.txt") == "a first\na second 10\na second 99\n"
    steps = journal_steps(w.run_dir(child))
    assert [(s["seq"], s["name"]) for s in steps] == [(1, "fs.append"), (2, "fs.append")]
    assert journal_steps(w.run_dir(parent))[0]["result"] == steps[0]["result"]
    replay = w.pipe("replay", child, "--quiet")
    assert replay.returncode == 0, replay.stderr


def test_a_fork_of_a_fork_keeps_both_changes_and_replays(ws) -> None:
    w = ws(FORKED)
    w.run()
    parent = w.only_run()
    child = w.pipe("fork", parent, "--at", "2", "-i", "base=99").stderr.split("into run ")[1].split()[0]
    grandchild = w.pipe("fork", child, "--at", "3", "-i", "tag=z")
    assert grandchild.returncode == 0, grandchild.stderr
    assert grandchild.stdout == "z 99\nz:99\n"  # base from the first fork, tag from the second
    grandchild_id = grandchild.stderr.split("into run ")[1].split()[0]
    assert journal_meta(w.run_dir(grandchild_id))["fork_changes"] == [[2, {"base": "99"}], [3, {"tag": "z"}]]
    assert w.executions()[3:] == []  # everything up to step 3 came from the journals
    for run_id in (parent, child, grandchild_id):
        replay = w.pipe("replay", run_id, "--quiet")
        assert replay.returncode == 0 and "identical" in replay.stderr, (run_id, replay.stderr)


def test_fork_with_bad_changes_leaves_no_run_behind(ws) -> None:
    w = ws(FORKED)
    w.run()
    parent = w.only_run()
    before = w.state(parent)
    for args, message in [
        (["--at", "2", "-i", "nosuch=1"], "pipeline main has no variable `nosuch` at this step (its variables: tag, base)"),
        (["--at", "0", "-i", "nosuch=1"], "pipeline main has no input `nosuch` (inputs: tag)"),
        (["--at", "99"], f"run {parent} has 5 steps; --at must be 0 to that"),
        (["--at", "1", "-i", "base"], "-i expects NAME=VALUE, got 'base'"),
    ]:
        bad = w.pipe("fork", parent, *args)
        assert bad.returncode == EXIT_USAGE, (args, bad.stderr)
        assert message in bad.stderr, bad.stderr
        assert w.state(parent) == before, args


def test_a_run_killed_before_its_first_attempt_began_resumes_and_replays(tmp_path: Path, monkeypatch) -> None:
    """The journal exists (attempts 0, status running) but the process died before the run started."""
    program = tmp_path / "prog.pipe"
    program.write_text(EFFECTS, encoding="utf-8")
    registry = default_registry(plugins=False)
    real_attempt = durable_attempt.attempt

    def killed(*args, **kwargs):
        raise SystemExit("killed")

    monkeypatch.setattr(durable_attempt, "attempt", killed)
    with pytest.raises(SystemExit):
        run_file(program, RunOptions(durable=True, registry=registry, workspace=tmp_path, run_id="k", use_cache=False))
    monkeypatch.setattr(durable_attempt, "attempt", real_attempt)
    meta = journal_meta(tmp_path / ".orgtree" / "runs" / "k")
    assert (meta["status"], meta["attempts"]) == ("running", 0)
    machine = durable_runs.resume(tmp_path, "k", registry, RunOptions())
    assert machine.state.status == "done" and journal_meta(tmp_path / ".orgtree" / "runs" / "k")["attempts"] == 1
    report = durable_runs.replay(tmp_path, "k", registry)
    assert report.identical, report.differences
    assert report.outside_calls == 0 and not report.trace_compared  # the trace holds a resume: not comparable


# ---- pipe runs and pipe show -------------------------------------------------------------------


def test_runs_and_show(ws) -> None:
    w = ws(CHILDREN.replace("        try:\n            out = lists.append(out, fetch(k))\n        except err:\n"
                            "            out = lists.append(out, \"failed\")\n",
                            "        out = lists.append(out, fetch(k))\n"))
    empty = w.pipe("runs")
    assert empty.returncode == 0 and empty.stdout == "" and "no runs in" in empty.stderr
    assert w.pipe("runs", "--json").stdout.strip() == "[]"

    failed = w.run("-i", "n=3")
    assert failed.returncode == EXIT_RUNTIME
    run_id = w.only_run()
    listed = w.pipe("runs")
    header, row = listed.stdout.splitlines()
    assert header.split() == ["RUN", "STATUS", "STARTED", "SECONDS", "STEPS", "PROGRAM"]
    assert row.split()[:2] == [run_id, "failed"] and row.endswith(str(w.program.resolve()))
    [entry] = json.loads(w.pipe("runs", "--json").stdout)
    assert (entry["id"], entry["status"], entry["program"]) == (run_id, "failed", str(w.program.resolve()))
    assert entry["steps"] > 0 and entry["seconds"] >= 0 and entry["started"] > 0

    shown = w.pipe("show", run_id)
    assert shown.returncode == 0
    text = shown.stdout
    assert text.startswith(f"run {run_id}: failed, ")
    assert f"program: {w.program.resolve()} (pipeline main)" in text
    assert "inputs: n=3" in text
    assert "error: fetch 2 failed (at prog.pipe:6:9, node main/fetch#3)" in text
    assert "    fetch#3  [2 step(s)]  main/fetch#3  <- failed here" in text
    assert "result:" not in text

    data = json.loads(w.pipe("show", run_id[:4], "--json").stdout)  # a unique prefix will do
    assert data["id"] == run_id and data["status"] == "failed" and data["inputs"] == {"n": 3}
    assert data["nodes"] == ["main", "main/fetch#1", "main/fetch#2", "main/fetch#3"]
    assert data["journaled_steps"] == 4 and data["error"]["node"] == "main/fetch#3"

    # A run whose process died shows as crashed; one whose lock is held as running.
    db = sqlite3.connect(w.run_dir(run_id) / "journal.db")
    with db:
        db.execute("UPDATE meta SET value = '\"running\"' WHERE key = 'status'")
    db.close()
    assert json.loads(w.pipe("runs", "--json").stdout)[0]["status"] == "crashed"
    with RunLock(w.run_dir(run_id)):
        assert json.loads(w.pipe("runs", "--json").stdout)[0]["status"] == "running"
        assert json.loads(w.pipe("show", run_id, "--json").stdout)["status"] == "running"


# ---- bad input ------------------------------------------------------------------------------------

BAD_COMMANDS = [
    ("resume", []), ("show", []), ("replay", []), ("retry", ["--node", "main"]), ("fork", ["--at", "0"]),
]


@pytest.fixture
def failed_run(ws):
    w = ws(FIX_ME)
    w.run()
    return w, w.only_run()


def _all_refused(w: Workspace, ref: str, message: str, commands=BAD_COMMANDS, check_unchanged: str | None = None):
    before = w.state(check_unchanged) if check_unchanged else None
    for command, extra in commands:
        done = w.pipe(command, ref, *extra)
        assert done.returncode == EXIT_USAGE, (command, done.stderr)
        assert f"pipe {command}: {message}" in done.stderr, (command, done.stderr)
        assert "internal error" not in done.stderr and "Traceback" not in done.stderr
        if before is not None:
            assert w.state(check_unchanged) == before, command


def test_an_unknown_run_id(failed_run) -> None:
    w, run_id = failed_run
    _all_refused(w, "nosuch", "no run `nosuch` in ", check_unchanged=run_id)
    assert "`pipe runs` lists the runs of a workspace" in w.pipe("resume", "nosuch").stderr


def test_an_ambiguous_prefix(failed_run) -> None:
    w, run_id = failed_run
    runs = w.run_dir(run_id).parent
    for name in ("abc111", "abc222"):
        shutil.copytree(w.run_dir(run_id), runs / name)
    _all_refused(w, "abc", "run id `abc` is ambiguous: abc111, abc222", check_unchanged="abc111")
    assert w.pipe("show", "abc1").returncode == 0


def test_a_corrupt_journal(failed_run) -> None:
    w, run_id = failed_run
    journal = w.run_dir(run_id) / "journal.db"
    for suffix in ("-wal", "-shm"):
        Path(f"{journal}{suffix}").unlink(missing_ok=True)
    garbage = bytes(range(256)) * 40
    journal.write_bytes(garbage)
    files = sorted(p.name for p in w.run_dir(run_id).iterdir())
    _all_refused(w, run_id, f"the journal {journal} is corrupt (file is not a database); it was left unchanged")
    assert journal.read_bytes() == garbage
    assert sorted(p.name for p in w.run_dir(run_id).iterdir()) == files
    assert sorted(p.name for p in w.run_dir(run_id).parent.iterdir()) == [run_id]  # fork made no new run
    listed = w.pipe("runs", "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout)[0]["status"].startswith("unreadable: the journal")


def test_a_journal_from_a_newer_format(failed_run) -> None:
    w, run_id = failed_run
    db = sqlite3.connect(w.run_dir(run_id) / "journal.db")
    with db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'format'")
    db.close()
    journal = w.run_dir(run_id) / "journal.db"
    _all_refused(w, run_id, f"the journal {journal} has format 99, newer than this orgtree_lang understands (1); "
                 "upgrade orgtree_lang to use it", check_unchanged=run_id)
    with pytest.raises(JournalError, match="has format 99"):
        durable_runs.replay(w.root, run_id, default_registry(plugins=False))


def test_a_journal_that_is_not_a_journal(failed_run) -> None:
    w, run_id = failed_run
    journal = w.run_dir(run_id) / "journal.db"
    journal.unlink()
    db = sqlite3.connect(journal)
    with db:
        db.execute("CREATE TABLE other (x)")
    db.close()
    _all_refused(w, run_id, f"the journal {journal} is corrupt (no such table: meta); it was left unchanged")


def test_a_moved_program(failed_run) -> None:
    w, run_id = failed_run
    (w.root / "moved").mkdir()
    moved = w.root / "moved" / "prog.pipe"
    w.program.rename(moved)
    before = w.state(run_id)
    for command, extra in [("resume", []), ("retry", ["--node", "main"])]:
        done = w.pipe(command, run_id, *extra)
        assert done.returncode == EXIT_USAGE, done.stderr
        assert (f"pipe {command}: the program of run {run_id} was {w.program.resolve()}, which no longer exists; "
                "pass --program PATH to point at where it is now") in done.stderr
        assert w.state(run_id) == before
    # Replay and show need no program file: the journal holds the source.
    assert w.pipe("replay", run_id, "--quiet").returncode == 0
    assert w.pipe("show", run_id).returncode == 0
    # --program points at the new place; the run continues (and fails where it did: input.txt is missing).
    resumed = w.pipe("resume", run_id, "--program", str(moved))
    assert resumed.returncode == EXIT_RUNTIME and "fs.read: no file `input.txt`" in resumed.stderr
    assert journal_meta(w.run_dir(run_id))["program"] == str(moved.resolve())
    assert len(w.executions()) == 5  # only the failed step ran again


def test_a_run_in_use_cannot_be_resumed_twice(failed_run) -> None:
    w, run_id = failed_run
    before = w.state(run_id)
    journal_bytes = (w.run_dir(run_id) / "journal.db").read_bytes()
    with RunLock(w.run_dir(run_id)):
        for command, extra in [("resume", []), ("retry", ["--node", "main"])]:
            done = w.pipe(command, run_id, *extra)
            assert done.returncode == EXIT_USAGE, done.stderr
            assert (f"pipe {command}: run {run_id} is in use by process {os.getpid()}; wait for it to finish or "
                    "stop it first") in done.stderr
        with pytest.raises(JournalError, match="is in use by process"):
            durable_runs.resume(w.root, run_id, default_registry(plugins=False), RunOptions())
        # Reading is fine while it runs.
        assert w.pipe("show", run_id).returncode == 0
    assert (w.run_dir(run_id) / "journal.db").read_bytes() == journal_bytes
    assert w.state(run_id) == before
    assert w.pipe("resume", run_id).returncode == EXIT_RUNTIME  # free again: it runs (and fails as before)


def test_the_api_raises_non_determinism_errors_with_the_state(tmp_path: Path) -> None:
    program = tmp_path / "prog.pipe"
    program.write_text(FIX_ME, encoding="utf-8")
    registry = default_registry(plugins=False)
    with pytest.raises(PipeRuntimeError):
        run_file(program, RunOptions(durable=True, registry=registry, workspace=tmp_path, run_id="r1",
                                     use_cache=False))
    program.write_text(FIX_ME.replace('fs.read("input.txt")', 'fs.exists("input.txt")'), encoding="utf-8")
    with pytest.raises(NonDeterminismError) as info:
        durable_runs.resume(tmp_path, "r1", registry, RunOptions())
    assert info.value.kind == "nondeterminism" and not info.value.catchable
    assert "at step 4 (it is another step)" in info.value.message


@pytest.mark.parametrize("args, kwargs", [
    ([], {}), (["a", 1, 2.5, None, True], {}), ([["x", {"k": [1, 2]}]], {"max_words": 3}),
    (["ünïcode ✓", {"$odd": 1}], {"a": "b", "c": [None]}), ([2 ** 80], {}), ([], {"only": {"nested": {}}}),
])
def test_the_hash_a_resume_compares_is_the_one_journals_always_had(args, kwargs) -> None:
    """Journals written before the inputs were kept must still match: the digest is sha256 of [args, kwargs]."""
    import hashlib

    from orgtree_lang.durable.inputs import input_hash, step_inputs
    from orgtree_lang.runtime.values import encode

    text = json.dumps([encode(args), encode(kwargs)], separators=(",", ":"), ensure_ascii=False)
    expected = hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
    assert step_inputs(args, kwargs).digest == input_hash(args, kwargs) == expected
