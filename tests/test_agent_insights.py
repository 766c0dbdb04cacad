"""Every agent that calls a model takes its turn and may propose insights (issue 25 items 3 and 4): the code reviewer,
the output reviewer, the reuse reviewer, the escalation judge, the output coercer, the agent of a block's node, the bug
reviewer and the promotion tester each offer one in a structured part of their answer; it joins the pool only after
an independent review, and the answer is read without it. (The author: test_decompose_protocol.py; the research
agent: test_research_agent.py; the agent of a node outside blocks: test_org_route_meaning.py.)"""

from __future__ import annotations

import json

from decompose_testing import GOOD, NO_CONCERNS, ONE_CONCERN, run_decomposed, scripted, stdlib_registry
from test_org_decisions import ASKS, PROGRAM  # a block whose child asks its node a question

from orgtree_lang.compile.api import compile_source
from orgtree_lang.decompose.coerce import fit_outputs, model_reshaper
from orgtree_lang.decompose.spec import spec_hash
from orgtree_lang.decompose.store import ModuleStore
from orgtree_lang.memory.insights import InsightPool
from orgtree_lang.memory.scratchpad import Scratchpad
from orgtree_lang.memory.turn import agent_turns
from orgtree_lang.pool.bugs import review_bug
from orgtree_lang.pool.history import workspace_history
from orgtree_lang.pool.promote import promote
from orgtree_lang.run.registries import workspace_registry
from orgtree_lang.run.runner import RunOptions, run_program
from orgtree_lang.runtime.records import RecordTypes

PARENT = '''use text

pipeline main(report: str) -> str:
    ambiguous classify(report: str) -> label: str:
        """Label the report: bug if it mentions a crash, else question."""
    return label
'''


def offered(role: str) -> str:
    return (f'\n<insight tags="{role}">\ntext: Reports written by the {role} test mention crashes in lower case.\n'
            f"evidence: every report the {role} saw in this test\n</insight>")


def insight_review_first(rules: list[dict]) -> list[dict]:
    """The reviewer's rules, with the review of a proposed insight (subject insight/...) answered first."""
    return [{"match": {"contains": "insight/"}, "reply": NO_CONCERNS}, *rules]


def active_insights(tmp_path):
    with InsightPool.for_workspace(tmp_path) as pool:
        return pool.insights("active")


def reviewed_by(tmp_path) -> list[str]:
    """The model that decided each proposal, in order."""
    with InsightPool.for_workspace(tmp_path) as pool:
        return [p.reviewer_model for p in pool.proposals()]


def test_the_code_reviewer_may_propose_an_insight_which_the_author_model_reviews(tmp_path):
    # The reviewer's own insight goes to the block's other model (a fresh conversation of the author's), not to
    # the reviewer's model again: its rules answer no insight review.
    author = scripted(tmp_path, "a", insight_review_first([{"match": {"contains": "Write a module"}, "reply": GOOD}]),
                      "author")
    reviewer = scripted(tmp_path, "r", [{"match": {"contains": "insight/"}, "reply": "not json"},
                                        {"reply": NO_CONCERNS + offered("reviewer")}], "reviewer")
    assert run_decomposed(tmp_path, PARENT, {"report": "crash"}, author, reviewer, file="t.pipe") == "bug"
    (insight,) = active_insights(tmp_path)
    assert insight.author == "reviewer of classify" and insight.tags == ["reviewer"]
    assert set(reviewed_by(tmp_path)) == {author.name} != {reviewer.name}


def test_the_output_reviewer_may_propose_an_insight(tmp_path):
    author = scripted(tmp_path, "a", insight_review_first([{"match": {"contains": "Write a module"}, "reply": GOOD}]),
                      "author")
    reviewer = scripted(tmp_path, "r", [
        {"match": {"contains": "Output review of"}, "reply": NO_CONCERNS + offered("output reviewer")},
        {"reply": NO_CONCERNS}], "reviewer")
    assert run_decomposed(tmp_path, PARENT, {"report": "crash"}, author, reviewer, file="t.pipe",
                          review_outputs=True) == "bug"
    (insight,) = active_insights(tmp_path)
    assert insight.author == "output reviewer of classify"
    assert set(reviewed_by(tmp_path)) == {author.name}


def test_the_reuse_reviewer_may_propose_an_insight_and_its_verdict_still_parses(tmp_path):
    author = scripted(tmp_path, "a0", insight_review_first([{"match": {"contains": "Write a module"}, "reply": GOOD}]),
                      "author")
    reviewer = scripted(tmp_path, "r0", [{"reply": NO_CONCERNS}], "reviewer")
    run_decomposed(tmp_path, PARENT, {"report": "crash"}, author, reviewer, file="t.pipe")
    similar = PARENT.replace("classify", "triage_report").replace("else question", "else a question")
    accept = json.dumps({"accept": True, "reasons": "the same rule"})
    reviewer = scripted(tmp_path, "r1", [
        {"match": {"contains": "The new step"}, "reply": accept + offered("reuse reviewer")}], "reviewer")
    assert run_decomposed(tmp_path, similar, {"report": "crash"}, author, reviewer, file="u.pipe") == "bug"
    (insight,) = active_insights(tmp_path)
    assert insight.author == "reuse reviewer of triage_report"
    assert set(reviewed_by(tmp_path)) == {author.name}


def notes_of(tmp_path, agent: str) -> list:
    with Scratchpad.for_workspace(tmp_path) as pad:
        return pad.notes(agent=agent)


# ---- the escalation judge: the parent block's author ruling on a disagreement left after the last review round --

TRIAGE = PARENT.replace("classify", "outer")
# The module written for `outer` leaves its one step to a nested block: a disagreement there has a parent author.
OUTER = '''```pipe
use text

pipeline main(report: str) -> str:
    ambiguous decide(report: str) -> label: str:
        """bug if the report mentions a crash, else question."""
    return label
```'''
INNER = '''```pipe
use text

pipeline main(report: str) -> str:
    if text.contains(report, "crash"):
        return "bug"
    return "question"
```'''
DISMISS = json.dumps({"rulings": [{"id": "c1", "decision": "dismiss", "why": "lower case is all our mail has"}]})


def test_the_escalation_judge_takes_its_own_turn_and_may_propose_an_insight(tmp_path):
    author = scripted(tmp_path, "a", [
        {"match": {"contains": "still disagree"},
         "reply": DISMISS + "\n<note>\nplan: dismiss c1: I meant lower-case mail\n</note>" + offered("judge")},
        {"match": {"contains": "raised these concerns"}, "reply": INNER + "\nc1: rejected: the spec says crash"},
        {"match": {"contains": "step `decide`"}, "reply": INNER},
        {"match": {"contains": "step `outer`"}, "reply": OUTER}], "author")
    reviewer = scripted(tmp_path, "r", insight_review_first([
        {"match": {"contains": "step `outer`"}, "reply": NO_CONCERNS},
        {"match": {"contains": "step `decide`"}, "reply": ONE_CONCERN}]), "reviewer")
    assert run_decomposed(tmp_path, TRIAGE, {"report": "it crash"}, author, reviewer, max_review_rounds=1) == "bug"
    (ruled,) = author.asked("still disagree")
    # The judge read the pad as itself, not as the author of the block it judges.
    assert "You are escalation judge of decide." in ruled[0][0].content
    (note,) = notes_of(tmp_path, "escalation judge of decide")
    assert note.text == "dismiss c1: I meant lower-case mail"
    (insight,) = active_insights(tmp_path)
    assert insight.author == "escalation judge of decide" and insight.tags == ["judge"]


# ---- the output coercer: a child's output no exact rule fits the declared type is reshaped by a model -----------
# (The VM checks a module's return value and record fields against their types, so a module that passed validation
# never reaches the reshape: it is driven here as decomposer.run_child builds it, the model taking its turn.)


def test_the_output_coercer_takes_its_turn_and_its_reshape_is_read_without_its_note(tmp_path):
    source = """pipeline main() -> int:
    ambiguous count_words() -> total: int:
        \"\"\"Count.\"\"\"
    return total
"""
    program = compile_source(source, "c.pipe", stdlib_registry()).program
    spec, records = program.pipelines["main"].ambiguous[0], RecordTypes(program.records)
    model = scripted(tmp_path, "a", [{"match": {"contains": "Type: int"}, "reply": (
        "```json\n12\n```\n<note>\nplan: read the spelled number as 12\n</note>" + offered("coercer"))}], "author")
    reviewer = scripted(tmp_path, "r", [{"reply": NO_CONCERNS}], "reviewer")
    coercer = agent_turns(model, "output coercer of count_words", "count_words Count", tmp_path, reviewer=reviewer)
    assert fit_outputs({"total": "twelve"}, spec, records, model_reshaper(coercer, records, "c1")) == {"total": 12}
    (note,) = notes_of(tmp_path, "output coercer of count_words")
    assert note.text == "read the spelled number as 12"
    (insight,) = active_insights(tmp_path)
    assert insight.author == "output coercer of count_words"


# ---- the skill pool's agents: the bug reviewer and the promotion tester -------------------------------------------

SHOUT = '''use text

pipeline main(word: str) -> str:
    ambiguous shout(word: str) -> loud: str:
        """Return the word in capital letters followed by one exclamation mark."""
    return loud
'''
SHOUTED = 'use text\n\npipeline main(word: str) -> str:\n    return text.upper(word) + "!"\n'


def pool_agent(tmp_path, name: str, rules: list[dict]):
    """A scripted model for a pool agent that also reviews its insights (in a fresh conversation), as pipe skills
    does when no separate review model is given."""
    return scripted(tmp_path, name, insight_review_first(rules), "reviewer")


def test_the_bug_reviewer_may_propose_an_insight(root, tmp_path):
    program = ('use skills\n\npipeline main() -> int:\n    return skills.report_bug("json.parse", '
               '"read a config file", "a dict", "an error for a trailing comma")\n')
    (root / "report.pipe").write_text(program)
    registry = workspace_registry(root, plugins=False)
    compiled = compile_source(program, str(root / "report.pipe"), registry).program
    bug_id = run_program(compiled, root, registry, RunOptions(workspace=root, registry=registry, durable=True),
                         source=program, program_path=root / "report.pipe").state.result
    decision = json.dumps({"decision": "modify", "reasoning": "strict JSON", "usage_note": "no trailing commas"})
    reviewer = pool_agent(tmp_path, "bugs", [{"reply": decision + offered("bug reviewer")}])
    row = review_bug(root, bug_id, reviewer=reviewer, registry=registry, history=workspace_history(root))
    assert (row["decision"], row["outcome"]) == ("modify", "applied")
    (insight,) = active_insights(root)
    assert insight.author == "bug reviewer of json.parse" and insight.tags == ["bug reviewer"]
    assert len(reviewer.asked("insight/")) == 1


def test_the_promotion_tester_may_propose_an_insight(root, tmp_path):
    (root / "parent.pipe").write_text(SHOUT)
    registry = workspace_registry(root, plugins=False)
    spec = compile_source(SHOUT, str(root / "parent.pipe"), registry).program.pipelines["main"].ambiguous[0]
    saved = ModuleStore(root).save("parent.pipe", "shout", SHOUTED, {
        "block": "shout", "parent": "parent.pipe:4", "spec-hash": spec_hash(spec), "author-conversation": "a-1"},
        registry)
    plan = json.dumps({"cases": [{"inputs": {"word": "hi"}, "expect": "HI!"}]})
    verdict = json.dumps({"accepted": True, "reasons": "as specified", "cases": [{"case": 1, "ok": True}]})
    tester = pool_agent(tmp_path, "promoter", [
        {"match": {"contains": "The module ran on your cases"}, "reply": verdict + offered("promotion tester")},
        {"reply": plan}])
    assert promote(root, saved, reviewer=tester, registry=registry)["accepted"]
    (insight,) = active_insights(root)
    assert insight.author == "promotion tester of shout" and insight.tags == ["promotion tester"]


# ---- the agent of a block's node, answering a question its generated child asks --------------------------------


def test_the_agent_answering_a_childs_question_may_propose_an_insight(tmp_path):
    answer = json.dumps({"kind": "answer", "note": "readers want capitals", "answer": "UPPER"})
    author = scripted(tmp_path, "a", [
        {"match": {"contains": "A message reached the node"},
         "reply": answer + "\n<note>\nplan: answer UPPER\n</note>" + offered("message reader")},
        {"match": {"contains": "Write a module"}, "reply": ASKS}], "author")
    reviewer = scripted(tmp_path, "r", insight_review_first([{"reply": NO_CONCERNS}]), "reviewer")
    assert run_decomposed(tmp_path, PROGRAM, {"text": "hi"}, author, reviewer, file="s.pipe") == "UPPER: hi"
    assert [n.text for n in notes_of(tmp_path, "message reader of shout")] == ["answer UPPER"]
    (insight,) = active_insights(tmp_path)
    assert insight.author == "message reader of shout" and insight.tags == ["message reader"]
