"""Hybrid search over every piece and summary: a query and filters in, Hits ranked by reciprocal rank fusion
of BM25 (tantivy) and embedding similarity (faiss) out, each with the original bytes it stands for."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from orgtree_lang.memory.nodes import Node, Span

if TYPE_CHECKING:
    from orgtree_lang.memory.memory import Memory

RRF_K = 60  # the usual constant of reciprocal rank fusion: 1 / (60 + rank) per list a node appears in
MODES = ("hybrid", "keyword", "vector")
REBUILD_BATCH = 2000


@dataclass
class Hit:
    """One search result: the node, its score, its own text, and the spans of original bytes it stands for."""

    node: Node
    score: float
    text: str
    spans: list[Span]
    keyword_rank: int | None = None
    vector_rank: int | None = None
    tags: list[str] = field(default_factory=list)


_SAID: set[str] = set()  # process-wide on purpose: a missing library is news once, not once per memory


def say_once(message: str, notice: Callable[[str], None]) -> None:
    if message not in _SAID:
        _SAID.add(message)
        notice(message)


class SearchIndex:
    """The keyword and vector indexes of one memory, kept consistent with its store (checked by generation)."""

    def __init__(self, folder: Path, memory: Memory, notice: Callable[[str], None], vectors: bool = True) -> None:
        from orgtree_lang.memory.keyword import KeywordIndex

        self.folder = Path(folder)
        self.memory = memory
        self.notice = notice
        self._vector_stamp: int | None = None  # the store generation of the vector index as loaded or saved here
        generation = memory.store.generation()
        existed = (self.folder / "keyword").exists()
        try:
            self.keyword = KeywordIndex(self.folder / "keyword")
            reason = None if self.keyword.stamp() == generation else "is out of date with the store"
        except Exception as exc:  # tantivy refuses a damaged index folder
            self.keyword, reason = None, f"is corrupt ({exc})"
        if reason:
            if existed:
                notice(f"memory: the keyword index {self.folder / 'keyword'} {reason}; rebuilding it from the store")
            self.keyword = KeywordIndex.fresh(self.folder / "keyword")
            self._rebuild_keyword()
        self.vectors = self._open_vectors(generation) if vectors else None

    def _open_vectors(self, generation: int):
        from orgtree_lang.memory.vectors import VectorIndex, VectorsUnavailable

        try:
            vectors = VectorIndex(self.folder)
        except (VectorsUnavailable, ImportError) as exc:
            say_once(f"memory: search is keyword-only: {exc}", self.notice)
            return None
        reason = None
        if vectors.stamp() != generation:
            reason = "is out of date with the store" if vectors.path.exists() else None
        else:
            try:
                vectors.load()
                self._vector_stamp = generation
                return vectors
            except Exception as exc:  # faiss cannot read a damaged file
                reason = f"is corrupt ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
        if reason:
            self.notice(f"memory: the vector index {vectors.path} {reason}; rebuilding it from the store")
        self._rebuild_vectors(vectors)
        return vectors

    def close(self) -> None:
        if self.keyword is not None:
            self.keyword.close()

    # ---- keeping in step with the store -------------------------------------------------------------------

    def _entries(self, nodes: list[Node]) -> list[tuple[int, str, int, list[int], list[str]]]:
        store = self.memory.store
        return [(n.id, self.memory.text(n), n.level, store.covered_documents(n.id), sorted(store.tags_of(n)))
                for n in nodes]

    def _rebuild_keyword(self) -> None:
        ids = self.memory.store.all_ids()
        for start in range(0, len(ids), REBUILD_BATCH):
            self.keyword.add(self._entries(self.memory.store.many(ids[start:start + REBUILD_BATCH])))
        self.keyword.set_stamp(self.memory.store.generation())

    def _rebuild_vectors(self, vectors) -> None:
        import numpy

        store = self.memory.store
        have = dict(store.vectors(vectors.model_name))
        ids = store.all_ids()
        kept = [i for i in ids if i in have]
        if kept:
            vectors.add(kept, numpy.vstack([numpy.frombuffer(have[i], dtype="float32") for i in kept]))
        missing = store.many([i for i in ids if i not in have])
        if missing:
            self._embed_into(vectors, missing)
        self._save_vectors(vectors, store.generation())

    def _save_vectors(self, vectors, generation: int) -> None:
        vectors.save(generation)
        self._vector_stamp = generation

    def _vectors_moved_on(self) -> bool:
        """True (and the in-memory index rebuilt from the store's saved embeddings) when another Memory saved
        the vector index since this one loaded or saved it: saving ours now would drop its additions."""
        if self.vectors.stamp() == self._vector_stamp:
            return False
        self.vectors = self._fresh_vectors()  # embeds only nodes with no saved embedding (the new ones among them)
        return True

    def _fresh_vectors(self):
        """A vector index rebuilt (and saved) from the store's saved embeddings."""
        from orgtree_lang.memory.vectors import VectorIndex

        fresh = VectorIndex(self.folder, self.vectors.model_name, self.vectors.exact_limit)
        self._rebuild_vectors(fresh)
        return fresh

    def _embed_into(self, vectors, nodes: list[Node], progress=None) -> None:
        from orgtree_lang.memory.vectors import embed

        matrix = embed(vectors.model, [self.memory.text(n) for n in nodes], progress)
        vectors.add([n.id for n in nodes], matrix)
        self.memory.store.save_vectors(vectors.model_name, [(n.id, row.tobytes()) for n, row in zip(nodes, matrix)])

    def add(self, nodes: list[Node], progress: Callable[[int, int], None] | None = None) -> None:
        """Index new nodes in both indexes (incrementally: nothing already indexed is touched)."""
        nodes = [n for n in nodes if n.kind != "document"]
        if not nodes:
            return
        generation = self.memory.store.generation()
        total = len(nodes) * (2 if self.vectors is not None else 1)
        done = 0
        for start in range(0, len(nodes), REBUILD_BATCH):
            batch = nodes[start:start + REBUILD_BATCH]
            self.keyword.add(self._entries(batch))
            done += len(batch)
            if progress:
                progress(done, total)
        self.keyword.set_stamp(generation)
        if self.vectors is not None and not self._vectors_moved_on():
            def step(count: int) -> None:
                nonlocal done
                done += count
                if progress:
                    progress(done, total)

            self._embed_into(self.vectors, nodes, step)
            if self.vectors.outgrown():  # its cells were drawn for far fewer vectors: train anew on all of them
                self.vectors = self._fresh_vectors()
            else:
                self._save_vectors(self.vectors, generation)

    def remove(self, ids: list[int]) -> None:
        """Forget deleted nodes in both indexes."""
        generation = self.memory.store.generation()
        self.keyword.remove(ids)
        self.keyword.set_stamp(generation)
        if self.vectors is not None and not self._vectors_moved_on():
            self.vectors.remove(ids)
            self._save_vectors(self.vectors, generation)

    # ---- searching ----------------------------------------------------------------------------------------

    def search(self, query: str, k: int = 10, *, documents: list[int] | None = None,
               levels: list[int] | None = None, tags: list[str] | None = None, mode: str = "hybrid") -> list[Hit]:
        if mode not in MODES:
            raise ValueError(f"unknown search mode {mode!r}; choose one of: {', '.join(MODES)}")
        if not query.strip() or k <= 0:
            return []
        depth = max(50, 5 * k)
        keyword: list[tuple[int, float]] = []
        vector: list[tuple[int, float]] = []
        if mode in ("hybrid", "keyword") or self.vectors is None:
            keyword = self.keyword.search(query, depth, documents, levels, tags)
        if mode in ("hybrid", "vector") and self.vectors is not None:
            allowed = None
            if documents or levels or tags:
                allowed = self.memory.store.filter_ids(documents, levels, tags)
            vector = self.vectors.search(query, depth, allowed)
        return fused_hits(self.memory, keyword, vector, k)


def fused_hits(memory: Memory, keyword: list[tuple[int, float]], vector: list[tuple[int, float]], k: int) -> list[Hit]:
    """The `k` best nodes of two rankings (node id, score; best first) by reciprocal rank fusion, as Hits."""
    fused: dict[int, float] = {}
    ranks: dict[int, list[int | None]] = {}
    for which, results in ((0, keyword), (1, vector)):
        for rank, (node, _score) in enumerate(results, start=1):
            fused[node] = fused.get(node, 0.0) + 1.0 / (RRF_K + rank)
            ranks.setdefault(node, [None, None])[which] = rank
    best = sorted(fused, key=lambda n: (-fused[n], n))[:k]
    return [Hit(node, fused[node.id], memory.text(node), memory.store.spans(node), ranks[node.id][0],
                ranks[node.id][1], sorted(memory.store.tags_of(node))) for node in memory.store.many(best)]
