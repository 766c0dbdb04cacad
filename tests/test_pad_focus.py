"""pad.focus and insight.relevant: the notes and insights most relevant to a goal, found by keyword and by meaning."""

from __future__ import annotations

import json
import random

import pytest
import yaml

from orgtree_lang.memory import Memory
from orgtree_lang.memory.insight_view import relevant_insights
from orgtree_lang.memory.insights import InsightPool
from orgtree_lang.memory.padview import pad_focus
from orgtree_lang.memory.scratchpad import Scratchpad
from orgtree_lang.memory.tokenizer import Tokenizer
from orgtree_lang.models.scripted import ScriptedModel

WORDS = "parser lexer grammar token budget summary cache review lock turn plan agent note test bench".split()
OLD_NOTE = "The invoices table moves to Postgres only after Friday, when accounting has closed the books."
TOKENS = Tokenizer("gpt-4o")
ACCEPT = json.dumps({"concerns": [], "summary": "holds"})
INSIGHTS = [
    ("Tantivy refuses to open an index folder another process is writing; open it read-only in readers.",
     "test_search.py::test_two_readers failed with LockBusy", ["search"]),
    ("Invoices may only be migrated after the books close on Friday.", "accounting's note #21", ["billing"]),
    ("The extractive summarizer never exceeds its target length.", "hypothesis test of fit, 1500 cases", ["fit"]),
]


@pytest.fixture(scope="module")
def busy(tmp_path_factory):
    """A scratchpad of 150 notes about other things, with one old note about the invoices in it."""
    root = tmp_path_factory.mktemp("focus")
    rnd = random.Random(3)
    with Scratchpad.for_workspace(root) as pad:
        for i in range(150):
            if i == 10:
                pad.note("dba", OLD_NOTE)
            pad.note(f"a{i % 4}", " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(5, 40))) + ".")
    with Scratchpad.for_workspace(root) as pad, Memory(root) as memory:
        yield pad, memory


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    root = tmp_path_factory.mktemp("insights")
    rules = tmp_path_factory.mktemp("rules") / "accept.yaml"
    rules.write_text(yaml.safe_dump({"rules": [{"role": "reviewer", "replies": [ACCEPT]}]}))
    reviewer = ScriptedModel.from_file(rules, role="reviewer")
    with InsightPool.for_workspace(root) as insights, Memory(root) as memory:
        for text, evidence, tags in INSIGHTS:
            insights.add(text, evidence, author="planner", tags=tags, reviewer=reviewer)
        yield insights, memory, reviewer


def test_focus_finds_an_old_note_by_keyword_and_keeps_the_15_percent_budget(busy):
    pad, memory = busy
    view = pad_focus(pad, memory, "a0", "Postgres invoices", "gpt-4o:8000", mode="keyword")
    assert f"[#11 dba] plan: {OLD_NOTE}" in view.text
    assert view.verbatim_tokens <= view.verbatim_budget == 1200 and TOKENS.count(view.text) <= 1200
    seqs = [int(line.split()[0][2:]) for line in view.text.splitlines()[1:]]
    assert seqs == sorted(seqs)  # shown in the order they were written


def test_focus_finds_an_old_note_by_meaning(busy):
    pad, memory = busy
    view = pad_focus(pad, memory, "a0", "when can we move the billing data to the new database?", "gpt-4o:4000",
                     mode="vector")
    assert OLD_NOTE in view.text and TOKENS.count(view.text) <= 600


def test_focus_on_a_small_window_takes_the_best_hit_first(busy):
    pad, memory = busy
    view = pad_focus(pad, memory, "a0", "Postgres invoices accounting", "gpt-4o:1000", mode="keyword")
    assert OLD_NOTE in view.text and TOKENS.count(view.text) <= 150


def test_the_relevant_insights_come_first_and_fit_10_percent(pool):
    insights, memory, _ = pool
    view = relevant_insights(insights, memory, "migrate the invoices", "gpt-4o:8000", limit=1, mode="keyword")
    assert view.insights == [2] and "Invoices may only be migrated" in view.text and not view.summarized
    view = relevant_insights(insights, memory, "open the tantivy index in a reader", "gpt-4o:8000", mode="hybrid")
    assert view.insights[0] == 1 and view.tokens <= view.budget == 800


def test_insights_that_do_not_fit_whole_are_summarized_within_the_budget(pool):
    insights, memory, _ = pool
    view = relevant_insights(insights, memory, "index invoices summarizer", "gpt-4o:1000", mode="keyword")
    assert view.summarized and view.tokens <= view.budget == 100 and len(view.insights) == 3


def test_a_removed_insight_is_no_longer_found(pool):
    insights, memory, reviewer = pool
    before = relevant_insights(insights, memory, "extractive summarizer target length", "gpt-4o:8000",
                               mode="keyword")
    assert 3 in before.insights
    insights.remove(3, "superseded by the fit invariants in docs/memory.md", author="coder", reviewer=reviewer)
    after = relevant_insights(insights, memory, "extractive summarizer target length", "gpt-4o:8000",
                              mode="keyword")
    assert 3 not in after.insights and "extractive summarizer" not in after.text


def test_a_program_reads_the_pad_and_the_insights_in_budget(busy, pool):
    from pipe_testing import run_source

    pad, _ = busy
    insights, _, _ = pool
    source = ('use pad, insight\n\npipeline main(goal: str) -> list[str]:\n'
              '    return [pad.context("a0", "gpt-4o:4000"), pad.focus("a0", goal, "gpt-4o:4000"),\n'
              '            insight.relevant(goal, "gpt-4o:4000", limit=1)]\n')
    on_pad = run_source(source, pad.path.parent.parent, inputs={"goal": "Postgres invoices"})
    context, focus, nothing = on_pad.result
    assert "latest notes (you are a0)" in context and TOKENS.count(context) <= 600
    assert OLD_NOTE in focus and TOKENS.count(focus) <= 600 and nothing == ""
    on_pool = run_source(source, insights.path.parent.parent, inputs={"goal": "migrate the invoices"})
    assert on_pool.result[:2] == ["", ""]
    assert "Invoices may only be migrated" in on_pool.result[2] and TOKENS.count(on_pool.result[2]) <= 400
