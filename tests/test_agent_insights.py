"""Every agent of a block may propose insights (issue 25 item 4): the code reviewer, the output reviewer and the reuse
reviewer each offer one in a structured part of their answer; it joins the pool only after an independent review, and
the answer is read without it. (The author: test_decompose_protocol.py; the research agent: test_research_agent.py.)"""

from __future__ import annotations

import json

from decompose_testing import GOOD, NO_CONCERNS, run_decomposed, scripted

from orgtree_lang.memory.insights import InsightPool

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


def test_the_code_reviewer_may_propose_an_insight(tmp_path):
    author = scripted(tmp_path, "a", [{"match": {"contains": "Write a module"}, "reply": GOOD}], "author")
    reviewer = scripted(tmp_path, "r", insight_review_first([{"reply": NO_CONCERNS + offered("reviewer")}]),
                        "reviewer")
    assert run_decomposed(tmp_path, PARENT, {"report": "crash"}, author, reviewer, file="t.pipe") == "bug"
    (insight,) = active_insights(tmp_path)
    assert insight.author == "reviewer of classify" and insight.tags == ["reviewer"]


def test_the_output_reviewer_may_propose_an_insight(tmp_path):
    author = scripted(tmp_path, "a", [{"match": {"contains": "Write a module"}, "reply": GOOD}], "author")
    reviewer = scripted(tmp_path, "r", insight_review_first([
        {"match": {"contains": "Output review of"}, "reply": NO_CONCERNS + offered("output reviewer")},
        {"reply": NO_CONCERNS}]), "reviewer")
    assert run_decomposed(tmp_path, PARENT, {"report": "crash"}, author, reviewer, file="t.pipe",
                          review_outputs=True) == "bug"
    (insight,) = active_insights(tmp_path)
    assert insight.author == "output reviewer of classify"


def test_the_reuse_reviewer_may_propose_an_insight_and_its_verdict_still_parses(tmp_path):
    author = scripted(tmp_path, "a0", [{"match": {"contains": "Write a module"}, "reply": GOOD}], "author")
    reviewer = scripted(tmp_path, "r0", [{"reply": NO_CONCERNS}], "reviewer")
    run_decomposed(tmp_path, PARENT, {"report": "crash"}, author, reviewer, file="t.pipe")
    similar = PARENT.replace("classify", "triage_report").replace("else question", "else a question")
    accept = json.dumps({"accept": True, "reasons": "the same rule"})
    reviewer = scripted(tmp_path, "r1", insight_review_first([
        {"match": {"contains": "The new step"}, "reply": accept + offered("reuse reviewer")}]), "reviewer")
    assert run_decomposed(tmp_path, similar, {"report": "crash"}, author, reviewer, file="u.pipe") == "bug"
    (insight,) = active_insights(tmp_path)
    assert insight.author == "reuse reviewer of triage_report"
