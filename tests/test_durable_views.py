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


SLOW = """use fs, code

pipeline work(i: int) -> int:
    fs.append("log.txt", f"{i}\\n")
    return i

pipeline main() -> int:
    total = 0
    for i in range(12):
        total = total + work(i)
    print(f"total so far {total}")
    ran = code.run("sh", "sleep 100", timeout=110)
    return total
"""


def _recorded_steps(run_dir) -> int:
    """The most steps the journal holds figures for: its checkpoints', or those a long wait left (`progress`)."""
    import sqlite3

    try:
        with sqlite3.connect(f"file:{run_dir / 'journal.db'}?mode=ro", uri=True, timeout=5) as db:
            checkpointed = db.execute("SELECT coalesce(max(steps), 0) FROM checkpoints").fetchone()[0]
            row = db.execute("SELECT value FROM meta WHERE key = 'progress'").fetchone()
    except sqlite3.Error:
        return 0
    progress = json.loads(row[0]) if row else None  # null: the attempt has not waited long yet
    return max(checkpointed, (progress or {}).get("steps", 0))


def test_a_run_killed_during_a_long_call_shows_what_it_had_done_and_its_finished_nodes_in_order(tmp_path):
    import subprocess
    import time

    from durable_testing import cli_command, cli_env, run_dirs

    (tmp_path / "slow.pipe").write_text(SLOW, encoding="utf-8")
    run = subprocess.Popen(cli_command("run", "slow.pipe"), cwd=tmp_path, env=cli_env(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        # The run does its work in a moment, then waits 100 s for the sandbox: it is killed in that wait, once
        # its journal holds figures past the start (bounded to 30 s: without them the test fails below).
        for _ in range(300):
            dirs = run_dirs(tmp_path)
            if dirs and _recorded_steps(dirs[0]) > 0:
                break
            time.sleep(0.1)
        run.kill()  # SIGKILL, by its pid
        out, _ = run.communicate(timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == -9 and out == "total so far 66\n"
    assert _recorded_steps(run_dirs(tmp_path)[0]) > 0, "nothing recorded while the run waited"
    run_id = only_run_id(tmp_path)

    listed = json.loads(pipe("runs", "--json", cwd=tmp_path).stdout)[0]
    assert listed["status"] == "crashed" and listed["steps"] > 12 and listed["seconds"] > 0, listed
    shown = json.loads(pipe("show", run_id, "--json", cwd=tmp_path).stdout)
    assert shown["printed"] == ["total so far 66"] and shown["steps"] == listed["steps"]
    calls = [f"main/work#{k}" for k in range(1, 13)]
    assert shown["nodes"] == ["main"] + calls  # in call order: #2 before #10
    assert shown["interrupted"] == ["main"]  # the calls had returned; only main was cut short
    text = pipe("show", run_id, cwd=tmp_path).stdout
    assert "  main  [0 step(s)]  main  (interrupted)\n    work#1  [1 step(s)]  main/work#1\n" \
           "    work#2  [1 step(s)]  main/work#2\n" in text, text
    assert "work#12  [1 step(s)]  main/work#12\n" in text and "work#12  [1 step(s)]  main/work#12  (" not in text
    nodes = _tree(tmp_path, run_id)
    assert [nodes[path]["status"] for path in calls] == ["ok"] * 12 and nodes["main"]["status"] == "interrupted"


REPEAT = """use fs

pipeline main() -> str:
    fs.append("log.txt", "one\\n")
    print("after the first append")
    fs.append("log.txt", "two\\n")
    return "done"
"""


def test_a_resume_says_which_lines_a_killed_run_may_print_again(tmp_path):
    (tmp_path / "repeat.pipe").write_text(REPEAT, encoding="utf-8")
    killed = pipe("run", "repeat.pipe", cwd=tmp_path, exec_log_path=tmp_path / "exec.log",
                  kill_after="fs.append:2", timeout=120)
    assert killed.returncode == -9 and killed.stdout == "after the first append\n"
    run_id = only_run_id(tmp_path)
    resumed = pipe("resume", run_id, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    # The line came after the last checkpoint: the resume prints it again, and says so before it does.
    assert resumed.stdout == "after the first append\ndone\n"
    assert (f"pipe resume: run {run_id} was killed: lines it printed after step 1 (its last journaled step) are "
            "printed again (once in its recorded output)\n") in resumed.stderr
    assert json.loads(pipe("show", run_id, "--json", cwd=tmp_path).stdout)["printed"] == ["after the first append"]


PARALLEL_SLOW = """use fs, code

pipeline main() -> str:
    fs.append("log.txt", "before\\n")
    print("started")
    parallel:
        a = code.run("sh", "sleep 12; echo a", timeout=60)
        b = code.run("sh", "echo b", timeout=60)
    fs.append("log.txt", "after\\n")
    return a["stdout"] + b["stdout"]
"""


def test_a_run_killed_while_its_branches_wait_resumes_from_the_checkpoint_taken_in_the_wait(tmp_path):
    import subprocess
    import time

    from durable_testing import cli_command, cli_env, run_dirs

    (tmp_path / "par.pipe").write_text(PARALLEL_SLOW, encoding="utf-8")
    run = subprocess.Popen(cli_command("run", "par.pipe"), cwd=tmp_path, env=cli_env(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(300):  # bounded: until the wait's checkpoint holds the branches' state
            dirs = run_dirs(tmp_path)
            if dirs and _recorded_steps(dirs[0]) > 2:
                break
            time.sleep(0.1)
        run.kill()
        out, _ = run.communicate(timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == -9 and out == "started\n"
    run_id = only_run_id(tmp_path)
    # The calls in flight are issued again from that checkpoint: nothing before them is done or printed again.
    resumed = pipe("resume", run_id, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout == "a\nb\n\n"
    assert "lines it printed after its last checkpoint (statement " in resumed.stderr
    assert ", 1 printed line(s)) are printed again" in resumed.stderr  # "started" was saved: it is not among them
    assert (tmp_path / "log.txt").read_text(encoding="utf-8") == "before\nafter\n"
