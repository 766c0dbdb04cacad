"""benchmarks/long_context.py and benchmarks/research_eval.py run offline at a tiny size (the lead runs them with a real
model): the documents carry their facts at the depths planned, the context tree and search put them in front of the
reader, and the research agent answers the test web's questions with citations."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import long_context  # noqa: E402
import research_eval  # noqa: E402


def test_the_generated_document_has_each_fact_at_its_planned_depth():
    text, questions = long_context.make_document(200_000, 2)
    assert 200_000 <= len(text) < 201_000
    for question in (q for q in questions if q.kind == "find"):
        vault = question.text.split("vault ")[1].rstrip("?")
        at = text.index(f"Vault {vault} opens with the code {question.answer}.")
        assert abs(at / len(text) - question.depths[0]) < 0.01
    count = next(q for q in questions if q.kind == "count")
    warehouse = count.text.split("warehouse ")[1].split(" ")[0]
    assert text.count(f"warehouse {warehouse} received") == int(count.answer)


def test_offline_every_kind_of_question_is_answered_through_the_tree_with_both_summarizers(capsys):
    assert long_context.main(["--offline", "--sizes", "60k", "--per-kind", "1"]) == 0
    out = capsys.readouterr().out
    assert "offline (scripted reader and summarizer" in out
    for kind in ("extractive", "model"):
        line = next(line for line in out.splitlines() if line.startswith(f"RESULT size=") and f"summaries={kind}" in line)
        assert "accuracy=1.00" in line
        # An answer reads a share of the window (10% view + 15% search of 32,000), never the 60 KB document.
        assert int(line.split("tokens=")[1].split()[0]) <= 0.25 * 32_000 + 100


def test_the_offline_reader_cannot_answer_what_it_was_not_shown():
    reader = long_context.OfflineModel(32_000)
    assert reader._answer("Summary view:\nnothing\n\nQuestion: What code opens vault Onyx?") == "unknown"


def test_offline_research_answers_the_pages_the_search_finds_and_no_code_question(capsys):
    scored = research_eval.evaluate(None)
    cited = {case.question for case, _, with_citation in scored if with_citation}
    assert "In which year did the Qorvath archive open to the public?" in cited
    assert not any(case.kind == "code" for case, _, with_citation in scored if with_citation)
