"""benchmarks/long_context.py and benchmarks/research_eval.py run offline at a tiny size (the lead runs them with a real
model): the documents carry their facts at the depths planned, the context tree and search put them in front of the
reader where plain long context (the document cut to the window) loses them, and the research agent answers the test
web's questions with citations, its findings reviewed by a model of their own."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from chat_server import ChatServer

from orgtree_lang.memory.tokenizer import Tokenizer

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


def results(out: str) -> dict[str, dict[str, str]]:
    """The RESULT lines of a run, by flow: {flow: {key: value}}."""
    rows = [dict(part.split("=", 1) for part in line.split()[1:]) for line in out.splitlines()
            if line.startswith("RESULT ")]
    return {row["flow"]: row for row in rows}


def test_offline_every_kind_of_question_is_answered_by_every_flow_when_the_document_fits(capsys):
    assert long_context.main(["--offline", "--sizes", "60k", "--per-kind", "1"]) == 0
    out = capsys.readouterr().out
    assert "offline (scripted reader and summarizer" in out
    rows = results(out)
    assert set(rows) == {"plain", "extractive", "model"}
    assert all(row["accuracy"] == "1.00" for row in rows.values())
    # Through the tree an answer reads a share of the window (10% view + 15% search of 32,000), never the 60 KB
    # document; plain context reads all of it (60 KB is about 10,000 tokens here).
    for flow in ("extractive", "model"):
        assert int(rows[flow]["tokens"]) <= 0.25 * 32_000 + 100
    assert int(rows["plain"]["tokens"]) > 9_000
    # Only model summaries call the summarizer.
    assert rows["plain"]["summary_calls"] == rows["extractive"]["summary_calls"] == "0"
    assert int(rows["model"]["summary_calls"]) > 0


def test_plain_context_collapses_when_the_facts_lie_past_the_window_and_the_tree_still_reaches_them(capsys):
    # A 4,000-token window shows plain context the first ~14 KB of 60 KB; every fact of one question per kind is
    # deeper than that (find at half depth, compare at 2% and 97%, count spread through the document).
    assert long_context.main(["--offline", "--sizes", "60k", "--per-kind", "1", "--window", "4000"]) == 0
    rows = results(capsys.readouterr().out)
    assert rows["plain"]["accuracy"] == "0.00"
    assert int(rows["plain"]["tokens"]) <= 0.9 * 4_000 + 50
    assert float(rows["extractive"]["accuracy"]) > 0 and float(rows["model"]["accuracy"]) > 0


def test_the_plain_view_is_the_documents_head_within_its_share_of_the_window():
    text, _ = long_context.make_document(2_000_000, 1)
    window = long_context.Window(8_000, Tokenizer("gpt-4o"))
    shown = long_context.plain_view(text, window)
    assert text.startswith(shown) and 0.85 * 8_000 < window.count(shown) <= 0.9 * 8_000


def test_an_unknown_flow_is_refused_with_the_flows_there_are(capsys):
    with pytest.raises(SystemExit):
        long_context.main(["--offline", "--flows", "plain,rlm"])
    assert "unknown flow 'rlm': the flows are plain, extractive, model" in capsys.readouterr().err


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
    with pytest.raises(SystemExit):
        research_eval.main(["--offline", "--review-model", "openai/checker"])
