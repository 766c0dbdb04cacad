"""Right after a crash, `pipe runs` and `pipe show` report what the journal's last checkpoint holds, not zeros."""

from __future__ import annotations

import json

from durable_testing import only_run_id, pipe

PROGRAM = """use fs

pipeline main(n: int, spin: int) -> int:
    i = 0
    while i < n:
        fs.append("log.txt", f"line {i}\\n")
        print(f"line {i}")
        j = 0
        while j < spin:
            j = j + 1
        i = i + 1
    return i
"""


def test_views_after_kill_show_the_checkpointed_progress(tmp_path):
    (tmp_path / "prog.pipe").write_text(PROGRAM, encoding="utf-8")
    killed = pipe("run", "prog.pipe", "-i", "n=60", "-i", "spin=30000", cwd=tmp_path,
                  exec_log_path=tmp_path / "exec.log", kill_after="fs.append:40", timeout=300)
    assert killed.returncode == -9, killed.stderr
    run_id = only_run_id(tmp_path)

    listed = json.loads(pipe("runs", "--json", cwd=tmp_path).stdout)[0]
    assert listed["status"] == "crashed"
    assert listed["steps"] > 30000 and listed["seconds"] > 0, listed
    shown = json.loads(pipe("show", run_id, "--json", cwd=tmp_path).stdout)
    assert shown["steps"] == listed["steps"]
    printed = shown["printed"]
    assert 1 <= len(printed) <= 40 and printed == [f"line {i}" for i in range(len(printed))], printed

    resumed = pipe("resume", run_id, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    done = json.loads(pipe("show", run_id, "--json", cwd=tmp_path).stdout)
    assert done["status"] == "done" and done["printed"] == [f"line {i}" for i in range(60)]


def test_show_lists_inputs_taken_from_defaults(tmp_path):
    (tmp_path / "d.pipe").write_text('pipeline main(name: str = "Ada", times: int = 2) -> str:\n'
                                     '    return name * times\n', encoding="utf-8")
    assert pipe("run", "d.pipe", "-i", "times=3", cwd=tmp_path).returncode == 0
    run_id = only_run_id(tmp_path)
    text = pipe("show", run_id, cwd=tmp_path).stdout
    assert 'inputs: times=3, name="Ada" (default)' in text, text
    shown = json.loads(pipe("show", run_id, "--json", cwd=tmp_path).stdout)
    assert shown["inputs"] == {"times": 3} and shown["defaults"] == {"name": "Ada"}
