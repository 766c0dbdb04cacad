"""The `ctx` skills: .pipe programs add texts to the workspace memory, fit them into a budget, expand and search."""

from __future__ import annotations

from typing import Any

from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.runtime.skills import SkillContext, skill


def _open(ctx: SkillContext, vectors: bool = True):
    from orgtree_lang.memory.memory import Memory

    return Memory(ctx.workspace.root, vectors=vectors)


def _node_record(memory, node) -> dict[str, Any]:
    return {"node": node.id, "kind": node.kind, "level": node.level, "tokens": node.tokens,
            "spans": [{"document": s.document, "name": s.name, "start": s.start, "end": s.end}
                      for s in memory.spans(node)]}


def _guard(name: str, call):
    from orgtree_lang.memory.budget import BudgetError
    from orgtree_lang.memory.memory import MemoryInputError

    from orgtree_lang.models.base import ModelError

    try:
        return call()
    except (MemoryInputError, BudgetError) as exc:
        raise SkillError(f"{name}: {exc}") from None
    except ModelError as exc:
        raise SkillError(f"{name}: the model writing its summaries failed: {exc}",
                         hint=exc.hint or 'or set [memory] summarizer = "extractive" in orgtree.toml') from None


@skill("ctx.add", idempotent=True)
def add(ctx: SkillContext, text: str, name: str = "", tags: list[str] | None = None) -> int:
    """Remember a text in the workspace memory: stored whole, cut into pieces, and indexed for search.

    Args:
        text: The text to remember.
        name: Where it came from (a file name, a label); adding the same name and text again changes nothing.
        tags: Labels to filter searches by.

    Returns:
        The id of the stored document node.
    """
    with _open(ctx) as memory:
        return _guard("ctx.add", lambda: memory.add(text, name=name, tags=tags or ())).id


def summarizer_of(ctx: SkillContext, what: str):
    """The summarizer of this run's skills: the run's model (or `[memory] summary_model`) when one is configured and
    `[memory] summarizer` is not "extractive", its calls charged to the run tree's budget; else the extractive one."""
    from orgtree_lang.memory.settings import MemorySettings
    from orgtree_lang.runtime.config import ConfigError

    try:
        settings = MemorySettings.from_config(ctx.config)
    except ConfigError as exc:
        raise SkillError(f"{what}: {exc}") from None
    return settings.summarizer_for(ctx.models, spend=ctx.spend, what=what)


@skill("ctx.fit", idempotent=True, slow=True)
def fit(ctx: SkillContext, documents: list[int], model: str, share: float = 0.25) -> str:
    """The documents, or summaries of them, within a share of a model's context window.

    Summaries are labelled `[#ID summary LEVEL]`; ctx.expand(ID) gives what a summary stands for. With a model
    configured for the run they are written by it (each says what it covers and keeps the numbers, names and
    errors a reader would search for), several at a time, and cached by text and model; without one, or with
    `[memory] summarizer = "extractive"`, the most central sentences are kept.

    Args:
        documents: Document ids from ctx.add.
        model: The model that will read the text, e.g. "gpt-4o", or "name:TOKENS" to give its window.
        share: The fraction of the model's context window the text may use.

    Returns:
        The text, at most share x window tokens.
    """
    summarizer = summarizer_of(ctx, "ctx.fit")
    # Keyword-only: the view's new summaries are indexed for keyword search now; a search by meaning embeds them
    # later, once, rather than every piece of a big document being embedded before the view is read.
    with _open(ctx, vectors=False) as memory:
        return _guard("ctx.fit", lambda: memory.fit(documents, model, share, summarizer=summarizer).text)


@skill("ctx.expand", idempotent=True)
def expand(ctx: SkillContext, node: int) -> dict[str, Any]:
    """What a node stands for: a summary's children, a document's pieces, or a piece's original text.

    Args:
        node: A node id (from ctx.add, ctx.search, or a `[#ID ...]` label in a ctx.fit view).

    Returns:
        {"node", "kind", "level", "tokens", "spans", "text", "children"}: `text` is the node's own text;
        `children` lists the nodes below it (each with its text), empty for a piece.
    """
    def run(memory):
        target = memory.get(node)
        below = memory.expand(target)
        record = _node_record(memory, target)
        record["text"] = memory.text(target)
        record["children"] = [] if isinstance(below, str) else \
            [{**_node_record(memory, child), "text": memory.text(child)} for child in below]
        return record

    with _open(ctx) as memory:
        return _guard("ctx.expand", lambda: run(memory))


@skill("ctx.search", idempotent=True)
def search(ctx: SkillContext, query: str, k: int = 5, level: int | None = None, document: int | None = None,
           tag: str | None = None, mode: str = "hybrid") -> list[dict[str, Any]]:
    """The pieces and summaries of the workspace memory that best match a query, by keyword and meaning.

    Args:
        query: What to look for, in words.
        k: How many results at most.
        level: Only nodes of this level (0: original pieces, 1 and up: summaries).
        document: Only nodes from this document id.
        tag: Only nodes from documents with this tag.
        mode: "hybrid" (default), "keyword" or "vector".

    Returns:
        Best first: {"node", "kind", "level", "tokens", "spans", "score", "text"} per result; `spans` are the
        original byte ranges of the documents the node stands for.
    """
    if mode not in ("hybrid", "keyword", "vector"):
        raise SkillError(f"ctx.search: mode must be hybrid, keyword or vector, got {mode!r}")
    # A keyword search opens no vector index: opening one embeds whatever was added keyword-only (big inputs).
    with _open(ctx, vectors=mode != "keyword") as memory:
        hits = memory.search(query, k, documents=[document] if document is not None else None,
                             levels=[level] if level is not None else None, tags=[tag] if tag else None, mode=mode)
        return [{**_node_record(memory, h.node), "score": h.score, "text": h.text} for h in hits]
