"""Specs in the workspace memory, found by meaning: (key, spec text) entries of one kind (saved modules, learned skills)
and a block's spec in, the entries most like it out, best first, each with its relevance.

Each entry is one memory document (tag `spec:KIND`), kept in step with the entries given: a spec that went away is
forgotten, a changed one replaced. They are ranked by hybrid search within their tag (memory/hybrid.py: BM25 fused with
an exact scan of only these nodes' embeddings). Relevance is the cosine similarity of the two specs' embeddings where
the embedding model is installed (and the search is not keyword-only), else the share of the spec's content words the
entry has: a number in [0, 1] a caller can hold to a threshold, which a rank is not."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from orgtree_lang.memory.hybrid import meaning_ranks, search_tagged, vectors_installed
from orgtree_lang.memory.summarize import content_words

if TYPE_CHECKING:
    from orgtree_lang.memory.memory import Memory

SPEC_TAG = "spec:{kind}"


@dataclass(frozen=True)
class SpecMatch:
    """An entry like the spec: its key, its relevance in [0, 1], and how that was measured ("meaning" or "words")."""

    key: str
    relevance: float
    by: str


def _name(kind: str, key: str) -> str:
    return f"{kind} spec {key}"


def sync_specs(memory: Memory, kind: str, entries: dict[str, str]) -> dict[int, str]:
    """Make the memory hold exactly `entries` (key -> spec text) as documents tagged `spec:KIND`; document id -> key."""
    tag = SPEC_TAG.format(kind=kind)
    wanted = {_name(kind, key): (key, text) for key, text in entries.items() if text.strip()}
    by_document: dict[int, str] = {}
    for doc in memory.documents():
        if tag not in doc.tags:
            continue
        entry = wanted.get(doc.name)
        if entry is None or memory.text(doc) != entry[1]:
            memory.delete(doc)  # gone, or its spec changed: the new text is added below
    for name, (key, text) in wanted.items():
        by_document[memory.add(text, name=name, tags=[tag]).id] = key
    return by_document


def similar_specs(memory: Memory, spec: str, kind: str, entries: dict[str, str], *, k: int = 8,
                  mode: str = "hybrid") -> list[SpecMatch]:
    """The (at most `k`) entries of `kind` most like `spec`, best first by hybrid search, each with its relevance.
    Open `memory` with `vectors=False`: only these specs are embedded (once, kept in state.db)."""
    by_document = sync_specs(memory, kind, entries)
    if not by_document or not spec.strip():
        return []
    tag = SPEC_TAG.format(kind=kind)
    order: list[int] = []
    for hit in search_tagged(memory, spec, 4 * k, tags=[tag], levels=[0], mode=mode):
        for span in hit.spans:
            if span.document in by_document and span.document not in order:
                order.append(span.document)
    if mode != "keyword" and vectors_installed():
        from orgtree_lang.memory.vectors import VectorsUnavailable

        try:
            return _by_meaning(memory, spec, tag, by_document, order, k)
        except VectorsUnavailable:
            pass  # search_tagged said so once already; measure by words
    wanted = content_words(spec)
    matches = []
    for document in order[:k]:
        theirs = content_words(entries[by_document[document]])
        share = len(wanted & theirs) / len(wanted) if wanted else 0.0
        matches.append(SpecMatch(by_document[document], share, "words"))
    return matches


def _by_meaning(memory: Memory, spec: str, tag: str, by_document: dict[int, str], order: list[int],
                k: int) -> list[SpecMatch]:
    """The entries in search order, each with the best cosine similarity of its pieces to `spec`."""
    pieces = sorted(memory.store.filter_ids(levels=[0], tags=[tag]))
    best: dict[int, float] = {}
    for node, score in meaning_ranks(memory, spec, pieces, len(pieces)):
        for document in memory.store.covered_documents(node):
            if document in by_document:
                best[document] = max(best.get(document, -1.0), score)
    # Documents the keyword side missed but the meaning scan found are candidates too.
    order = order + [d for d in sorted(best, key=lambda d: -best[d]) if d not in order]
    return [SpecMatch(by_document[d], max(0.0, best.get(d, 0.0)), "meaning") for d in order[:k]]
