"""A checkpoint holds instruction positions, so a resume continues from one only when the same compiler made the
bytecode; under another compiler (an upgraded orgtree_lang, an edited checkout) it starts over from the journal."""

from __future__ import annotations

import json
import sqlite3

import pytest

from durable_testing import exec_log, only_run_id, pipe

PROGRAM = """use fs

pipeline main() -> int:
    total = 0
    for i in range(40):
        fs.append("log.txt", f"{i}\\n")
        total += i
    return total
"""


def resume_modes(run_dir) -> list[str]:
    events = [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()]
    return [e["mode"] for e in events if e["event"] == "run.resume"]


@pytest.mark.parametrize("compiler", ["same", "another"])
def test_a_resume_uses_a_checkpoint_only_from_the_same_compiler(compiler, tmp_path):
    (tmp_path / "p.pipe").write_text(PROGRAM)
    log = tmp_path / "exec.log"
    stopped = pipe("run", "p.pipe", "--max-skill-calls", "10", cwd=tmp_path, exec_log_path=log)
    assert stopped.returncode == 70 and "skill calls budget exceeded" in stopped.stderr
    run_dir = tmp_path / ".orgtree" / "runs" / only_run_id(tmp_path)
    if compiler == "another":
        with sqlite3.connect(run_dir / "journal.db") as db:
            for row_id, state in db.execute("SELECT id, state FROM checkpoints").fetchall():
                saved = json.loads(state)
                saved["program_hash"] = "made-by-another-compiler"
                db.execute("UPDATE checkpoints SET state = ? WHERE id = ?", (json.dumps(saved), row_id))
    done = pipe("resume", only_run_id(tmp_path), "--max-skill-calls", "1000", cwd=tmp_path, exec_log_path=log)
    assert done.returncode == 0, done.stderr
    assert resume_modes(run_dir) == ["checkpoint" if compiler == "same" else "from start"]
    assert (tmp_path / "log.txt").read_text().split() == [str(i) for i in range(40)]  # each append once
    assert len(exec_log(log)) == 40
    shown = pipe("show", only_run_id(tmp_path), "--json", cwd=tmp_path)
    assert json.loads(shown.stdout)["result"] == sum(range(40))
