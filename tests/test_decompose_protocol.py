"""Every agent follows the protocol: before each model step the author and the reviewer take their turn on the
scratchpad, and their prompts are seeded with the pad and the relevant insights, within the prompt budget."""

from __future__ import annotations

import json

from decompose_testing import GOOD, NO_CONCERNS, ONE_CONCERN, Recording, run_decomposed

from orgtree_lang.decompose.protocol import SEED_HEADING, plan_of
from orgtree_lang.decompose.prompt import CONTEXT_SHARE
from orgtree_lang.memory.insights import InsightPool
from orgtree_lang.memory.scratchpad import Scratchpad
from orgtree_lang.models.scripted import ScriptedModel
from orgtree_lang.models.tokens import context_window, count_tokens, set_context_window

PARENT = '''use text

pipeline main(report: str) -> str:
    ambiguous classify(report: str) -> label: str:
        """Label the report: bug if it mentions a crash, else question."""
    return label
'''


def run(tmp_path, **settings):
    author = Recording(tmp_path / "a.json", [
        {"match": {"contains": "raised these concerns"}, "reply": GOOD + "\nc1: resolved: lower-cased"},
        {"reply": GOOD}], "author")
    # A window like today's models': 5% of the request's 25% holds the newest notes verbatim.
    set_context_window(author.name, 64_000)
    reviewer = Recording(tmp_path / "r.json", [{"replies": [ONE_CONCERN, NO_CONCERNS]}], "reviewer")
    assert run_decomposed(tmp_path, PARENT, {"report": "It CRASHED"}, author, reviewer, file="triage.pipe",
                          **settings) == "bug"
    return author, reviewer


def test_author_and_reviewer_write_their_notes_in_lock_order(tmp_path):
    run(tmp_path)
    with Scratchpad.for_workspace(tmp_path) as pad:
        notes = pad.notes()
    assert [(n.agent, n.kind) for n in notes] == [
        ("author of classify", "plan"), ("reviewer of classify", "plan"),
        ("author of classify", "plan_changed"), ("reviewer of classify", "plan_changed")]
    # Each note was written holding the lock, one turn each, in the order the lock was taken.
    turns = [n.turn for n in notes]
    assert turns == sorted(turns) and len(set(turns)) == 4
    assert json.loads((tmp_path / ".orgtree" / "pad.lock").read_text())["turn"] == turns[-1]
    write, review, revise, again = notes
    assert write.text == "write a module for block `classify`"
    assert review.text.startswith("review round 1 of triage.pipe:classify:")
    assert (revise.before, revise.now) == ("write a module for block `classify`",
                                           "revise the module for the reviewer's concerns: c1")
    assert f"read #{review.seq}" in revise.why
    assert again.before == review.text and again.now.startswith("review round 2 of")


def test_prompts_are_seeded_with_the_pad_and_the_relevant_insights_within_the_budget(tmp_path):
    accept = tmp_path / "insight_reviewer.json"
    accept.write_text(json.dumps([{"reply": NO_CONCERNS}]))
    with InsightPool.for_workspace(tmp_path) as pool:
        added = pool.add("Crash reports arrive in any case: CRASH, Crashed; lower-case the report before matching.",
                         "three reports were labelled question", author="tester", tags=["triage"],
                         reviewer=ScriptedModel.from_file(accept, role="reviewer"))
        assert added.status == "accepted"
    author, reviewer = run(tmp_path)
    system, first = author.requests[0]
    seed = system.content[system.content.index(SEED_HEADING):]
    assert "lower-case the report before matching" in seed
    assert "[#1 author of classify] plan: write a module for block `classify`" in seed
    # The request and the seed together stay within the request's share of the window.
    window = context_window(author.name)
    assert window == 64_000 and count_tokens(f"{seed}\n\n{first.content}", author.name) <= window * CONTEXT_SHARE
    # The reviewer of round 2 reads the author's plan change before it reviews.
    second_review = reviewer.requests[1][0].content
    assert "[#3 author of classify] plan changed. before: write a module" in second_review


def test_protocol_false_writes_no_note_and_seeds_nothing(tmp_path):
    author, reviewer = run(tmp_path, protocol=False)
    with Scratchpad.for_workspace(tmp_path) as pad:
        assert pad.notes() == []
    assert not any(SEED_HEADING in m.content for messages in author.requests + reviewer.requests for m in messages)


def test_the_plan_names_the_step_from_the_request():
    assert plan_of("Write a module for the step `parse`:\nSplit ...") == "write a module for block `parse`"
    assert plan_of("The module is not accepted yet:\nline 3: unknown name `x`\nReply ...") == \
        "repair the module: line 3: unknown name `x`"
    assert plan_of("Review round 2 of a.pipe:b:123:1.\n\n## Spec") == "review round 2 of a.pipe:b:123:1"
    assert plan_of("Label this please") == "answer: Label this please"


def test_the_agents_of_a_nested_block_take_their_turns_too(tmp_path):
    outer = '''```pipe
use text

pipeline main(report: str) -> str:
    ambiguous decide(report: str) -> label: str:
        """bug if the report mentions a crash in any case, else question."""
    return label
```'''
    author = Recording(tmp_path / "a.json", [{"match": {"contains": "step `classify`"}, "reply": outer},
                                            {"reply": GOOD}], "author")
    reviewer = Recording(tmp_path / "r.json", [{"reply": NO_CONCERNS}], "reviewer")
    assert run_decomposed(tmp_path, PARENT, {"report": "a Crash"}, author, reviewer, file="triage.pipe") == "bug"
    with Scratchpad.for_workspace(tmp_path) as pad:
        agents = [n.agent for n in pad.notes()]
    assert agents == ["author of classify", "reviewer of classify", "author of decide", "reviewer of decide"]
    # The nested block's author reads what the outer block's agents planned.
    (system, _), = [r for r in author.requests if "step `decide`" in r[-1].content]
    assert "[#1 author of classify] plan: write a module for block `classify`" in system.content
