"""Hybrid search within a small tagged part of the memory (the scratchpad, the insights, the specs of saved modules and
learned skills): a query and tags in, Hits ranked by reciprocal rank fusion of BM25 and an exact embedding scan of
only those nodes out. The workspace's vector index is never opened, so nothing else (a big input) gets embedded."""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

from orgtree_lang.memory.search import Hit, say_once, fused_hits

if TYPE_CHECKING:
    from orgtree_lang.memory.memory import Memory


def vectors_installed() -> bool:
    """Whether the embedding model can be loaded here (the `vectors` extra), without loading it."""
    return all(importlib.util.find_spec(name) is not None for name in ("torch", "sentence_transformers", "numpy"))


def search_tagged(memory: Memory, query: str, k: int, *, tags: list[str], levels: list[int] | None = None,
                  mode: str = "hybrid") -> list[Hit]:
    """The `k` nodes with one of `tags` that best match `query`: by keyword and by meaning (`mode` "hybrid", meaning
    only where the embedding model is installed), or by one of them ("keyword", "vector"). Open `memory` with
    `vectors=False`: only these nodes are embedded (once; the embeddings are kept in state.db)."""
    if mode not in ("hybrid", "keyword", "vector"):
        raise ValueError(f"unknown search mode {mode!r}; choose one of: hybrid, keyword, vector")
    if not query.strip() or k <= 0:
        return []
    depth = max(50, 5 * k)
    ranked: list[tuple[int, float]] = []
    if mode != "keyword" and vectors_installed():
        from orgtree_lang.memory.vectors import VectorsUnavailable

        try:
            ranked = meaning_ranks(memory, query, sorted(memory.store.filter_ids(levels=levels, tags=tags)), depth)
        except VectorsUnavailable as exc:
            say_once(f"memory: search is keyword-only: {exc}", memory.notice)
    keyword = []
    if mode != "vector" or not ranked:
        keyword = memory.search_index().keyword.search(query, depth, None, levels, tags)
    return fused_hits(memory, keyword, ranked, k)


def meaning_ranks(memory: Memory, query: str, ids: list[int], k: int) -> list[tuple[int, float]]:
    """(node id, cosine similarity) of the `k` nodes among `ids` nearest to `query` by meaning, best first; nodes with
    no saved embedding are embedded now and their embeddings saved."""
    import numpy

    from orgtree_lang.memory.vectors import DEFAULT_EMBEDDING_MODEL, embed, load_embedder, query_vector

    if not ids:
        return []
    have = memory.store.vectors_of(DEFAULT_EMBEDDING_MODEL, ids)
    missing = memory.store.many([i for i in ids if i not in have])
    if missing:
        matrix = embed(load_embedder(DEFAULT_EMBEDDING_MODEL), [memory.text(n) for n in missing])
        rows = [(n.id, row.tobytes()) for n, row in zip(missing, matrix)]
        memory.store.save_vectors(DEFAULT_EMBEDDING_MODEL, rows)
        have.update(rows)
    kept = [i for i in ids if i in have]
    matrix = numpy.vstack([numpy.frombuffer(have[i], dtype="float32") for i in kept])
    scores = matrix @ query_vector(DEFAULT_EMBEDDING_MODEL, query)[0]
    order = numpy.argsort(-scores, kind="stable")[:k]
    return [(kept[i], float(scores[i])) for i in order]
