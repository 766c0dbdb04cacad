"""Right after a crash, `pipe runs` and `pipe show` report what the journal's last checkpoint holds, not zeros."""

from __future__ import annotations

import json

from durable_testing import journal_steps, only_run_id, pipe

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


BUSY = """use fs

pipeline busy(i: int, spin: int) -> int:
    fs.append("log.txt", f"line {i}\\n")
    j = 0
    while j < spin:
        j = j + 1
    return i

pipeline main(n: int, spin: int) -> int:
    total = 0
    for i in range(n):
        total = total + busy(i, spin)
    return total
"""


def _tree(tmp_path, run_id):
    listed = pipe("tree", run_id, "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    return {node["id"][len(run_id) + 1:]: node for node in json.loads(listed.stdout)}


def _calls(nodes):
    return [path for path, node in nodes.items() if node["kind"] == "pipeline" and path.startswith("main/busy#")]


def test_the_org_tree_after_kill_agrees_with_the_journal_and_resume_completes_it(tmp_path):
    (tmp_path / "busy.pipe").write_text(BUSY, encoding="utf-8")
    # Killed inside the 25th call, after its append: checkpoints (every 0.5 s) come and go meanwhile, and the
    # recorder writes nodes in batches, so some finished calls are only in the journal.
    killed = pipe("run", "busy.pipe", "-i", "n=30", "-i", "spin=1000", cwd=tmp_path,
                  exec_log_path=tmp_path / "exec.log", kill_after="fs.append:25", timeout=120)
    assert killed.returncode == -9, killed.stderr
    run_id = only_run_id(tmp_path)

    # The 25th append ran but its step was in flight: the journal has 24, and the tree every one of them.
    assert len(journal_steps(tmp_path / ".orgtree" / "runs" / run_id)) == 24
    nodes = _tree(tmp_path, run_id)
    calls = [f"main/busy#{k}" for k in range(1, 25)]
    assert _calls(nodes) in (calls, calls + ["main/busy#25"])  # busy#25 only if its opening was written
    assert not [path for path, node in nodes.items() if node["status"] == "running"]
    assert nodes["main"]["status"] == "interrupted"
    appends = [path for path, node in nodes.items() if node["kind"] == "skill" and node["name"] == "fs.append"]
    assert len(appends) == 24 and all(nodes[p]["status"] == "ok" for p in appends)
    text = pipe("tree", run_id, cwd=tmp_path).stdout
    assert "main  pipeline  interrupted" in text and " running" not in text, text
    shown = json.loads(pipe("show", run_id, "--json", cwd=tmp_path).stdout)
    assert shown["status"] == "crashed" and set(calls) <= set(shown["nodes"]) and "main" in shown["interrupted"]

    resumed = pipe("resume", run_id, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    nodes = _tree(tmp_path, run_id)
    assert _calls(nodes) == [f"main/busy#{k}" for k in range(1, 31)]
    assert {node["status"] for node in nodes.values()} == {"ok"}, {p: n["status"] for p, n in nodes.items()}
    appends = [node for node in nodes.values() if node["kind"] == "skill" and node["name"] == "fs.append"]
    assert len(appends) == 30
    assert (tmp_path / "log.txt").read_text(encoding="utf-8") == "".join(f"line {i}\n" for i in range(30))
