"""Routes and notes through the `pipe` command: orgtree.toml's [org] routes, notes to the human node in
`pipe inbox` (posted once, whatever resumes and replays follow), and routed runs replayed exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_testing import pipe as run_pipe

pytestmark = pytest.mark.fast

ROUTED = '''route "audit"
route "billing" -> desk

pipeline desk(m: Message) -> none:
    print(f"desk: {m.body}")

pipeline strict_desk(m: Message) -> none:
    print(f"strict desk: {m.body} ({m.topic})")

pipeline auditor(m: Message, level: int = 2) -> none:
    print(f"audit level {level}: {m.body} from {m.sender}")

pipeline main() -> none:
    send "billing", "invoice 7"
    send "audit", "invoice 7 sent"
'''


def pipe(*args, cwd: Path):
    return run_pipe(*args, cwd=cwd, env={"PIPE_NO_PLUGINS": "1", "PIPE_MODEL": None})


def only_run(workspace: Path) -> str:
    runs = json.loads(pipe("runs", "--json", cwd=workspace).stdout)
    assert len(runs) == 1
    return runs[0]["id"]


def test_orgtree_toml_supplies_a_declared_route_and_overrides_a_module_route(tmp_path: Path) -> None:
    (tmp_path / "router.pipe").write_text(ROUTED)
    (tmp_path / "orgtree.toml").write_text('[org.routes]\naudit = "auditor"\nbilling = "strict_desk"\n')
    done = pipe("run", "router.pipe", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "strict desk: invoice 7 (billing)\naudit level 2: invoice 7 sent from main\n"


def test_a_declared_route_orgtree_toml_does_not_name_fails_at_the_send_listing_the_routes(tmp_path: Path) -> None:
    (tmp_path / "router.pipe").write_text(ROUTED)
    failed = pipe("run", "router.pipe", cwd=tmp_path)
    assert failed.returncode == 70
    assert failed.stdout == ""  # main fails at its second send, before the desk node had its turn
    assert 'route "audit" is declared without a pipeline' in failed.stderr
    assert 'known routes: "audit", "billing"' in failed.stderr
    assert "router.pipe:15" in failed.stderr  # the line of the send


def test_a_config_route_to_a_pipeline_that_cannot_take_a_message_is_an_error_at_the_send(tmp_path: Path) -> None:
    (tmp_path / "router.pipe").write_text(ROUTED + "\npipeline adder(a: int, b: int) -> int:\n    return a + b\n")
    (tmp_path / "orgtree.toml").write_text('[org.routes]\naudit = "adder"\n')
    failed = pipe("run", "router.pipe", cwd=tmp_path)
    assert failed.returncode == 70
    assert 'route "audit" -> adder: its first parameter `a: int` cannot take a Message' in failed.stderr
    (tmp_path / "orgtree.toml").write_text('[org.routes]\naudit = "nowhere"\n')
    failed = pipe("run", "router.pipe", cwd=tmp_path)
    assert 'route "audit" names pipeline `nowhere`, which this program does not have' in failed.stderr


def test_a_malformed_org_routes_table_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "router.pipe").write_text(ROUTED)
    (tmp_path / "orgtree.toml").write_text('[org.routes]\naudit = 3\n')
    failed = pipe("run", "router.pipe", cwd=tmp_path)
    assert failed.returncode == 2
    assert 'the route "audit" must name a pipeline, got 3' in failed.stderr


NOTES = '''route "work" -> worker

pipeline worker(m: Message) -> none:
    send "human", f"worker started on {m.body}", topic="progress"
    send parent, m.body * 2

pipeline main() -> int:
    send "human", "batch started"
    send "work", 21
    result = receive(timeout=5).body
    print(f"doubled: {result}")
    return result
'''


def test_notes_to_the_human_are_in_the_inbox_once_across_replays_and_can_be_marked_read(tmp_path: Path) -> None:
    (tmp_path / "notes.pipe").write_text(NOTES)
    done = pipe("run", "notes.pipe", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "doubled: 42\n42\n"
    run = only_run(tmp_path)
    inbox = json.loads(pipe("inbox", "--json", cwd=tmp_path).stdout)
    assert [(n["id"], n["run"], n["kind"], n["topic"], n["node"], n["text"]) for n in inbox] == [
        ("n1", run, "note", "note", "main", "batch started"),
        ("n2", run, "note", "progress", "main/worker#1", "worker started on 21")]
    listing = pipe("inbox", cwd=tmp_path).stdout
    assert "[progress] worker started on 21" in listing

    replayed = pipe("replay", run, cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    assert "0 outside call(s)" in replayed.stderr and "identical to the original run" in replayed.stderr
    assert len(json.loads(pipe("inbox", "--json", cwd=tmp_path).stdout)) == 2

    messages = json.loads(pipe("messages", run, "--json", cwd=tmp_path).stdout)
    assert [(m["sender"], m["to"], m["topic"], m["body"]) for m in messages] == [
        ("main", "human", "note", "batch started"), ("main", "main/worker#1", "work", 21),
        ("main/worker#1", "human", "progress", "worker started on 21"), ("main/worker#1", "main", "message", 42)]

    assert pipe("inbox", "--read", "n1", cwd=tmp_path).returncode == 0
    assert [n["id"] for n in json.loads(pipe("inbox", "--json", cwd=tmp_path).stdout)] == ["n2"]
    unknown = pipe("inbox", "--read", "n7", cwd=tmp_path)
    assert unknown.returncode == 2 and "no note 'n7'" in unknown.stderr
    assert pipe("inbox", "--read", "all", cwd=tmp_path).returncode == 0
    assert json.loads(pipe("inbox", "--json", cwd=tmp_path).stdout) == []
