"""`pipe retry RUN --node NODE` reaches nodes inside a generated child, runs the saved module as it is now (fixed
and accepted by a person), keeps every other journaled step, and changes the journal in one transaction: a retry
killed midway leaves the run exactly as it was, and the next retry repeats its effects under the same keys."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from decompose_testing import NO_CONCERNS
from durable_testing import exec_log, journal_meta, journal_snapshot, journal_steps, only_run_id, pipe

PARENT = '''use fs

pipeline main(n: int = 3) -> list[str]:
    ambiguous gather(n: int) -> values: list[str]:
        """For each k below n append `fetch k` to calls.txt and give "v<k>", or "failed" where fetching fails."""
    return values
'''

# The module the (scripted) author writes: fetching item 1 fails, which a person later fixes in the saved file.
MODULE = '''```pipe
use fs

pipeline fetch(k: int) -> str:
    fs.append("calls.txt", f"fetch {k}\\n")
    if fs.exists("broken.txt") and k == 1:
        fail f"fetch {k} failed"
    return f"v{k}"

pipeline main(n: int) -> list[str]:
    out = []
    for k in range(n):
        try:
            out = out + [fetch(k)]
        except err:
            out = out + ["failed"]
    return out
```'''

CHILD = "main/gather@1/main"


def _written_run(tmp_path: Path) -> tuple[str, Path]:
    """A run whose block got its module from the scripted author and reviewer; fetch#2 of the child failed."""
    (tmp_path / "top.pipe").write_text(PARENT, encoding="utf-8")
    (tmp_path / "broken.txt").write_text("", encoding="utf-8")
    (tmp_path / "author.json").write_text(json.dumps([{"match": {"contains": "Write a module"}, "reply": MODULE}]))
    (tmp_path / "reviewer.json").write_text(json.dumps([{"reply": NO_CONCERNS}]))
    first = pipe("run", "top.pipe", "--model", "scripted:author.json", "--review-model", "scripted:reviewer.json",
                 cwd=tmp_path, exec_log_path=tmp_path.parent / f"{tmp_path.name}.log")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == ["v0", "failed", "v2"]
    run_id = only_run_id(tmp_path)
    steps = journal_steps(tmp_path / ".orgtree" / "runs" / run_id)
    assert [s["kind"] for s in steps][0] == "ambiguous" and "model" in [s["kind"] for s in steps]
    return run_id, tmp_path.parent / f"{tmp_path.name}.log"


def _fix_module(tmp_path: Path) -> None:
    """What a person does: edit the saved module, then approve the edit."""
    saved = tmp_path / ".orgtree" / "modules" / "top" / "gather.pipe"
    text = saved.read_text(encoding="utf-8")
    saved.write_text(text.replace('fs.exists("broken.txt") and k == 1', 'fs.exists("broken.txt") and k == 99'),
                     encoding="utf-8")
    accepted = pipe("modules", "accept", "top/gather", cwd=tmp_path)
    assert accepted.returncode == 0, accepted.stderr


def test_retry_of_a_node_inside_a_generated_child_runs_the_fixed_module(tmp_path):
    run_id, log = _written_run(tmp_path)
    run_dir = tmp_path / ".orgtree" / "runs" / run_id
    before = journal_steps(run_dir)
    child_steps = [s for s in before if s["node"].startswith(CHILD + "/")]
    assert [s["node"] for s in child_steps] == [f"{CHILD}/fetch#{k}" for k in (1, 1, 2, 2, 3, 3)]
    executed = len(exec_log(log))
    _fix_module(tmp_path)

    # No model is configured: the block takes the saved (fixed) module, and nothing else runs again.
    retried = pipe("retry", run_id, "--node", f"{CHILD}/fetch#2", cwd=tmp_path, exec_log_path=log)
    assert retried.returncode == 0, retried.stderr
    assert json.loads(retried.stdout) == ["v0", "v1", "v2"]
    after = journal_steps(run_dir)
    fetch2 = [s["seq"] for s in after if s["node"] == f"{CHILD}/fetch#2"]
    assert exec_log(log)[executed:] == [("fs.append", f"{run_id}:{fetch2[0]}:retry2"),
                                        ("fs.exists", f"{run_id}:{fetch2[1]}:retry2")]
    assert (tmp_path / "calls.txt").read_text(encoding="utf-8") == "fetch 0\nfetch 1\nfetch 2\nfetch 1\n"
    # Every child step is still journaled (the model's answers are not: the saved module needed none), numbered
    # one after another, the siblings' rows copied as they were.
    assert [s["node"] for s in after] == ["main"] + [f"{CHILD}/fetch#{k}" for k in (1, 1, 2, 2, 3, 3)]
    assert [s["seq"] for s in after] == list(range(1, 8))
    old = {(s["node"], s["name"]): s for s in child_steps if not s["node"].endswith("#2")}
    for step in after[1:]:
        if not step["node"].endswith("#2"):
            kept = old[(step["node"], step["name"])]
            assert (step["result"], step["finished"], step["input_hash"]) == (
                kept["result"], kept["finished"], kept["input_hash"])
    meta = journal_meta(run_dir)
    assert (meta["status"], meta["result"], meta["attempts"]) == ("done", ["v0", "v1", "v2"], 2)
    replay = pipe("replay", run_id, "--quiet", cwd=tmp_path)
    assert replay.returncode == 0, replay.stderr
    tree = pipe("tree", run_id, cwd=tmp_path).stdout
    assert "fetch#2  pipeline  ok" in tree and "error" not in tree, tree


def test_retry_of_a_child_node_refuses_an_edited_module_nobody_accepted(tmp_path):
    run_id, log = _written_run(tmp_path)
    run_dir = tmp_path / ".orgtree" / "runs" / run_id
    saved = tmp_path / ".orgtree" / "modules" / "top" / "gather.pipe"
    saved.write_text(saved.read_text(encoding="utf-8").replace("k == 1", "k == 99"), encoding="utf-8")
    before = journal_snapshot(run_dir)
    refused = pipe("retry", run_id, "--node", f"{CHILD}/fetch#2", cwd=tmp_path, exec_log_path=log)
    assert refused.returncode == 70
    assert "was changed since it was reviewed" in refused.stderr and "pipe modules accept top/gather" in refused.stderr
    assert journal_snapshot(run_dir) == before  # a retry that fails changes nothing
    _fix_module(tmp_path)
    retried = pipe("retry", run_id, "--node", f"{CHILD}/fetch#2", cwd=tmp_path, exec_log_path=log)
    assert retried.returncode == 0, retried.stderr
    assert (tmp_path / "calls.txt").read_text(encoding="utf-8") == "fetch 0\nfetch 1\nfetch 2\nfetch 1\n"


def test_a_retry_killed_midway_leaves_the_journal_as_it_was(tmp_path):
    run_id, log = _written_run(tmp_path)
    run_dir = tmp_path / ".orgtree" / "runs" / run_id
    _fix_module(tmp_path)
    before = journal_snapshot(run_dir)
    mark = (run_dir / "journal.mark").read_bytes()
    executed = len(exec_log(log))

    # Killed right after the retried node's second step ran: its first step's row was already written, inside
    # the retry's transaction.
    killed = pipe("retry", run_id, "--node", f"{CHILD}/fetch#2", cwd=tmp_path, exec_log_path=log,
                  kill_after="fs.exists:1")
    assert killed.returncode == -9, killed.stderr
    assert [name for name, _ in exec_log(log)[executed:]] == ["fs.append", "fs.exists"]
    assert journal_snapshot(run_dir) == before
    assert (run_dir / "journal.mark").read_bytes() == mark
    db = sqlite3.connect(run_dir / "journal.db")
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()

    # The next retry is the same attempt: the same keys, so the append that already happened is not made twice.
    again = pipe("retry", run_id, "--node", f"{CHILD}/fetch#2", cwd=tmp_path, exec_log_path=log)
    assert again.returncode == 0, again.stderr
    keys = [key for _, key in exec_log(log)[executed:]]
    assert keys[0] == keys[2] and keys[1] == keys[3] and keys[0].endswith(":retry2"), keys
    assert (tmp_path / "calls.txt").read_text(encoding="utf-8") == "fetch 0\nfetch 1\nfetch 2\nfetch 1\n"
    meta = journal_meta(run_dir)
    assert (meta["status"], meta["result"], meta["attempts"]) == ("done", ["v0", "v1", "v2"], 2)
