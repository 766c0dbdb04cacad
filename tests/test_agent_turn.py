"""An agent's turn (memory/turn.py) outside the decomposer: the note and insights a model writes are taken out of its
answer and stored, the seed it reads holds the pad and the insights within their shares, and a model that writes no
note gets one from the harness."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from orgtree_lang.memory.insights import InsightPool
from orgtree_lang.memory.scratchpad import Scratchpad
from orgtree_lang.memory.turn import AgentNote, ProposedInsight, agent_turns, parse_answer
from orgtree_lang.models.base import Message, ModelError
from orgtree_lang.models.scripted import ScriptedModel
from orgtree_lang.models.tokens import count_tokens, set_context_window

ACCEPT = json.dumps({"concerns": [], "summary": "holds"})


class Verdict(BaseModel):
    label: str


def scripted(tmp_path, name, rules, role="author"):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(rules))
    return ScriptedModel.from_file(path, role=role)


def test_an_answer_is_split_into_its_text_its_last_note_and_its_insights():
    answer = parse_answer('{"label": "bug"}\n<note>\nplan: label it\n</note>\n<insight tags="triage, case">\n'
                          "text: Capitals hide crashes.\nevidence: report #7\n</insight>\n<note>\nbefore: label it\n"
                          "why: #4 says capitals matter\nnow: lower-case first\n</note>")
    assert answer.text == '{"label": "bug"}'
    assert answer.note == AgentNote("lower-case first", "label it", "#4 says capitals matter")
    assert answer.insights == (ProposedInsight("Capitals hide crashes.", "report #7", ("triage", "case")),)
    assert parse_answer("no note here").note is None
    # An insight without its evidence is not taken.
    assert parse_answer("x <insight>text: a claim</insight>").insights == ()


def test_a_model_writes_its_note_and_the_caller_reads_only_the_answer(tmp_path):
    model = scripted(tmp_path, "m", [{"reply": '{"label": "bug"}\n<note>plan: call it a bug: it crashed</note>'}])
    agent = agent_turns(model, "labeller", "label crash reports", tmp_path)
    done = agent.complete([Message("system", "Label."), Message("user", "It crashed")], schema=Verdict)
    assert done.parsed == Verdict(label="bug") and "<note>" not in done.text
    with Scratchpad.for_workspace(tmp_path) as pad:
        (note,) = pad.notes()
    assert (note.agent, note.kind, note.text) == ("labeller", "plan", "call it a bug: it crashed")
    # Its next turn reads its own note back.
    agent.complete([Message("user", "It crashed again")], schema=Verdict)
    assert "Your own last note: [#1 labeller] plan: call it a bug" in agent.last_read["seed"]


def test_a_model_that_writes_no_note_gets_the_harness_plan(tmp_path):
    agent = agent_turns(scripted(tmp_path, "m", [{"reply": "bug"}]), "labeller", "label reports", tmp_path)
    assert agent.complete([Message("user", "Label this crash report")]).text == "bug"
    with Scratchpad.for_workspace(tmp_path) as pad:
        (note,) = pad.notes()
    assert note.text == "answer: Label this crash report"


def test_an_answer_that_is_only_a_note_is_an_empty_answer(tmp_path):
    agent = agent_turns(scripted(tmp_path, "m", [{"reply": "<note>plan: think</note>"}]), "a", "t", tmp_path)
    with pytest.raises(ModelError, match="answered only its scratchpad note") as err:
        agent.complete([Message("user", "Label it")])
    assert err.value.kind == "empty"


def test_offered_insights_are_reviewed_by_the_agents_reviewer_in_a_fresh_conversation(tmp_path):
    model = scripted(tmp_path, "m", [{"reply": "bug\n<insight>\ntext: Capitals hide crash reports from a "
                                               "case-sensitive match.\nevidence: report 7 said CRASH\n</insight>"}])
    reviewer = scripted(tmp_path, "r", [{"reply": ACCEPT}], "reviewer")
    agent = agent_turns(model, "labeller", "label reports", tmp_path, reviewer=reviewer)
    agent.complete([Message("user", "Label it")], conversation_id="labeller-1")
    with InsightPool.for_workspace(tmp_path) as pool:
        (insight,) = pool.insights("active")
        (proposal,) = pool.proposals()
    assert insight.author == "labeller" and insight.evidence == "report 7 said CRASH"
    assert proposal.author_conversation == "labeller-1" and "labeller-1" not in proposal.reviewer_conversations
    # Without a reviewer, nothing offered is taken: no insight joins the pool unreviewed.
    agent_turns(model, "other", "label", tmp_path / "none").complete([Message("user", "Label it")])
    with InsightPool.for_workspace(tmp_path / "none") as pool:
        assert pool.proposals() == []


def test_the_seed_keeps_the_pad_and_the_insights_within_their_shares(tmp_path):
    model = scripted(tmp_path, "m", [{"reply": "ok"}])
    set_context_window(model.name, 16_000)
    reviewer = scripted(tmp_path, "r", [{"reply": ACCEPT}], "reviewer")
    with InsightPool.for_workspace(tmp_path) as pool:
        for i in range(30):
            pool.add(f"Shelf {i} holds the red parts; weigh them first. " * 8, f"count {i}", author="t",
                     reviewer=reviewer)
    with Scratchpad.for_workspace(tmp_path) as pad:
        for i in range(200):
            pad.note(f"agent {i % 2}", f"weigh shelf {i} and record the red parts " * 4)
    (tmp_path / "orgtree.toml").write_text('[memory]\nvectors = false\nsummarizer = "extractive"\n')
    agent = agent_turns(model, "weigher", "weigh the red parts of the shelves", tmp_path)
    agent.complete([Message("user", "Weigh shelf 3")])
    read = agent.last_read
    assert read["pad_tokens"] <= 16_000 * 0.15 and read["insight_tokens"] <= 16_000 * 0.10
    assert 0 < count_tokens(read["seed"], model.name) <= 16_000 * 0.25 + 400
