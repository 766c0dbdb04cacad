"""A saved block reached again and again in a journaled run with no model: its steps join the journal's group
commit (no fsync of their own), and the run replays to the same result."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cli_testing import pipe

PROGRAM = '''use text

pipeline main(n: int) -> int:
    bugs = 0
    for i in range(n):
        report = f"question number {i}"
        if i % 2 == 0:
            report = f"crash number {i}"
        ambiguous classify(report: str) -> label: str:
            """Label the report: bug if it mentions a crash, else question."""
        if label == "bug":
            bugs += 1
    return bugs
'''
MODULE = '''```pipe
use text

pipeline main(report: str) -> str:
    if text.contains(text.lower(report), "crash"):
        return "bug"
    return "question"
```'''


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "triage.pipe").write_text(PROGRAM)
    (tmp_path / "author.json").write_text(json.dumps([{"match": {"contains": "Write a module"}, "reply": MODULE}]))
    (tmp_path / "reviewer.json").write_text(json.dumps([{"reply": json.dumps({"concerns": [], "summary": "ok"})}]))
    first = pipe("run", "triage.pipe", "-i", "n=1", "--model", "scripted:author.json", "--review-model",
                 "scripted:reviewer.json", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    return tmp_path


def _journal_fsyncs(monkeypatch) -> list[str]:
    """The journal files fsynced from now on (os.fsync still syncs: this only writes down which file)."""
    synced: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        name = os.readlink(f"/proc/self/fd/{fd}")
        if "journal.db" in name:
            synced.append(name)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return synced


def test_reaching_a_saved_block_forty_times_fsyncs_the_journal_a_few_times_not_twice_a_reach(workspace, monkeypatch):
    synced = _journal_fsyncs(monkeypatch)
    done = pipe("run", "triage.pipe", "-i", "n=40", "--json", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == 20
    # The journal's creation and its close, and the group commit: not a step of the 80 the reaches journaled.
    assert 1 <= len(synced) <= 4, synced
    run_id = json.loads(done.stdout)["run_id"]
    replayed = pipe("replay", run_id, cwd=workspace)
    assert replayed.returncode == 0, replayed.stderr
    assert "identical to the original run" in replayed.stderr
