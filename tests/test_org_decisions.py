"""One tree, and agents that decide what a message means (issue 24 items 1, 2, 6; docs/org.md "The node of a block"):
a generated child's `send parent` reaches the node of its block, whose agent (a scripted model here) ignores it,
answers the sender, forwards it up, routes it to a child, or re-plans; a bad decision is repaired once, then fails
at the sender's line; with no model the message goes to the pipeline's mailbox as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from decompose_testing import NO_CONCERNS, scripted, stdlib_registry

from orgtree_lang.compile.api import compile_source
from orgtree_lang.decompose.decomposer import Decomposer, DecomposeSettings
from orgtree_lang.memory.scratchpad import Scratchpad
from orgtree_lang.run.factory import plain_machine
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.skills import SkillContext
from orgtree_lang.runtime.workspace import Workspace

PROGRAM = '''pipeline main(text: str) -> str:
    ambiguous shout(text: str) -> loud: str:
        """Say the text loudly, in the case the reader wants."""
    return loud
'''
# The generated module asks its block's node a question and waits for the answer (or goes on without one).
ASKS = '''```pipe
pipeline main(text: str) -> str:
    send parent, "upper or title case?", topic="question"
    try:
        m = receive(timeout=1)
        return m.body + ": " + text
    except err:
        return "no answer: " + text
```'''
ASKS_V2 = '''```pipe
pipeline main(text: str) -> str:
    return "v2: " + text
```'''
# A module with a worker node: main tells its block's node about the work; the worker waits for what is routed to it.
WORKER = '''```pipe
pipeline worker() -> str:
    """Formats the text; takes formatting instructions by message."""
    m = receive(timeout=1)
    return "worker got " + m.body

pipeline main(text: str) -> str:
    w = spawn worker()
    send parent, "format it in bold"
    return await w
```'''


def decision(kind: str, **fields) -> str:
    return json.dumps({"kind": kind, "note": fields.pop("note", f"{kind} it"), **fields})


def models(folder: Path, module: str, decisions: list[str], v2: str = ASKS_V2):
    author = scripted(folder, "author", [
        {"match": {"contains": "New evidence from a run"}, "reply": v2},
        {"match": {"contains": "Write a module for the step"}, "reply": module},
        {"match": {"contains": "A message reached the node"}, "replies": decisions},
        {"match": {"contains": "cannot be carried out"}, "replies": decisions[1:] or decisions},
    ], "author")
    reviewer = scripted(folder, "reviewer", [{"reply": NO_CONCERNS}], "reviewer")
    return author, reviewer


def run(folder: Path, source: str, author, reviewer, **settings):
    registry = stdlib_registry()
    program = compile_source(source, "prog.pipe", registry).program
    decomposer = Decomposer(author=author, reviewer=reviewer, registry=registry, workspace=folder,
                            parent_file="prog.pipe", parent_source=source,
                            settings=DecomposeSettings(protocol=settings.pop("protocol", False), **settings))
    machine = plain_machine(program, registry=registry, context=SkillContext(Workspace(folder)),
                            resolver=decomposer)
    machine.start(None, {"text": "hi"})
    machine.run()
    return machine


def asked(author) -> list[str]:
    return [prompt for prompt in author.prompts if "A message reached the node" in prompt]


def edges(machine) -> list[tuple[str, str, str]]:
    return [(m["sender"], m["to"], m["topic"]) for m in machine.state.messages]


def test_an_answer_decision_reaches_the_sender_as_a_message(tmp_path: Path) -> None:
    author, reviewer = models(tmp_path, ASKS, [decision("answer", answer="UPPER")])
    machine = run(tmp_path, PROGRAM, author, reviewer)
    assert machine.state.result == "UPPER: hi"
    (prompt,) = asked(author)
    assert "upper or title case?" in prompt and "topic: question" in prompt
    block = next(m["to"] for m in machine.state.messages if m["topic"] == "question")
    assert block.startswith("main/shout@")
    assert edges(machine) == [(f"{block}/main", block, "question"), (block, f"{block}/main", "answer")]
    assert all(m["received"] is not None for m in machine.state.messages)


def test_an_ignore_decision_notes_why_on_the_scratchpad_and_the_sender_goes_on(tmp_path: Path) -> None:
    author, reviewer = models(tmp_path, ASKS, [decision("ignore", note="the case is the module's own choice")])
    machine = run(tmp_path, PROGRAM, author, reviewer)
    assert machine.state.result == "no answer: hi"
    with Scratchpad.for_workspace(tmp_path) as pad:
        notes = [n.render() for n in pad.notes(agent="message reader of shout")]
    assert any("the case is the module's own choice" in note for note in notes)


def test_a_forward_decision_at_the_top_of_the_run_goes_to_the_person(tmp_path: Path) -> None:
    author, reviewer = models(tmp_path, ASKS, [decision("forward", note="only the reader knows")])
    machine = run(tmp_path, PROGRAM, author, reviewer)
    assert machine.state.result == "no answer: hi"
    block = next(m["to"] for m in machine.state.messages if m["topic"] == "question")
    assert edges(machine)[-1] == (block, "human", "question")


def test_a_route_decision_passes_the_message_to_the_child_it_concerns(tmp_path: Path) -> None:
    author, reviewer = models(tmp_path, WORKER, [decision("route", child="main/worker#1")])
    machine = run(tmp_path, PROGRAM, author, reviewer)
    assert machine.state.result == "worker got format it in bold"
    (prompt,) = asked(author)
    assert "main/worker#1: pipeline worker: Formats the text" in prompt


def test_a_replan_decision_revises_the_module_and_runs_the_block_again(tmp_path: Path) -> None:
    author, reviewer = models(tmp_path, ASKS, [decision("replan", note="the case must be decided by the module")])
    machine = run(tmp_path, PROGRAM, author, reviewer)
    assert machine.state.result == "v2: hi"
    (rewrite,) = [p for p in author.prompts if "New evidence from a run" in p]
    assert "upper or title case?" in rewrite and "the case must be decided by the module" in rewrite
    saved = next((tmp_path / ".orgtree" / "modules").rglob("shout.pipe")).read_text()
    assert '"v2: "' in saved


def test_a_pipeline_with_an_on_message_handler_gets_the_childs_message_and_no_agent_is_asked(tmp_path: Path) -> None:
    source = '''pipeline main(text: str) -> str:
    heard = "nothing"
    on message m:
        heard = m.body
    ambiguous shout(text: str) -> loud: str:
        """Say the text loudly, in the case the reader wants."""
    return loud + " / " + heard
'''
    author, reviewer = models(tmp_path, ASKS, [decision("answer", answer="UPPER")])
    machine = run(tmp_path, source, author, reviewer)
    assert machine.state.result == "no answer: hi / upper or title case?"
    assert asked(author) == []


def test_a_bad_decision_is_repaired_once(tmp_path: Path) -> None:
    author, reviewer = models(tmp_path, ASKS, ["no idea", decision("answer", answer="Title")])
    machine = run(tmp_path, PROGRAM, author, reviewer)
    assert machine.state.result == "Title: hi"
    (repair,) = [p for p in author.prompts if "cannot be carried out" in p]
    assert "did not return valid JSON" in repair


def test_a_second_bad_decision_is_an_error_at_the_senders_line(tmp_path: Path) -> None:
    author, reviewer = models(tmp_path, ASKS, [decision("route", child="nobody"), decision("route", child="nobody")])
    with pytest.raises(PipeRuntimeError) as caught:
        run(tmp_path, PROGRAM, author, reviewer)
    err = caught.value
    assert "could not decide what the message from main means" in err.message
    assert "`child` must name one of your children (main), got 'nobody'" in err.message
    saved = next((tmp_path / ".orgtree" / "modules").rglob("shout.pipe"))
    send_line = next(i for i, line in enumerate(saved.read_text().splitlines(), 1) if "send parent" in line)
    assert (err.span.file, err.span.line) == (str(saved), send_line)


def test_with_no_model_the_message_goes_to_the_pipelines_mailbox_and_says_once_that_agents_are_off(
        tmp_path: Path, capsys) -> None:
    twice = PROGRAM.replace("    ambiguous", "    out = \"\"\n    for i in range(2):\n        ambiguous").replace(
        '        """Say', '            """Say').replace("    return loud", "        out = out + loud\n    return out")
    author, reviewer = models(tmp_path, ASKS, [decision("answer", answer="UPPER")])
    assert run(tmp_path, twice, author, reviewer).state.result == "UPPER: hiUPPER: hi"  # writes the module
    capsys.readouterr()
    machine = run(tmp_path, twice, None, None)
    assert machine.state.result == "no answer: hino answer: hi"
    assert [(m["to"], m["received"]) for m in machine.state.messages] == [("main", None), ("main", None)]
    err = capsys.readouterr().err
    assert err.count("run-time agents are off (no model configured)") == 1


def test_the_message_agent_of_orgtree_toml_decides_instead_of_the_author(tmp_path: Path) -> None:
    (tmp_path / "decider.json").write_text(json.dumps([{"reply": decision("answer", answer="Title")}]))
    (tmp_path / "orgtree.toml").write_text(f'[org]\nmessage_agent = "scripted:{tmp_path / "decider.json"}"\n')
    author, reviewer = models(tmp_path, ASKS, [decision("answer", answer="UPPER")])
    machine = run(tmp_path, PROGRAM, author, reviewer)
    assert machine.state.result == "Title: hi"
    assert asked(author) == []


def test_deciding_is_metered_against_the_run_trees_token_budget(tmp_path: Path) -> None:
    from orgtree_lang.vm.budget import Budget

    (tmp_path / "a").mkdir()
    author, reviewer = models(tmp_path / "a", ASKS, [decision("answer", answer="UPPER")])
    # Outputs not reviewed, so that the decision is the run's last model call.
    spent = run(tmp_path / "a", PROGRAM, author, reviewer, review_outputs="off").meter.tokens
    (tmp_path / "b").mkdir()
    author, reviewer = models(tmp_path / "b", ASKS, [decision("answer", answer="UPPER")])
    registry = stdlib_registry()
    program = compile_source(PROGRAM, "prog.pipe", registry).program
    decomposer = Decomposer(author=author, reviewer=reviewer, registry=registry, workspace=tmp_path / "b",
                            parent_file="prog.pipe", parent_source=PROGRAM,
                            settings=DecomposeSettings(protocol=False, review_outputs="off"))
    machine = plain_machine(program, registry=registry, context=SkillContext(Workspace(tmp_path / "b")),
                            resolver=decomposer, budget=Budget(max_tokens=spent - 1))
    machine.start(None, {"text": "hi"})
    with pytest.raises(PipeRuntimeError) as caught:  # the one token short is the decision's, the last call
        machine.run()
    assert caught.value.kind == "budget"
    assert "stopped after a call of" in caught.value.message
    assert "for deciding on a message to block `shout`" in caught.value.message


PARALLEL = '''pipeline main(text: str) -> str:
    heard = []
    on message m:
        heard = heard + [m.sender]
    parallel:
        ambiguous shout(text: str) -> loud: str:
            """Say the text loudly, in the case the reader wants."""
        ambiguous whisper(text: str) -> soft: str:
            """Say the text softly, in the case the reader wants."""
    return f"{loud} | {soft} | {len(heard)}"
'''


def test_blocks_resolved_concurrently_deliver_their_childrens_messages_with_their_outputs(tmp_path: Path) -> None:
    from orgtree_lang.run.runner import RunOptions, run_program

    author, reviewer = models(tmp_path, ASKS, [decision("answer", answer="UPPER")])
    registry = stdlib_registry()
    decomposer = Decomposer(author=author, reviewer=reviewer, registry=registry, workspace=tmp_path,
                            parent_file="par.pipe", parent_source=PARALLEL, settings=DecomposeSettings(protocol=False))
    options = RunOptions(printer=lambda line: None, durable=True, durability="process", executor="threads:4",
                         decomposer=decomposer, inputs={"text": "hi"})
    (tmp_path / "par.pipe").write_text(PARALLEL, encoding="utf-8")
    machine = run_program(compile_source(PARALLEL, "par.pipe", registry).program, tmp_path, registry, options,
                          source=PARALLEL, program_path=tmp_path / "par.pipe")
    # main reads messages (its handler), so each child's question reaches it, and no agent is asked.
    assert machine.state.result == "no answer: hi | no answer: hi | 2"
    assert asked(author) == []
    senders = [m["sender"] for m in machine.state.messages]
    assert [s.split("@")[0] for s in senders] == ["main/parallel#1.1/shout", "main/parallel#1.2/whisper"]
    assert all(m["to"] == "main" for m in machine.state.messages)


# A module with a block of its own: the inner block's module asks, the inner node forwards, the outer node decides.
OUTER = '''```pipe
pipeline main(text: str) -> str:
    ambiguous inner(text: str) -> done: str:
        """Say the text in the case the reader wants."""
    return "outer: " + done
```'''


def test_a_forward_from_a_nested_blocks_node_reaches_the_node_of_the_block_above(tmp_path: Path) -> None:
    author = scripted(tmp_path, "author", [
        {"match": {"contains": "Write a module for the step `shout`"}, "reply": OUTER},
        {"match": {"contains": "Write a module for the step `inner`"}, "reply": ASKS},
        {"match": {"contains": "A message reached the node of step `inner`"}, "reply": decision("forward")},
        {"match": {"contains": "A message reached the node of step `shout`"},
         "reply": decision("ignore", note="the outer step has no say in the case")},
    ], "author")
    reviewer = scripted(tmp_path, "reviewer", [{"reply": NO_CONCERNS}], "reviewer")
    (tmp_path / "orgtree.toml").write_text("[memory]\nvectors = false\n")  # reuse searches by keyword: no embedder
    machine = run(tmp_path, PROGRAM, author, reviewer)
    assert machine.state.result == "outer: no answer: hi"
    (outer,) = [p for p in author.prompts if "A message reached the node of step `shout`" in p]
    assert "upper or title case?" in outer and "from: main/inner@" in outer
    # The child's question to the inner node, then the inner node passing it to the outer node (which ignored it).
    (asked_inner, passed_up) = edges(machine)
    inner = asked_inner[1]
    assert inner.startswith("main/shout@") and "/main/inner@" in inner
    assert asked_inner == (f"{inner}/main", inner, "question")
    assert passed_up == (inner, inner.split("/main/inner@")[0], "question")


def test_re_plans_are_bounded_by_max_replans(tmp_path: Path) -> None:
    (tmp_path / "orgtree.toml").write_text("[org]\nmax_replans = 1\n")
    # The revised module asks again, and the node re-plans again: the second re-plan is one too many.
    author, reviewer = models(tmp_path, ASKS, [decision("replan")], v2=ASKS.replace("upper or title", "which"))
    with pytest.raises(PipeRuntimeError) as caught:
        run(tmp_path, PROGRAM, author, reviewer)
    assert "decided to re-plan" in caught.value.message
    assert "it re-planned 1 time(s) already ([org] max_replans)" in caught.value.message
    assert len([p for p in author.prompts if "New evidence from a run" in p]) == 1


def test_a_replan_is_a_repair_its_versions_kept_and_the_blocks_inputs_a_binding_case(tmp_path: Path) -> None:
    from orgtree_lang.decompose.versions import ModuleVersions

    author, reviewer = models(tmp_path, ASKS, [decision("replan", note="the module must choose the case")])
    assert run(tmp_path, PROGRAM, author, reviewer).state.result == "v2: hi"
    (rewrite,) = [p for p in author.prompts if "New evidence from a run" in p]
    # The repair request: the module as it was (version 1), the message and the node's reason, the inputs, and
    # those inputs as a case the revision must run on.
    assert "Version 1 of the module" in rewrite and "### The message" in rewrite
    assert "the module must choose the case" in rewrite and '- text = "hi"' in rewrite
    assert 'text = "hi" -> runs without an error and meets every expectation (run)' in rewrite
    saved = next((tmp_path / ".orgtree" / "modules").rglob("shout.pipe"))
    with ModuleVersions(tmp_path) as versions:
        rows = versions.history(saved)
    assert [(v.version, v.reason.split(":")[0]) for v in rows] == [(1, "written"), (2, "message")]
    assert "upper or title case?" in rows[1].reason and [c.source for c in rows[1].cases] == ["run"]
    text = saved.read_text()
    assert "repaired = version 2 after message:" in text and 'test "example 1 (run)"' in text


def test_a_replanned_run_replays_with_no_outside_call(tmp_path: Path) -> None:
    import os

    from cli_testing import pipe as run_pipe

    (tmp_path / "prog.pipe").write_text(PROGRAM)
    (tmp_path / "author.json").write_text(json.dumps([
        {"match": {"contains": "New evidence from a run"}, "reply": ASKS_V2},
        {"match": {"contains": "A message reached the node"}, "reply": decision("replan")},
        {"reply": ASKS}]))
    (tmp_path / "reviewer.json").write_text(json.dumps([{"reply": NO_CONCERNS}]))
    env = {"PIPE_NO_PLUGINS": "1", "PIPE_MODEL": None}
    models_args = ["--model", "scripted:author.json", "--review-model", "scripted:reviewer.json"]
    first = run_pipe("run", "prog.pipe", "-i", "text=hi", "--json", *models_args, cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["output"] == "v2: hi"
    os.remove(tmp_path / "author.json")  # a replay needs no model: none is there to ask
    replayed = run_pipe("replay", json.loads(first.stdout)["run_id"], cwd=tmp_path, env=env)
    assert replayed.returncode == 0, replayed.stderr
    assert "0 outside call(s)" in replayed.stderr and "identical" in replayed.stderr
