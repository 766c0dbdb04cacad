"""Values nested past the input limit (100 lists or dicts deep) that come into a run from outside: `pipe send`
refuses them with what it expected and what it got, the viewer's actions answer 400, and a run holding such a
message from an older version resumes without it (logged as undelivered), never with an internal error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_testing import pipe as run_pipe

from orgtree_lang.durable.inbound import INBOUND, queue_message
from orgtree_lang.runtime.errors import UsageError
from orgtree_lang.runtime.inputs import json_nesting_depth, nesting_depth

# Asks first, so a message can be queued while it waits; then takes one message (or none within a second).
LISTENER = '''pipeline main() -> str:
    ok = approve("listen?")
    try:
        m = receive(timeout=1)
        return f"got {len(m.body)}"
    except timeout:
        return "no message"
'''


def pipe(*args, cwd: Path):
    return run_pipe(*args, cwd=cwd, env={"PIPE_NO_PLUGINS": "1", "PIPE_MODEL": None})


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def waiting_run(workspace: Path) -> str:
    (workspace / "listen.pipe").write_text(LISTENER)
    started = pipe("run", "listen.pipe", cwd=workspace)
    assert started.returncode == 75, started.stderr
    runs = json.loads(pipe("runs", "--json", cwd=workspace).stdout)
    return runs[0]["id"]


def queued(workspace: Path, run: str) -> list[Path]:
    return sorted((workspace / ".orgtree" / "runs" / run / INBOUND).glob("*.json"))


def test_the_nesting_of_a_value_and_of_json_text_are_counted_alike() -> None:
    value = json.loads('{"a": [1, {"b": [[2]]}], "c": "[[[[not brackets]"}')
    text = json.dumps(value)
    assert nesting_depth(value) == json_nesting_depth(text) == 5
    assert json_nesting_depth('"\\"[[["') == 0 and nesting_depth("[[[") == 0
    assert json_nesting_depth(nested(5000)) == 5000


@pytest.mark.parametrize("depth", [101, 900, 5000])
def test_pipe_send_refuses_a_message_nested_too_deep_and_queues_nothing(tmp_path: Path, depth: int) -> None:
    run = waiting_run(tmp_path)
    sent = pipe("send", run, "--json", nested(depth), cwd=tmp_path)
    assert sent.returncode == 2, sent.stderr
    assert f"the message nests lists or dicts {depth} deep: expected at most 100 levels" in sent.stderr
    assert "Traceback" not in sent.stderr and "internal error" not in sent.stderr
    assert queued(tmp_path, run) == []


def test_a_message_at_the_limit_is_queued_and_taken(tmp_path: Path) -> None:
    run = waiting_run(tmp_path)
    assert pipe("send", run, "--json", f"[1, 2, {nested(98)}]", cwd=tmp_path).returncode == 0
    assert pipe("reply", run, "yes", cwd=tmp_path).returncode == 0
    resumed = pipe("resume", run, cwd=tmp_path)
    assert (resumed.returncode, resumed.stdout) == (0, "got 3\n"), resumed.stderr


def test_queueing_a_deep_message_from_python_is_refused(tmp_path: Path) -> None:
    body = []
    for _ in range(300):
        body = [body]
    with pytest.raises(UsageError, match="nests lists or dicts 302 deep: expected at most 100 levels"):
        queue_message(tmp_path, {"rows": body})
    assert not (tmp_path / INBOUND).exists()


@pytest.mark.parametrize("depth", [900, 5000])
def test_a_run_holding_a_deep_message_from_an_older_version_resumes_without_it(tmp_path: Path, depth: int) -> None:
    run = waiting_run(tmp_path)
    # What an older `pipe send` wrote (it checked no depth): the file format of durable/inbound.py.
    folder = tmp_path / ".orgtree" / "runs" / run / INBOUND
    folder.mkdir()
    (folder / "00000000000000000001-abcdef.json").write_text(
        '{"id": "00000000000000000001-abcdef", "to": null, "topic": null, "sent": 1.0, "body": '
        + nested(depth) + "}")
    assert pipe("reply", run, "yes", cwd=tmp_path).returncode == 0
    resumed = pipe("resume", run, cwd=tmp_path)
    assert "internal error" not in resumed.stderr and "Traceback" not in resumed.stderr
    assert (resumed.returncode, resumed.stdout) == (0, "no message\n"), resumed.stderr
    assert f"cannot be taken: its body nests lists or dicts {depth} deep: expected at most 100 levels" \
        in resumed.stderr
    messages = json.loads(pipe("messages", run, "--json", cwd=tmp_path).stdout)
    assert [(m["sender"], m["body"], m["undelivered"]) for m in messages] == [
        ("human", None, f"its body nests lists or dicts {depth} deep: expected at most 100 levels; "
                        "an older `pipe send` queued it")]
    assert queued(tmp_path, run) == []  # taken: no later resume meets it again
    replayed = pipe("replay", run, cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr


def test_a_viewer_action_nested_too_deep_is_a_clean_400_and_the_run_still_waits(tmp_path: Path) -> None:
    pytest.importorskip("starlette", reason="`pipe serve` needs the [viewer] extra")
    pytest.importorskip("uvicorn", reason="`pipe serve` needs the [viewer] extra")
    from viewer_testing import Server

    run = waiting_run(tmp_path)
    with Server(tmp_path, "--allow-actions") as server:
        headers = {"X-Pipe-Token": server.token, "Content-Type": "application/json"}
        deep = server.http.post(f"{server.url}actions/reply", headers=headers,
                                content=f'{{"run": "{run}", "text": {nested(5000)}}}')
        list_text = server.http.post(f"{server.url}actions/reply", headers=headers,
                                     content=json.dumps({"run": run, "text": ["yes"]}))
        resume = server.http.post(f"{server.url}actions/resume", headers=headers,
                                  content='{"run": ' + "[" * 900 + '"x"' + "]" * 900 + "}")
    assert deep.status_code == 400, deep.text
    assert deep.json()["message"].startswith("an action's body nests lists or dicts 5001 deep: expected at most 100")
    assert list_text.status_code == 400 and "field `text` is a text, got a list" in list_text.json()["message"]
    assert resume.status_code == 400 and "901 deep" in resume.json()["message"]
    shown = json.loads(pipe("show", run, "--json", cwd=tmp_path).stdout)
    assert shown["status"] == "waiting"
