"""Every agent takes its turn: before each model step the author and the reviewer read the scratchpad and the relevant
insights within their shares of the reading model's window, and after it the note their model wrote is stored under
the lock and the insights it offered go to independent review."""

from __future__ import annotations

import json

from cli_testing import pipe as run_pipe
from decompose_testing import GOOD, NO_CONCERNS, ONE_CONCERN, Recording, run_decomposed

from orgtree_lang.decompose.prompt import CONTEXT_SHARE
from orgtree_lang.decompose.protocol import plan_of
from orgtree_lang.decompose.store import ModuleStore
from orgtree_lang.memory.insights import InsightPool
from orgtree_lang.memory.scratchpad import Scratchpad
from orgtree_lang.memory.turn import SEED_HEADING
from orgtree_lang.models.scripted import ScriptedModel
from orgtree_lang.models.tokens import count_tokens, set_context_window

PARENT = '''use text

pipeline main(report: str) -> str:
    ambiguous classify(report: str) -> label: str:
        """Label the report: bug if it mentions a crash, else question."""
    return label
'''
WINDOW = 64_000
PAD_HEADINGS = ("## Scratchpad, earlier notes", "## Scratchpad, latest notes", "## Scratchpad, the notes most")
INSIGHT_HEADING = "## Insights relevant to:"
GUIDE_HEADING = "## Your note on the shared scratchpad"


def run(tmp_path, author_rules=None, reviewer_rules=None, **settings):
    author = Recording(tmp_path / "a.json", author_rules or [
        {"match": {"contains": "raised these concerns"}, "reply": GOOD + "\nc1: resolved: lower-cased"},
        {"reply": GOOD}], "author")
    # A window like today's models': 5% of it holds the newest notes verbatim.
    set_context_window(author.name, WINDOW)
    reviewer = Recording(tmp_path / "r.json", reviewer_rules or [{"replies": [ONE_CONCERN, NO_CONCERNS]}], "reviewer")
    set_context_window(reviewer.name, WINDOW)
    assert run_decomposed(tmp_path, PARENT, {"report": "It CRASHED"}, author, reviewer, file="triage.pipe",
                          **settings) == "bug"
    return author, reviewer


def notes(root):
    with Scratchpad.for_workspace(root) as pad:
        return pad.notes()


def seed_parts(system: str) -> dict[str, str]:
    """The seed of a system message cut at its headings: the pad, the insights and the guide to the note."""
    seed = system[system.index(SEED_HEADING):] if SEED_HEADING in system else system[system.index(GUIDE_HEADING):]
    starts = sorted((seed.index(h), h) for h in (*PAD_HEADINGS, INSIGHT_HEADING, GUIDE_HEADING) if h in seed)
    parts: dict[str, str] = {}
    for (start, heading), following in zip(starts, [*starts[1:], (len(seed), "")]):
        kind = "pad" if heading in PAD_HEADINGS else "insights" if heading == INSIGHT_HEADING else "guide"
        parts[kind] = parts.get(kind, "") + seed[start:following[0]].strip() + "\n\n"
    return {kind: text.strip() for kind, text in parts.items()}


def test_models_that_write_no_note_get_one_from_the_harness_in_lock_order(tmp_path):
    run(tmp_path)
    written = notes(tmp_path)
    assert [(n.agent, n.kind) for n in written] == [
        ("author of classify", "plan"), ("reviewer of classify", "plan"),
        ("author of classify", "plan_changed"), ("reviewer of classify", "plan_changed")]
    # Each note was written holding the lock, one turn each, in the order the lock was taken.
    turns = [n.turn for n in written]
    assert turns == sorted(turns) and len(set(turns)) == 4
    assert json.loads((tmp_path / ".orgtree" / "pad.lock").read_text())["turn"] == turns[-1]
    write, review, revise, again = written
    assert write.text == "write a module for block `classify`"
    assert review.text.startswith("review round 1 of triage.pipe:classify:")
    assert (revise.before, revise.now) == ("write a module for block `classify`",
                                           "revise the module for the reviewer's concerns: c1")
    assert f"read #{review.seq}" in revise.why
    assert again.before == review.text and again.now.startswith("review round 2 of")


def test_the_notes_on_the_pad_are_the_ones_the_models_wrote_and_are_taken_out_of_their_answers(tmp_path):
    first_note = "\n<note>\nplan: match crash in any letter case, so lower-case the report first\n</note>"
    changed = ("\n<note>\nbefore: keep the module as written\nwhy: #2 says `Crash` in capitals is missed\n"
               "now: lower-case the report before matching\n</note>")
    author, reviewer = run(tmp_path, [
        {"match": {"contains": "raised these concerns"}, "reply": GOOD + "\nc1: resolved: lower-cased" + changed},
        {"reply": GOOD + first_note}], [
        {"replies": [ONE_CONCERN + "\n<note>plan: check the crash rule against capitals</note>",
                     NO_CONCERNS + "\n<note>plan: check that the revision lower-cases</note>"]}])
    write, review, revise, again = notes(tmp_path)
    assert (write.kind, write.text) == ("plan", "match crash in any letter case, so lower-case the report first")
    assert review.text == "check the crash rule against capitals"
    assert (revise.kind, revise.before, revise.why, revise.now) == (
        "plan_changed", "keep the module as written", "#2 says `Crash` in capitals is missed",
        "lower-case the report before matching")
    assert again.text == "check that the revision lower-cases"
    # The answers as the decomposer read them: the module was saved without the note, the concerns parsed.
    (saved,) = ModuleStore(tmp_path).all()
    assert "<note>" not in saved.text and "text.lower(report)" in saved.body
    assert saved.provenance["concerns"].startswith("open 0, resolved 1")
    # The reviewer of round 2 read the author's plan change before it reviewed.
    assert "[#3 author of classify] plan changed. before: keep the module" in reviewer.requests[1][0].content


def test_every_prompt_keeps_the_shares_of_the_readers_window(tmp_path):
    """The request in 25% of the window, the pad in 15% (5% newest verbatim + 10% older summarized), the insights in
    10%: each counted with the reading model's tokenizer."""
    accept = tmp_path / "insight_reviewer.json"
    accept.write_text(json.dumps([{"reply": NO_CONCERNS}]))
    with InsightPool.for_workspace(tmp_path) as pool:
        for i in range(40):
            pool.add(f"Crash report {i}: reports arrive in any case (CRASH, Crashed); lower-case before matching. "
                     + "Triage keeps a history of every label it gave. " * 12, f"case {i} was mislabelled",
                     author="tester", tags=["triage"], reviewer=ScriptedModel.from_file(accept, role="reviewer"))
    with Scratchpad.for_workspace(tmp_path) as pad:
        for i in range(400):
            pad.note(f"agent {i % 3}", f"step {i}: sort the shelf of parts by colour and weight, then " * 3)
    (tmp_path / "orgtree.toml").write_text("[memory]\nvectors = false\n")
    author, reviewer = run(tmp_path)
    # The older notes are summarized by the author's model (its requests start "You write the summaries").
    asked = {id(r) for r in author.requests if r[0].content.startswith("You write the summaries")}
    assert asked
    author.requests = [r for r in author.requests if id(r) not in asked]
    for recording in (author, reviewer):
        for system, *_, request in recording.requests:
            parts = seed_parts(system.content)
            assert count_tokens(parts["pad"], recording.name) <= WINDOW * 0.15
            assert count_tokens(parts["insights"], recording.name) <= WINDOW * 0.10
            assert "crash report" in parts["insights"].lower()
    for system, request in author.requests[:1]:
        assert count_tokens(request.content, author.name) <= WINDOW * CONTEXT_SHARE
        # 400 notes do not fit 5%: the rest is summarized
        assert "## Scratchpad, earlier notes" in system.content, system.content[system.content.index(SEED_HEADING):][:3000]
        assert count_tokens(system.content + request.content, author.name) <= WINDOW


def test_an_older_note_more_relevant_than_the_newest_is_read_whole_instead(tmp_path):
    old = "Crash reports of the mobile app must be labelled bug even when the word is in capitals (CRASH)."
    with Scratchpad.for_workspace(tmp_path) as pad:
        pad.note("triage lead", old)
        for i in range(300):
            pad.note(f"agent {i % 3}", f"step {i}: sort the shelf of parts by colour and weight, then " * 3)
    (tmp_path / "orgtree.toml").write_text("[memory]\nvectors = false\n")
    author, _ = run(tmp_path)
    # Nothing was summarized: the focused read replaces the summary of the older notes.
    assert not any(r[0].content.startswith("You write the summaries") for r in author.requests)
    system = author.requests[0][0].content
    assert "## Scratchpad, the notes most relevant to: classify Label the report" in system
    assert f"[#1 triage lead] plan: {old}" in system and "## Scratchpad, latest notes" not in system
    assert count_tokens(seed_parts(system)["pad"], author.name) <= WINDOW * 0.15


def test_insights_an_agent_offers_join_the_pool_only_after_an_independent_review(tmp_path):
    offered = ('\n<insight tags="triage, case">\ntext: Crash reports come in capitals too; lower-case before matching.'
               '\nevidence: the reviewer found `Crash` missed in round 1\n</insight>'
               '\n<insight>\ntext: Every report is a bug.\nevidence: none\n</insight>')
    rejection = json.dumps({"summary": "unsupported", "concerns": [{
        "id": "c1", "severity": "blocking", "spec_basis": "1. Accurate", "evidence": "no evidence",
        "suggested_fix": "drop it"}]})
    run(tmp_path, [{"match": {"contains": "raised these concerns"},
                    "reply": GOOD + "\nc1: resolved: lower-cased" + offered},
                   {"reply": GOOD}],
        [{"match": {"contains": "Every report is a bug"}, "reply": rejection},
         {"match": {"contains": "insight/"}, "reply": NO_CONCERNS},
         {"replies": [ONE_CONCERN, NO_CONCERNS]}])
    with InsightPool.for_workspace(tmp_path) as pool:
        (active,) = pool.insights("active")
        (rejected,) = pool.insights("rejected")
        proposals = pool.proposals()
    assert active.text.startswith("Crash reports come in capitals") and active.tags == ["case", "triage"]
    assert active.author == "author of classify" and rejected.text == "Every report is a bug."
    assert all(p.reviewer_conversations and p.author_conversation not in p.reviewer_conversations for p in proposals)
    (saved,) = ModuleStore(tmp_path).all()
    assert "<insight" not in saved.text


def test_protocol_false_writes_no_note_and_seeds_nothing(tmp_path):
    author, reviewer = run(tmp_path, protocol=False)
    assert notes(tmp_path) == []
    assert not any(GUIDE_HEADING in m.content for messages in author.requests + reviewer.requests for m in messages)


def test_the_fallback_plan_names_the_step_from_the_request():
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
    assert [n.agent for n in notes(tmp_path)] == ["author of classify", "reviewer of classify", "author of decide",
                                                  "reviewer of decide"]
    # The nested block's author reads what the outer block's agents planned.
    (system, _), = [r for r in author.requests if "step `decide`" in r[-1].content]
    assert "[#1 author of classify] plan: write a module for block `classify`" in system.content


def test_a_durable_run_journals_each_turn_so_replay_writes_no_note_and_asks_no_model(tmp_path):
    (tmp_path / "triage.pipe").write_text(PARENT)
    (tmp_path / "author.json").write_text(json.dumps([
        {"reply": GOOD + "\n<note>plan: lower-case, then look for crash</note>"}]))
    (tmp_path / "reviewer.json").write_text(json.dumps([{"reply": NO_CONCERNS}]))
    env = {"PIPE_NO_PLUGINS": "1"}
    first = run_pipe("run", "triage.pipe", "-i", "report=crash", "--json", "--model", "scripted:author.json",
                     "--review-model", "scripted:reviewer.json", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    before = notes(tmp_path)
    # The author's, the reviewer's, and the output reviewer's of the new module's first run.
    assert [n.text for n in before][:1] == ["lower-case, then look for crash"] and len(before) == 3
    replayed = run_pipe("replay", json.loads(first.stdout)["run_id"], cwd=tmp_path, env=env)
    assert replayed.returncode == 0, replayed.stderr
    assert "0 outside call(s)" in replayed.stderr and "identical" in replayed.stderr
    assert notes(tmp_path) == before
