"""Messages from outside a run: `pipe send` queues them, the run takes each when all its nodes wait, as a
journaled decision, and a resume or a replay takes the same ones at the same places (replay: 0 outside calls)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from cli_testing import pipe as run_pipe
from durable_testing import cli_command, cli_env, journal_meta, journal_steps

from orgtree_lang.durable.inbound import Inbound, queue_message
from orgtree_lang.durable.journal import Journal
from orgtree_lang.syntax.errors import EXIT_WAITING

LISTENER = '''route "billing" -> desk

pipeline desk(m: Message) -> none:
    print(f"desk got {m.body} ({m.topic} from {m.sender})")

pipeline main() -> int:
    taken = 0
    while true:
        m = receive(timeout=60)
        print(f"main got {m.body} ({m.topic} from {m.sender})")
        if m.body == "stop":
            return taken
        taken += 1
'''


def pipe(*args, cwd: Path):
    return run_pipe(*args, cwd=cwd, env={"PIPE_NO_PLUGINS": "1", "PIPE_MODEL": None})


def only_run(workspace: Path) -> str:
    runs = json.loads(pipe("runs", "--json", cwd=workspace).stdout)
    assert len(runs) == 1
    return runs[0]["id"]


def wait_for_run_folder(workspace: Path, proc: subprocess.Popen, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not list((workspace / ".orgtree" / "runs").glob("*/journal.db")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never started"
        time.sleep(0.1)


def test_a_running_program_takes_messages_sent_from_outside_and_its_replay_takes_the_same(tmp_path: Path) -> None:
    (tmp_path / "listen.pipe").write_text(LISTENER)
    proc = subprocess.Popen(cli_command("run", "listen.pipe"), cwd=tmp_path, env=cli_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_for_run_folder(tmp_path, proc)
        run = only_run(tmp_path)
        for args in (["hello"], ["--topic", "billing", "--json", '{"amount": 3}'], ["--to", "main/nobody", "x"],
                     ["stop"]):
            sent = pipe("send", run, *args, cwd=tmp_path)
            assert sent.returncode == 0, sent.stderr
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    # Queued messages are taken oldest first, one each time every node waits: the order cannot vary.
    assert out == ("main got hello (message from human)\n"
                   'desk got {"amount": 3} (billing from human)\n'
                   "main got stop (message from human)\n"
                   "1\n")
    messages = json.loads(pipe("messages", run, "--json", cwd=tmp_path).stdout)
    assert [(m["sender"], m["to"], m["topic"], m["body"], m.get("undelivered")) for m in messages] == [
        ("human", "main", "message", "hello", None), ("human", "main/desk#1", "billing", {"amount": 3}, None),
        ("human", "main/nobody", "message", "x", "no live node main/nobody"),
        ("human", "main", "message", "stop", None)]
    assert not list((tmp_path / ".orgtree" / "runs" / run / "inbound").glob("*.json"))  # all taken

    replayed = pipe("replay", run, cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    assert "0 outside call(s)" in replayed.stderr and "identical to the original run" in replayed.stderr
    assert replayed.stdout == out.removesuffix("1\n")  # the printed lines again (the result is in the report)


def test_a_run_killed_while_it_waits_takes_each_message_once_after_resume(tmp_path: Path) -> None:
    (tmp_path / "listen.pipe").write_text(LISTENER)
    proc = subprocess.Popen(cli_command("run", "listen.pipe"), cwd=tmp_path, env=cli_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        wait_for_run_folder(tmp_path, proc)
        run = only_run(tmp_path)
        run_dir = tmp_path / ".orgtree" / "runs" / run
        assert pipe("send", run, "one", cwd=tmp_path).returncode == 0
        deadline = time.monotonic() + 60
        while not [s for s in journal_steps(run_dir) if s["name"] == "message.outside"]:
            assert time.monotonic() < deadline and proc.poll() is None, "the message was never taken"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)  # while it waits for the next one
        proc.communicate()
    finally:
        proc.kill()
    assert pipe("send", run, "stop", cwd=tmp_path).returncode == 0
    resumed = pipe("resume", run, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    meta = journal_meta(run_dir)
    assert meta["status"] == "done" and meta["result"] == 1
    assert meta["output"] == ["main got one (message from human)", "main got stop (message from human)"]
    taken = [json.loads(s["result"])["body"] for s in journal_steps(run_dir) if s["name"] == "message.outside"]
    assert taken == ["one", "stop"]
    replayed = pipe("replay", run, cwd=tmp_path)
    assert "0 outside call(s)" in replayed.stderr and "identical to the original run" in replayed.stderr


ASKER = '''pipeline main() -> str:
    if not approve("listen for orders?"):
        return "not listening"
    got = []
    while true:
        try:
            m = receive(timeout=0.5)
        except err:
            return f"{err.kind} after {got}"
        got += [m.body]
'''


def test_messages_sent_to_a_stopped_run_are_taken_when_it_is_resumed(tmp_path: Path) -> None:
    (tmp_path / "asker.pipe").write_text(ASKER)
    waiting = pipe("run", "asker.pipe", cwd=tmp_path)
    assert waiting.returncode == EXIT_WAITING, waiting.stderr
    run = only_run(tmp_path)
    for text in ("first", "second"):
        sent = pipe("send", run, text, cwd=tmp_path)
        assert sent.returncode == 0 and f"pipe resume {run}" in sent.stderr, sent.stderr
    resumed = pipe("reply", "--resume", run, "yes", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout == "timeout after [\"first\", \"second\"]\n"

    # Each decision is a journal step: the two messages taken, then the timeout (nothing more came).
    journal = Journal.open(tmp_path / ".orgtree" / "runs" / run)
    try:
        decisions = [json.loads(s.result) for s in sorted(journal.steps().values(), key=lambda s: s.seq)
                     if s.name == "message.outside"]
    finally:
        journal.close()
    assert [d and d["body"] for d in decisions] == ["first", "second", None]

    replayed = pipe("replay", run, cwd=tmp_path)
    assert "0 outside call(s)" in replayed.stderr and "identical to the original run" in replayed.stderr

    finished = pipe("send", run, "too late", cwd=tmp_path)
    assert finished.returncode == 2 and "has finished" in finished.stderr


def test_a_message_already_journaled_is_not_taken_again_when_its_file_is_left_behind(tmp_path: Path) -> None:
    (tmp_path / "asker.pipe").write_text(ASKER)
    pipe("run", "asker.pipe", cwd=tmp_path)
    run = only_run(tmp_path)
    run_dir = tmp_path / ".orgtree" / "runs" / run
    taken = queue_message(run_dir, "once")
    pipe("reply", "--resume", run, "yes", cwd=tmp_path)
    # A crash between journaling the message and deleting its file leaves the file: put it back.
    (run_dir / "inbound" / f"{taken['id']}.json").write_text(json.dumps(taken))
    later = queue_message(run_dir, "new")
    journal = Journal.open(run_dir)
    try:
        inbound = Inbound(run_dir, journal)
        assert inbound.wait(0)["id"] == later["id"]
        inbound.done(later["id"])
        assert inbound.wait(0) is None
    finally:
        journal.close()


def test_a_run_without_a_journal_does_not_wait_for_outside_messages(tmp_path: Path) -> None:
    (tmp_path / "quiet.pipe").write_text('pipeline main() -> str:\n    try:\n        receive(timeout=30)\n'
                                         '    except err:\n        return err.kind\n    return "got one"\n')
    started = time.monotonic()
    done = pipe("run", "quiet.pipe", "--no-journal", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == "timeout\n", done.stderr
    assert time.monotonic() - started < 20  # nothing could come: the timeout fires at once


def test_a_durable_run_whose_only_node_waits_without_a_timeout_is_still_a_deadlock(tmp_path: Path) -> None:
    (tmp_path / "stuck.pipe").write_text("pipeline main() -> none:\n    receive()\n")
    failed = pipe("run", "stuck.pipe", cwd=tmp_path)
    assert failed.returncode == 70
    assert "deadlock" in failed.stderr and "main waits in receive() at stuck.pipe:2" in failed.stderr
