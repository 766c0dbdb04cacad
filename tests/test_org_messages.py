"""Messages between nodes through the `pipe` command: send/receive run, `pipe messages` lists them in order,
the trace has message.send/message.receive, and a replay is identical with no outside call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_testing import pipe as run_pipe

pytestmark = pytest.mark.fast

REPO = Path(__file__).resolve().parent.parent
SUPERVISOR = REPO / "tests" / "golden" / "messages" / "supervisor.pipe"
OUTPUT = ["worker got 1 from main on message", "worker got 2 from main on message",
          "worker got 3 from main on message", "worker done at 6", "main/worker#1", "6"]


def pipe(*args, cwd: Path):
    return run_pipe(*args, cwd=cwd, env={"PIPE_NO_PLUGINS": "1", "PIPE_MODEL": None})


def test_a_supervisor_and_its_worker_exchange_messages_listed_in_send_order(tmp_path: Path) -> None:
    program = tmp_path / "supervisor.pipe"
    program.write_text(SUPERVISOR.read_text())
    result = pipe("run", program, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == OUTPUT + ["0"]
    run = json.loads(pipe("runs", "--json", cwd=tmp_path).stdout)[0]["id"]

    listed = json.loads(pipe("messages", run, "--json", cwd=tmp_path).stdout)
    assert [(m["id"], m["sender"], m["to"], m["body"]) for m in listed] == [
        (1, "main", "main/worker#1", 1), (2, "main", "main/worker#1", 2), (3, "main", "main/worker#1", 3),
        (4, "main", "main/worker#1", "stop"), (5, "main/worker#1", "main", "worker done at 6")]
    assert all(m["received"] is not None and m["received"] > m["sent_at"] for m in listed)
    table = pipe("messages", run, cwd=tmp_path).stdout
    assert "main/worker#1        main" in table and '"worker done at 6"' in table

    events = [json.loads(line) for line in (tmp_path / ".orgtree" / "runs" / run / "trace.jsonl").read_text()
              .splitlines()]
    assert [e["message"] for e in events if e["event"] == "message.send"] == [1, 2, 3, 4, 5]
    assert [e["message"] for e in events if e["event"] == "message.receive"] == [1, 2, 3, 4, 5]

    replayed = pipe("replay", run, cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    assert "0 outside call(s)" in replayed.stderr and "identical" in replayed.stderr


def test_a_deadlock_is_an_error_that_says_where_each_node_waits(tmp_path: Path) -> None:
    program = tmp_path / "deadlock.pipe"
    program.write_text((REPO / "tests" / "golden" / "messages" / "deadlock.pipe").read_text())
    result = pipe("run", program, cwd=tmp_path)
    assert result.returncode == 70
    assert "(a deadlock): main waits in receive() at" in result.stderr
    assert "deadlock.pipe:8; main/waiter#1 waits in receive() at" in result.stderr


def test_a_run_with_no_messages_says_so(tmp_path: Path) -> None:
    program = tmp_path / "plain.pipe"
    program.write_text('pipeline main() -> str:\n    return "quiet"\n')
    pipe("run", program, cwd=tmp_path)
    run = json.loads(pipe("runs", "--json", cwd=tmp_path).stdout)[0]["id"]
    shown = pipe("messages", run, cwd=tmp_path)
    assert shown.returncode == 0 and "sent no messages" in shown.stderr


def test_the_supervisor_example_changes_the_workers_course_the_same_way_every_time(tmp_path: Path) -> None:
    example = REPO / "examples" / "org_supervisor.pipe"
    first = pipe("run", example, "--workspace", tmp_path, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    # The plan changes in the order it was sent, each time mid-loop, and "stop" ends the work before step 60.
    changes = [line for line in lines if "plan changed" in line]
    assert [c.split(" to ")[1].split(" after")[0] for c in changes] == ["polish", "stop"]
    assert changes[0].startswith("worker: plan changed from draft to polish")
    assert any(line.startswith("worker: polish, step") for line in lines)
    steps = int(lines[-1].split(" after ")[1].split()[0])
    assert lines[-1].startswith("stop after") and 0 < steps < 60
    assert pipe("run", example, "--workspace", tmp_path, cwd=tmp_path).stdout == first.stdout
    run = json.loads(pipe("runs", "--json", cwd=tmp_path).stdout)[0]["id"]
    events = [json.loads(line) for line in (tmp_path / ".orgtree" / "runs" / run / "trace.jsonl").read_text()
              .splitlines()]
    assert [e["message"] for e in events if e["event"] == "interrupt"] == [1, 2]
    replayed = pipe("replay", run, cwd=tmp_path)
    assert replayed.returncode == 0 and "identical" in replayed.stderr
