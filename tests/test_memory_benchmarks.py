"""benchmarks/long_context.py and benchmarks/research_eval.py run offline at a tiny size (the lead runs them with a real
model): the documents carry their facts at the depths planned, the context tree and search put them in front of the
reader, and the research agent answers the test web's questions with citations."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from chat_server import ChatServer

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
    cited = {case.question for case, _, with_citation, _ in scored if with_citation}
    assert "In which year did the Qorvath archive open to the public?" in cited
    assert not any(case.kind == "code" for case, _, with_citation, _ in scored if with_citation)


def test_research_findings_and_their_insight_review_come_from_the_two_models_named(capsys):
    # One local endpoint serves both names, as shared/tools/model_bridge.py does (a folder per model name).
    asked: list[tuple[str, str]] = []

    def answer(body: dict) -> str:
        system, prompt = body["messages"][0]["content"], body["messages"][-1]["content"]
        asked.append((body["model"], system))
        if body["model"] == "checker":
            return json.dumps({"concerns": [], "summary": "the page supports it"})
        if prompt.startswith("- "):
            return json.dumps({"plan": [{"question": line[2:], "kind": "lookup", "queries": [line[2:]]}
                                        for line in prompt.splitlines() if line.startswith("- ")]})
        # Only the Qorvath page answers (the accepted insight is shown to later questions' reads too).
        found = prompt.startswith("Question: In which year did the Qorvath") and "public in 1987" in prompt
        return json.dumps({"relevant": found, "answer": "it opened in 1987" if found else "", "follow": []})

    server = ChatServer(answer)
    try:
        code = research_eval.main(["--model", "openai/finder", "--review-model", "openai/checker", "--api-base",
                                   server.base, "--window", "32000", "--only", "web"])
    finally:
        server.close()
    out = capsys.readouterr().out
    assert code == 0 and "insight review by openai/checker" in out
    assert "insight review: 1/4 findings accepted into the pool (1 of them correct with citations)" in out
    reviews = [system for model, system in asked if system.startswith("You are an independent reviewer")]
    assert reviews and all(model == "checker" for model, system in asked if system in reviews)
    assert {model for model, system in asked if system not in reviews} == {"finder"}


def test_research_eval_offline_has_no_reviewer_to_name():
    import pytest

    with pytest.raises(SystemExit):
        research_eval.main(["--offline", "--review-model", "openai/checker"])
