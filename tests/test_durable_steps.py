"""`pipe show RUN --steps` numbers each journaled step by the statement it ran in, the count `pipe fork --at` uses."""

from __future__ import annotations

import json

import pytest
from cli_testing import pipe

pytestmark = pytest.mark.fast

PROGRAM = """use fs

pipeline main() -> int:
    fs.append("log.txt", "a\\n")
    x = 2
    x = x + 1
    fs.append("log.txt", "b\\n")
    return x
"""


def _steps(tmp_path, run_id):
    shown = pipe("show", run_id, "--steps", "--json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)


def _fork(tmp_path, run_id, at):
    forked = pipe("fork", run_id, "--at", str(at), cwd=tmp_path)
    assert forked.returncode == 0, forked.stderr
    return forked.stderr.split("into run ")[1].split()[0]


def test_steps_carry_the_statement_numbers_fork_counts(tmp_path):
    (tmp_path / "p.pipe").write_text(PROGRAM, encoding="utf-8")
    assert pipe("run", "p.pipe", cwd=tmp_path).returncode == 0
    run_id = json.loads(pipe("runs", "--json", cwd=tmp_path).stdout)[0]["id"]
    shown = _steps(tmp_path, run_id)
    # Statements in order: append (1), x = 2 (2), x = x + 1 (3), append (4), return (5).
    assert [(s["seq"], s["statement"], s["name"], s["at"]) for s in shown["steps"]] == [
        (1, 1, "fs.append", "p.pipe:4"), (2, 4, "fs.append", "p.pipe:7")]
    assert shown["statements"] == 5
    text = pipe("show", run_id, "--steps", cwd=tmp_path).stdout
    assert "statement      4  skill fs.append  p.pipe:7" in text

    # Forking after statement 4 reuses the second append; after statement 3 the fork appends it again.
    after = _fork(tmp_path, run_id, 4)
    assert (tmp_path / "log.txt").read_text() == "a\nb\n"
    assert [s["statement"] for s in _steps(tmp_path, after)["steps"]] == [1, 4]
    _fork(tmp_path, run_id, 3)
    assert (tmp_path / "log.txt").read_text() == "a\nb\nb\n"


def test_fork_beyond_the_run_is_an_error(tmp_path):
    (tmp_path / "p.pipe").write_text(PROGRAM, encoding="utf-8")
    assert pipe("run", "p.pipe", cwd=tmp_path).returncode == 0
    run_id = json.loads(pipe("runs", "--json", cwd=tmp_path).stdout)[0]["id"]
    bad = pipe("fork", run_id, "--at", "9999", cwd=tmp_path)
    assert bad.returncode == 2 and "has 5 steps; --at must be 0 to that" in bad.stderr
