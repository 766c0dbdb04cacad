"""What a reviewer of a generated module sees besides the spec: the goal, the path of blocks, the language card,
and the documentation of the skills the module calls."""

from __future__ import annotations

from decompose_testing import NO_CONCERNS, Recording, run_decomposed, stdlib_registry

from orgtree_lang.decompose.goal import program_description
from orgtree_lang.syntax.card import language_card

REGISTRY = stdlib_registry()

PROGRAM = '''# Sort incoming support mail so that crashes reach the on-call engineer within minutes.
# Everything else waits for the weekly triage meeting.
use text

pipeline main(report: str) -> str:
    """Route one support mail to the on-call queue or to the weekly pile."""
    ambiguous classify(report: str) -> label: str:
        """Label the report: bug if it describes a crash, else question."""
    return label
'''

# The module written for `classify` leaves one step to a nested block, written by a child decomposer.
OUTER = '''```pipe
use text

pipeline main(report: str) -> str:
    """Normalize the report, then decide."""
    cleaned = text.strip(report)
    ambiguous decide(cleaned: str) -> label: str:
        """bug if the cleaned report mentions a crash in any case, else question."""
    return label
```'''
INNER = '''```pipe
use text

pipeline main(cleaned: str) -> str:
    if text.contains(text.lower(cleaned), "crash"):
        return "bug"
    return "question"
```'''


def run(tmp_path, report: str):
    author = Recording(tmp_path / "author.json", [
        {"match": {"contains": "step `decide`"}, "reply": INNER},
        {"match": {"contains": "step `classify`"}, "reply": OUTER}], "author")
    reviewer = Recording(tmp_path / "reviewer.json", [{"reply": NO_CONCERNS}], "reviewer")
    return run_decomposed(tmp_path, PROGRAM, {"report": report}, author, reviewer, file="mail.pipe"), reviewer


def review_of(reviewer, step: str):
    (request,) = [messages for messages in reviewer.requests if f"step `{step}`" in messages[-1].content]
    return request


def test_the_reviewer_sees_the_program_goal_the_pipeline_docstring_and_the_path(tmp_path):
    result, reviewer = run(tmp_path, "  It CRASHED on save  ")
    assert result == "bug"
    system, user = review_of(reviewer, "classify")
    assert "crashes reach the on-call engineer within minutes" in user.content
    assert "weekly triage meeting" in user.content
    assert "Route one support mail to the on-call queue" in user.content
    assert "mail.pipe: main > classify" in user.content
    # The nested block's reviewer sees the same program goal and the whole path down to it.
    _, inner = review_of(reviewer, "decide")
    assert "crashes reach the on-call engineer within minutes" in inner.content
    assert "mail.pipe: main > classify -> classify.pipe: main > decide" in inner.content
    assert "Normalize the report, then decide." in inner.content


def test_the_reviewer_reads_the_same_language_card_as_the_author(tmp_path):
    _, reviewer = run(tmp_path, "fine")
    system, _ = review_of(reviewer, "classify")
    assert language_card() in system.content


def test_the_reviewer_gets_the_docs_of_exactly_the_skills_the_module_calls(tmp_path):
    _, reviewer = run(tmp_path, "fine")
    _, outer = review_of(reviewer, "classify")
    _, inner = review_of(reviewer, "decide")
    strip, contains = REGISTRY.get("text.strip"), REGISTRY.get("text.contains")
    assert strip.signature() in outer.content and contains.signature() not in outer.content
    assert contains.signature() in inner.content and REGISTRY.get("text.lower").signature() in inner.content
    # The whole docstring, example line included, not only its first line.
    assert 'text.contains("hello", "ell")' in inner.content


def test_a_program_without_a_comment_block_is_described_by_its_main_docstring():
    source = PROGRAM.split("use text\n", 1)[1]
    assert program_description("use text\n" + source, "m.pipe") == (
        "Route one support mail to the on-call queue or to the weekly pile.")
    # A saved module's provenance header is not a description.
    assert program_description("# orgtree: block = x\n" + source, "m.pipe").startswith("Route one")
