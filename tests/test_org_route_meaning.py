"""A `send` to a topic no route declares is routed by meaning (issue 24 item 2; docs/org.md "Routes and topics"): the
organization's agent (a scripted model here) picks among the declared routes by their pipelines' docstrings; the pick
is a journaled step, so a replay asks no model; a bad pick is repaired once, then the send fails at its line; with no
model configured the send fails as before and says that run-time agents are off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from durable_testing import only_run_id, pipe

ROUTER = '''route "billing" -> billing_desk
route "support" -> support_desk

pipeline billing_desk(m: Message) -> none:
    """Handles invoices, refunds and payments."""
    print(f"billing: {m.body} ({m.topic})")

pipeline support_desk(m: Message) -> none:
    """Handles bugs, crashes and how-to questions."""
    print(f"support: {m.body} ({m.topic})")

pipeline main(kind: str) -> str:
    send kind, "my card was charged twice"
    return "sent"
'''


def setup(folder: Path, replies: list[str]) -> list[str]:
    (folder / "router.pipe").write_text(ROUTER, encoding="utf-8")
    rules = [{"match": {"contains": "Which route?"}, "replies": replies},
             {"match": {"contains": "cannot be used"}, "replies": replies[1:] or replies}]
    (folder / "rules.json").write_text(json.dumps(rules), encoding="utf-8")
    return ["--model", f"scripted:{folder / 'rules.json'}"]


def test_a_send_to_an_unknown_topic_reaches_the_route_the_agent_picks_and_replay_asks_no_model(tmp_path: Path) -> None:
    models = setup(tmp_path, [json.dumps({"topic": "billing", "why": "a double charge is a payment matter"})])
    ran = pipe("run", "router.pipe", "-i", "kind=payments", *models, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == ["billing: my card was charged twice (payments)", "sent"]
    run_id = only_run_id(tmp_path)
    (tmp_path / "rules.json").write_text("[]", encoding="utf-8")  # a replay that asked would find no answer
    replayed = pipe("replay", run_id, cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    assert "0 outside call(s)" in replayed.stderr and "identical" in replayed.stderr
    tree = pipe("tree", run_id, cwd=tmp_path)
    (line,) = [line for line in tree.stdout.splitlines() if "  decision  " in line]
    assert "to billing: a double charge is a payment matter" in line and "tokens" in line


def test_an_agent_that_picks_no_route_leaves_the_send_an_error(tmp_path: Path) -> None:
    models = setup(tmp_path, [json.dumps({"topic": "none", "why": "nothing fits"})])
    ran = pipe("run", "router.pipe", "-i", "kind=weather", *models, cwd=tmp_path)
    assert ran.returncode == 70
    assert 'no route for topic "weather" (known routes: "billing", "support")' in ran.stderr


def test_a_bad_pick_is_repaired_once_then_the_send_fails_at_its_line(tmp_path: Path) -> None:
    models = setup(tmp_path, ['{"topic": "sales"}', json.dumps({"topic": "support", "why": "a question"})])
    ran = pipe("run", "router.pipe", "-i", "kind=help", *models, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines()[0] == "support: my card was charged twice (help)"
    (tmp_path / "again").mkdir()
    models = setup(tmp_path / "again", ['{"topic": "sales"}', '{"topic": "sales"}'])
    failed = pipe("run", "router.pipe", "-i", "kind=help", *models, cwd=tmp_path / "again")
    assert failed.returncode == 70
    assert "the agent's answer cannot be used: `topic` must be one of billing, support or none, got 'sales'" \
        in failed.stderr
    assert "router.pipe:13" in failed.stderr  # the send's line


def test_with_no_model_the_send_fails_as_before_and_says_agents_are_off(tmp_path: Path) -> None:
    setup(tmp_path, [])
    ran = pipe("run", "router.pipe", "-i", "kind=payments", cwd=tmp_path)
    assert ran.returncode == 70
    assert 'no route for topic "payments"' in ran.stderr
    assert "run-time agents are off, no model configured" in ran.stderr


# ---- a node whose pipeline reads no messages: the organization's agent reads them (docs/org.md) ------------------

SUPERVISED = '''pipeline worker(n: int) -> str:
    """Counts up to n and reports."""
    send parent, "should I count in twos?", topic="question"
    try:
        m = receive(timeout=1)
        return "worker got: " + m.body
    except err:
        return "worker got no answer"

pipeline main() -> str:
    w = spawn worker(3)
    return await w
'''


def supervised(folder: Path, decision: dict) -> list[str]:
    (folder / "sup.pipe").write_text(SUPERVISED, encoding="utf-8")
    rules = [{"match": {"contains": "A message reached the node `main`"}, "reply": json.dumps(decision)}]
    (folder / "rules.json").write_text(json.dumps(rules), encoding="utf-8")
    return ["--model", f"scripted:{folder / 'rules.json'}"]


def test_a_message_to_a_pipeline_that_reads_none_is_answered_by_its_agent_and_replay_asks_no_model(
        tmp_path: Path) -> None:
    models = supervised(tmp_path, {"kind": "answer", "note": "twos are faster", "answer": "yes, in twos"})
    ran = pipe("run", "sup.pipe", *models, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "worker got: yes, in twos"
    run_id = only_run_id(tmp_path)
    shown = pipe("messages", run_id, "--json", cwd=tmp_path)
    assert [(m["sender"], m["to"], m["topic"]) for m in json.loads(shown.stdout)] == [
        ("main/worker#1", "main", "question"), ("main", "main/worker#1", "answer")]
    (tmp_path / "rules.json").write_text("[]", encoding="utf-8")
    replayed = pipe("replay", run_id, cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    assert "0 outside call(s)" in replayed.stderr and "identical" in replayed.stderr


def test_a_forward_from_the_top_pipeline_reaches_the_person(tmp_path: Path) -> None:
    models = supervised(tmp_path, {"kind": "forward", "note": "only a person knows"})
    ran = pipe("run", "sup.pipe", *models, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "worker got no answer"
    inbox = pipe("inbox", cwd=tmp_path)
    assert "should I count in twos?" in inbox.stdout and "[question]" in inbox.stdout


def test_with_no_model_a_message_to_a_pipeline_that_reads_none_waits_in_its_mailbox(tmp_path: Path) -> None:
    supervised(tmp_path, {"kind": "ignore"})
    ran = pipe("run", "sup.pipe", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "worker got no answer"
    shown = pipe("messages", only_run_id(tmp_path), "--json", cwd=tmp_path)
    assert [(m["to"], m["received"]) for m in json.loads(shown.stdout)] == [("main", None)]


def test_the_viewer_shows_the_decision_node_and_the_edges_it_made(tmp_path: Path) -> None:
    pytest.importorskip("starlette", reason="`pipe serve` needs the [viewer] extra")
    pytest.importorskip("uvicorn", reason="`pipe serve` needs the [viewer] extra")
    from viewer_testing import Server

    models = supervised(tmp_path, {"kind": "answer", "note": "twos are faster", "answer": "yes, in twos"})
    assert pipe("run", "sup.pipe", *models, cwd=tmp_path).returncode == 0
    run_id = only_run_id(tmp_path)
    with Server(tmp_path) as server:
        page = server.http.get(f"{server.url}runs/{run_id}").text
    assert f'data-node="{run_id}/main/decision#' in page and '<span class="kind">decision</span>' in page
    worker = page.split(f'data-node="{run_id}/main/worker#1"', 1)[1].split("</li>", 1)[0]
    assert "→ main &quot;should I count in twos?&quot;" in worker
    main = page.split(f'data-node="{run_id}/main"', 1)[1].split("</li>", 1)[0]
    assert "→ main/worker#1 &quot;yes, in twos&quot;" in main



def test_the_router_takes_its_turn_on_the_scratchpad_and_a_replay_writes_no_second_note(tmp_path: Path) -> None:
    from orgtree_lang.memory.scratchpad import Scratchpad

    pick = json.dumps({"topic": "billing", "why": "a double charge"})
    models = setup(tmp_path, [pick + "\n<note>\nplan: send the double charge to billing\n</note>"])
    ran = pipe("run", "router.pipe", "-i", "kind=payments", *models, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines()[0] == "billing: my card was charged twice (payments)"  # the note was taken out
    assert pipe("replay", only_run_id(tmp_path), cwd=tmp_path).returncode == 0
    with Scratchpad.for_workspace(tmp_path) as pad:
        (note,) = pad.notes(agent="message router")
    assert note.text == "send the double charge to billing"


def test_the_agent_answering_a_question_takes_its_turn_and_its_insight_is_reviewed(tmp_path: Path) -> None:
    from orgtree_lang.memory.insights import InsightPool
    from orgtree_lang.memory.scratchpad import Scratchpad

    answer = json.dumps({"kind": "answer", "note": "twos are faster", "answer": "yes, in twos"})
    offered = ('\n<note>\nplan: tell the worker to count in twos\n</note>\n<insight tags="counting">\n'
               "text: Workers of sup.pipe ask before counting.\nevidence: the worker's question\n</insight>")
    models = supervised(tmp_path, {})
    rules = [{"match": {"contains": "insight/"}, "reply": json.dumps({"concerns": [], "summary": "supported"})},
             {"match": {"contains": "A message reached the node `main`"}, "reply": answer + offered}]
    (tmp_path / "rules.json").write_text(json.dumps(rules), encoding="utf-8")
    ran = pipe("run", "sup.pipe", *models, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "worker got: yes, in twos"
    with Scratchpad.for_workspace(tmp_path) as pad:
        (note,) = pad.notes(agent="node main")
    assert note.text == "tell the worker to count in twos"
    with InsightPool.for_workspace(tmp_path) as pool:
        (insight,) = pool.insights("active")
    assert insight.author == "node main" and insight.tags == ["counting"]
