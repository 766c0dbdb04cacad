"""What an agent reads of the insight pool before a piece of work: the insights relevant to a task, in budget."""

from __future__ import annotations

from dataclasses import dataclass

from orgtree_lang.memory.budget import Budget
from orgtree_lang.memory.hybrid import search_tagged
from orgtree_lang.memory.insights import Insight, InsightPool
from orgtree_lang.memory.memory import Memory
from orgtree_lang.memory.nodes import Node
from orgtree_lang.memory.summarize import Summarizer
from orgtree_lang.memory.tokenizer import Tokenizer

RELEVANT_SHARE = 0.10
INSIGHT_TAG = "insight"
HEADING = "## Insights relevant to: {task}"


@dataclass
class InsightView:
    """The insights shown for a task: the text, which insights it covers, and whether it had to be summarized."""

    text: str
    insights: list[int]
    tokens: int
    budget: int
    summarized: bool = False


def _name(insight: Insight) -> str:
    return f"insight #{insight.id}"


def sync_insights(pool: InsightPool, memory: Memory) -> dict[int, Insight]:
    """Make the memory hold exactly the active insights (one document each); returns them by document id."""
    active = {_name(i): i for i in pool.insights("active")}
    by_document: dict[int, Insight] = {}
    for doc in memory.documents():
        if INSIGHT_TAG in doc.tags and doc.name not in active:
            memory.delete(doc)  # removed since it was indexed
    for name, insight in active.items():
        by_document[memory.add(insight.render(), name=name, tags=[INSIGHT_TAG]).id] = insight
    return by_document


def relevant_insights(pool: InsightPool, memory: Memory, task: str, model: object, *, limit: int = 10,
                      context_window: int | None = None, summarizer: Summarizer | None = None,
                      mode: str = "hybrid") -> InsightView:
    """The (at most `limit`) active insights most relevant to `task`, most relevant first, within 10% of `model`'s
    window: whole when they fit, else summarized through the context recursion (nothing is dropped)."""
    budget = Budget.for_model(model, RELEVANT_SHARE, context_window)
    tokenizer = Tokenizer(budget.model)
    by_document = sync_insights(pool, memory)
    if not by_document:
        return InsightView("", [], 0, budget.tokens)
    ranked: list[Node] = []
    for hit in search_tagged(memory, task, 4 * limit, tags=[INSIGHT_TAG], mode=mode):
        for span in hit.spans:
            if span.document in by_document and all(d.id != span.document for d in ranked):
                ranked.append(memory.get(span.document))
    ranked = ranked[:limit]
    if not ranked:
        return InsightView("", [], 0, budget.tokens)
    heading = HEADING.format(task=" ".join(task.split()))
    ids = [by_document[d.id].id for d in ranked]
    whole = "\n".join([heading, *(by_document[d.id].render() for d in ranked)])
    if tokenizer.count(whole) <= budget.tokens:
        return InsightView(whole, ids, tokenizer.count(whole), budget.tokens)
    room = budget.tokens - tokenizer.count(heading + "\n")
    view = memory.fit(ranked, budget.model, share=1.0, context_window=room, summarizer=summarizer)
    text = f"{heading}\n{view.text}"
    return InsightView(text, ids, tokenizer.count(text), budget.tokens, summarized=True)
