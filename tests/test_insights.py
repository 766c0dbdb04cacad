"""The insight pool: adding and removing insights both need an independent reviewer that accepts; rejections are kept."""

from __future__ import annotations

import json

import pytest
import yaml

from orgtree_lang.memory.insights import ADD_SPEC, REMOVE_SPEC, InsightError, InsightPool
from orgtree_lang.models.scripted import ScriptedModel
from orgtree_lang.review import ReviewError, SelfReviewError

pytestmark = pytest.mark.fast

ACCEPT = json.dumps({"concerns": [], "summary": "accurate and useful"})
WRONG = json.dumps({"concerns": [{"id": "c1", "severity": "blocking", "spec_basis": "1. Accurate",
                                  "evidence": "the benchmark shows the opposite", "suggested_fix": "drop the claim"}],
                    "summary": "contradicted by its evidence"})
KEEP = json.dumps({"concerns": [{"id": "k1", "severity": "blocking", "spec_basis": "the insight still holds",
                                 "evidence": "the cache is still 3x faster", "suggested_fix": "keep it"}]})
TEXT = "The summary cache is keyed by content hash, so re-running fit on unchanged text makes no model call."
EVIDENCE = "benchmarks/context.py: second fit of 5M tokens took 0 summarizer calls"


def reviewer(tmp_path, *replies, name="reviewer.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"rules": [{"role": "reviewer", "replies": list(replies)}]}))
    return ScriptedModel.from_file(path, role="reviewer")


@pytest.fixture
def pool(root):
    with InsightPool.for_workspace(root) as insights:
        yield insights


def test_an_insight_enters_the_pool_only_when_the_reviewer_accepts(pool, tmp_path):
    proposal = pool.propose_add(TEXT, EVIDENCE, author="planner", tags=["Cache", "fit"])
    assert pool.insights() == [] and pool.get(proposal.insight_id).status == "proposed"
    decided = pool.review(proposal.id, reviewer(tmp_path, ACCEPT))
    assert decided.status == "accepted" and decided.decision == "accurate and useful"
    [insight] = pool.insights()
    assert (insight.text, insight.author, insight.tags, insight.status) == (TEXT, "planner", ["cache", "fit"],
                                                                             "active")
    assert [e["event"] for e in insight.history] == ["proposed", "added"]
    # The review ran in a fresh conversation, recorded in the concern ledger next to the author's.
    [round_] = pool.ledger.rounds(decided.subject)
    assert round_["reviewer_conversation"] == decided.reviewer_conversations[0]
    assert round_["author_conversation"] == decided.author_conversation != round_["reviewer_conversation"]


def test_a_rejected_addition_is_kept_with_the_reviewers_reason(pool, tmp_path):
    decided = pool.add(TEXT, EVIDENCE, author="planner", reviewer=reviewer(tmp_path, WRONG))
    assert decided.status == "rejected"
    assert "the benchmark shows the opposite" in decided.decision and "1. Accurate" in decided.decision
    assert pool.insights() == []
    kept = pool.get(decided.insight_id)
    assert kept.status == "rejected" and kept.history[-1]["event"] == "add_rejected"
    assert pool.proposals("rejected") == [decided]
    assert pool.ledger.open_blocking(decided.subject)[0]["concern_id"] == "c1"


def test_removal_needs_an_accepting_reviewer_too(pool, tmp_path):
    added = pool.add(TEXT, EVIDENCE, author="planner", reviewer=reviewer(tmp_path, ACCEPT, name="a.yaml"))
    refused = pool.remove(added.insight_id, "caching is obvious", author="coder",
                          reviewer=reviewer(tmp_path, KEEP, name="b.yaml"))
    assert refused.status == "rejected" and "the cache is still 3x faster" in refused.decision
    assert [i.id for i in pool.insights()] == [added.insight_id]
    removed = pool.remove(added.insight_id, "the cache was deleted in v2", author="coder",
                          reviewer=reviewer(tmp_path, ACCEPT, name="c.yaml"))
    assert removed.status == "accepted" and pool.insights() == []
    insight = pool.get(added.insight_id)
    assert insight.status == "removed"
    assert [e["event"] for e in insight.history] == ["proposed", "added", "removal_proposed", "removal_rejected",
                                                     "removal_proposed", "removed"]


def test_the_reviewer_sees_the_insight_its_evidence_and_the_reason_for_removal(pool, tmp_path):
    model = reviewer(tmp_path, ACCEPT)
    seen = []
    original = model.complete

    def spy(messages, **kw):
        seen.append(messages[-1].content)
        return original(messages, **kw)

    model.complete = spy
    added = pool.add(TEXT, EVIDENCE, author="planner", reviewer=model)
    pool.remove(added.insight_id, "the cache was deleted in v2", author="coder", reviewer=model)
    assert ADD_SPEC.splitlines()[0] in seen[0] and TEXT in seen[0] and EVIDENCE in seen[0]
    assert REMOVE_SPEC.splitlines()[0] in seen[1] and "Reason for removal: the cache was deleted in v2" in seen[1]


def test_a_review_in_the_authors_own_conversation_is_refused_and_decides_nothing(pool, tmp_path):
    proposal = pool.propose_add(TEXT, EVIDENCE, author="planner", author_conversation="conv-planner")
    with pytest.raises(SelfReviewError, match="author"):
        pool.review(proposal.id, reviewer(tmp_path, ACCEPT), new_reviewer_conversation=lambda: "conv-planner")
    assert pool.proposal(proposal.id).status == "pending" and pool.insights() == []
    assert pool.ledger.rounds(proposal.subject) == []
    decided = pool.review(proposal.id, reviewer(tmp_path, ACCEPT, name="fresh.yaml"))
    assert decided.status == "accepted"


def test_a_self_reviewed_removal_is_refused_too(pool, tmp_path):
    added = pool.add(TEXT, EVIDENCE, author="planner", reviewer=reviewer(tmp_path, ACCEPT))
    proposal = pool.propose_remove(added.insight_id, "obsolete", author="coder", author_conversation="conv-coder")
    with pytest.raises(SelfReviewError):
        pool.review(proposal.id, reviewer(tmp_path, ACCEPT, name="r2.yaml"),
                    new_reviewer_conversation=lambda: "conv-coder")
    assert pool.get(added.insight_id).status == "active" and pool.proposal(proposal.id).status == "pending"


def test_a_reviewer_that_answers_garbage_decides_nothing(pool, tmp_path):
    proposal = pool.propose_add(TEXT, EVIDENCE, author="planner")
    with pytest.raises(ReviewError, match="malformed"):
        pool.review(proposal.id, reviewer(tmp_path, "not json"))
    assert pool.proposal(proposal.id).status == "pending"


def test_a_decided_proposal_cannot_be_reviewed_again(pool, tmp_path):
    decided = pool.add(TEXT, EVIDENCE, author="planner", reviewer=reviewer(tmp_path, WRONG))
    with pytest.raises(InsightError, match="already rejected"):
        pool.review(decided.id, reviewer(tmp_path, ACCEPT, name="again.yaml"))


def test_bad_proposals_are_refused_with_the_fix(pool, tmp_path):
    with pytest.raises(InsightError, match="needs its text and the evidence"):
        pool.propose_add(TEXT, "  ", author="planner")
    with pytest.raises(InsightError, match="no insight #7"):
        pool.propose_remove(7, "gone", author="coder")
    rejected = pool.add(TEXT, EVIDENCE, author="planner", reviewer=reviewer(tmp_path, WRONG))
    with pytest.raises(InsightError, match="is rejected, not active"):
        pool.propose_remove(rejected.insight_id, "gone", author="coder")
    added = pool.add(TEXT, EVIDENCE, author="planner", reviewer=reviewer(tmp_path, ACCEPT, name="ok.yaml"))
    pool.propose_remove(added.insight_id, "gone", author="coder")
    with pytest.raises(InsightError, match="already has pending proposal"):
        pool.propose_remove(added.insight_id, "gone twice", author="tester")
    with pytest.raises(InsightError, match="needs a reason"):
        pool.propose_remove(added.insight_id, "", author="coder")


def test_a_proposal_under_a_used_idempotency_key_is_neither_recorded_nor_reviewed_again(pool, tmp_path):
    first = pool.add(TEXT, EVIDENCE, author="planner", reviewer=reviewer(tmp_path, ACCEPT), key="run1:4")
    again = pool.add(TEXT, EVIDENCE, author="planner", reviewer=reviewer(tmp_path, WRONG, name="w.yaml"),
                     key="run1:4")
    assert again == first and again.status == "accepted"
    assert len(pool.proposals()) == 1 and len(pool.ledger.rounds(first.subject)) == 1
