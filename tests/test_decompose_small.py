"""Small pipelines and escalation: a long pipeline is sent back to be split; a review disagreement left after the
last round goes to the parent block's author, then to the human node, and only then fails the block."""

from __future__ import annotations

import json

import pytest
from decompose_testing import NO_CONCERNS, ONE_CONCERN, Recording, run_decomposed

from orgtree_lang.decompose.attempts import AttemptLog
from orgtree_lang.decompose.decomposer import LANGUAGE_NOTES, DecomposeSettings
from orgtree_lang.decompose.store import ModuleStore
from orgtree_lang.review.ledger import ConcernLedger
from orgtree_lang.runtime.errors import PipeRuntimeError

pytestmark = pytest.mark.fast


# ---- small pipelines ------------------------------------------------------------

SCORE = '''pipeline main(xs: list[int]) -> int:
    ambiguous score(xs: list[int]) -> total: int:
        """Add 1 for every number above 10, then 2 for every even one, then the first number, twenty times over."""
    return total
'''


def long_module(statements: int) -> str:
    """A `main` of exactly `statements` statements."""
    body = ["    total = 0"] + [f"    total += {i}" for i in range(1, statements - 1)] + ["    return total"]
    return "```pipe\npipeline main(xs: list[int]) -> int:\n" + "\n".join(body) + "\n```"


SPLIT = '''```pipe
pipeline main(xs: list[int]) -> int:
    return first_half() + second_half()

pipeline first_half() -> int:
    total = 0
    for i in range(1, 20):
        total += i
    return total

pipeline second_half() -> int:
    total = 0
    for i in range(20, 39):
        total += i
    return total
```'''


def test_the_author_is_asked_for_pipelines_of_about_ten_statements():
    assert "about 10 statements" in LANGUAGE_NOTES and "helper pipelines" in LANGUAGE_NOTES


def test_a_40_statement_answer_is_sent_back_and_repaired_into_sub_pipelines(tmp_path):
    author = Recording(tmp_path / "a.json", [
        {"match": {"contains": "not accepted yet"}, "reply": SPLIT},
        {"match": {"contains": "step `score`"}, "reply": long_module(40)}], "author")
    reviewer = Recording(tmp_path / "r.json", [{"reply": NO_CONCERNS}], "reviewer")
    assert run_decomposed(tmp_path, SCORE, {"xs": [1]}, author, reviewer) == sum(range(1, 39))
    (repair, _), = author.asked("not accepted yet")
    assert "pipeline `main` has 40 statements, more than the 15" in repair[-1].content
    assert "[decompose] max_statements" in repair[-1].content
    saved = ModuleStore(tmp_path).read(ModuleStore(tmp_path).path_for("prog.pipe", "score"))
    assert "pipeline first_half() -> int:" in saved.body and "total += 37" not in saved.body
    log = AttemptLog(tmp_path)
    first, second = log.for_spec(saved.provenance["spec-hash"])
    log.close()
    assert not first["accepted"] and second["accepted"]


def test_nested_statements_count_and_fifteen_are_allowed(tmp_path):
    # 15 statements, five of them inside a `for`: exactly at the default limit, accepted at once.
    body = ["    total = 0", "    for x in xs:"] + [f"        total += {i}" for i in range(5)] + [
        f"    total += {i}" for i in range(7)] + ["    return total"]
    module = "```pipe\npipeline main(xs: list[int]) -> int:\n" + "\n".join(body) + "\n```"
    author = Recording(tmp_path / "a.json", [{"reply": module}], "author")
    reviewer = Recording(tmp_path / "r.json", [{"reply": NO_CONCERNS}], "reviewer")
    assert run_decomposed(tmp_path, SCORE, {"xs": [1, 2]}, author, reviewer) == 2 * 10 + 21
    assert len(author.requests) == 1
    # One statement more, nested too, is over it.
    longer = module.replace("        total += 4", "        total += 4\n        total += 5")
    (tmp_path / "other").mkdir()
    author = Recording(tmp_path / "a2.json", [{"reply": longer}], "author")
    with pytest.raises(PipeRuntimeError, match="has 16 statements, more than the 15"):
        run_decomposed(tmp_path / "other", SCORE, {"xs": [1]}, author, reviewer, max_repairs=0)


def test_max_statements_comes_from_orgtree_toml(tmp_path):
    (tmp_path / "orgtree.toml").write_text("[decompose]\nmax_statements = 50\n")
    settings = DecomposeSettings.from_config(tmp_path / "orgtree.toml")
    assert settings.max_statements == 50
    author = Recording(tmp_path / "a.json", [{"reply": long_module(40)}], "author")
    reviewer = Recording(tmp_path / "r.json", [{"reply": NO_CONCERNS}], "reviewer")
    assert run_decomposed(tmp_path, SCORE, {"xs": [1]}, author, reviewer, max_statements=50) == sum(range(1, 39))
    assert len(author.requests) == 1


# ---- escalation -------------------------------------------------------------------

TRIAGE = '''use text

pipeline main(report: str) -> str:
    """Route a support mail."""
    ambiguous classify(report: str) -> label: str:
        """Label the report: bug if it mentions a crash, else question."""
    return label
'''
# The module written for `classify` leaves its one step to a nested block: a disagreement there has a parent author.
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
INNER_FIXED = INNER.replace("text.contains(report,", "text.contains(text.lower(report),")
REJECT = INNER + "\nc1: rejected: the spec says crash, not Crash"


def rulings(decision: str) -> str:
    return json.dumps({"rulings": [{"id": "c1", "decision": decision, "why": f"{decision}: as I meant it"}]})


def escalation_models(tmp_path, parent_decision: str, reviews: list[str]):
    author = Recording(tmp_path / "a.json", [
        {"match": {"contains": "still disagree"}, "reply": rulings(parent_decision)},
        {"match": {"contains": "upheld by"}, "reply": INNER_FIXED + "\nc1: resolved: lower-cased"},
        {"match": {"contains": "raised these concerns"}, "reply": REJECT},
        {"match": {"contains": "step `decide`"}, "reply": INNER},
        {"match": {"contains": "step `classify`"}, "reply": OUTER}], "author")
    reviewer = Recording(tmp_path / "r.json", [
        {"match": {"contains": "step `classify`"}, "reply": NO_CONCERNS},
        {"match": {"contains": "step `decide`"}, "replies": reviews}], "reviewer")
    return author, reviewer


def decide_subject(tmp_path) -> str:
    with ConcernLedger.for_workspace(tmp_path) as ledger:
        (subject,) = ledger.subjects("classify.pipe:decide:")
    return subject


def test_a_disagreement_goes_to_the_parent_blocks_author_who_can_dismiss_it(tmp_path):
    author, reviewer = escalation_models(tmp_path, "dismiss", [ONE_CONCERN])
    assert run_decomposed(tmp_path, TRIAGE, {"report": "it crash"}, author, reviewer, max_review_rounds=1) == "bug"
    (question, conversation), = author.asked("still disagree")
    # Asked in the conversation that wrote the parent's module, with the concern and the module it is about.
    outer = ModuleStore(tmp_path).read(ModuleStore(tmp_path).path_for("prog.pipe", "classify"))
    assert conversation == outer.provenance["author-conversation"]
    assert "`Crash` in capitals is missed" in question[-1].content and 'text.contains(report, "crash")' in \
        question[-1].content
    subject = decide_subject(tmp_path)
    with ConcernLedger.for_workspace(tmp_path) as ledger:
        (row,) = ledger.history(subject)
    assert row["status"] == "rejected" and row["rationale"].startswith("dismissed by the parent block's author")
    inner = ModuleStore(tmp_path).read(ModuleStore(tmp_path).path_for(str(outer.path), "decide"))
    assert "parent block's author dismissed 1, upheld 0" in inner.provenance["escalated"]


def test_an_upheld_concern_is_revised_and_reviewed_once_more(tmp_path):
    author, reviewer = escalation_models(tmp_path, "uphold", [ONE_CONCERN, NO_CONCERNS])
    assert run_decomposed(tmp_path, TRIAGE, {"report": "A Crash"}, author, reviewer, max_review_rounds=1) == "bug"
    (revision, _), = author.asked("upheld by the parent block's author")
    assert "uphold: as I meant it" in revision[-1].content
    assert len(reviewer.asked("step `decide`")) == 2


def test_a_disagreement_the_parent_upholds_goes_to_the_human_node_then_fails(tmp_path):
    asked = []

    def human(question: str) -> str:
        asked.append(question)
        return "c1: dismiss: crash in capitals never happens in our mail"

    still = json.dumps({"concerns": [json.loads(ONE_CONCERN)["concerns"][0]], "summary": "still there"})
    author, reviewer = escalation_models(tmp_path, "uphold", [ONE_CONCERN, still])
    assert run_decomposed(tmp_path, TRIAGE, {"report": "it crash"}, author, reviewer, max_review_rounds=1,
                          human=human) == "bug"
    assert len(asked) == 1 and "`Crash` in capitals is missed" in asked[0] and "ID: dismiss: why" in asked[0]
    with ConcernLedger.for_workspace(tmp_path) as ledger:
        (row,) = ledger.history(decide_subject(tmp_path))
    assert row["rationale"] == "dismissed by the human node: crash in capitals never happens in our mail"

    # With no human node to ask, the block fails with the concern still open and what each judge decided.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    author, reviewer = escalation_models(fresh, "uphold", [ONE_CONCERN, still])
    with pytest.raises(PipeRuntimeError) as err:
        run_decomposed(fresh, TRIAGE, {"report": "it crash"}, author, reviewer, max_review_rounds=1)
    assert "still open after escalating to the parent block's author dismissed 0, upheld 1" in err.value.message
    assert "`Crash` in capitals is missed" in err.value.message
    assert [m.provenance["block"] for m in ModuleStore(fresh).all()] == ["classify"]


def test_a_top_level_block_with_a_human_node_asks_it_directly(tmp_path):
    author = Recording(tmp_path / "a.json", [{"match": {"contains": "raised these concerns"}, "reply": REJECT},
                                            {"reply": INNER}], "author")
    reviewer = Recording(tmp_path / "r.json", [{"reply": ONE_CONCERN}], "reviewer")
    source = TRIAGE.replace("classify", "decide")
    assert run_decomposed(tmp_path, source, {"report": "crash"}, author, reviewer, max_review_rounds=1,
               human=lambda q: "c1: dismiss: fine as it is") == "bug"
    assert author.asked("still disagree") == []
