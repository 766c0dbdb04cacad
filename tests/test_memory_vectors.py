"""The vector index past its exact limit: an IVF whose recall@10 against an exact scan stays >= 0.95, removal and
filters that hold, save and reload, retraining when it outgrows its cells, and cached query embeddings."""

from __future__ import annotations

import numpy
import pytest

from orgtree_lang.memory import Memory
from orgtree_lang.memory import vectors as vectors_module
from orgtree_lang.memory.vectors import VectorIndex, embed, load_embedder, query_vector

DIM = 384  # all-MiniLM-L6-v2's


@pytest.fixture(scope="module")
def embedder():
    return load_embedder()


def clustered(count: int, rng, centers: int = 300) -> numpy.ndarray:
    """Unit vectors on segments between random centers, with a little noise: clustered and near-tied like real
    embeddings of overlapping pieces, the hard case for an approximate index."""
    middle = rng.normal(size=(centers, DIM)).astype("float32")
    i, j = rng.integers(0, centers, count), rng.integers(0, centers, count)
    share = rng.uniform(0.5, 1.0, (count, 1)).astype("float32")
    rows = share * middle[i] + (1 - share) * middle[j] + rng.normal(0, 0.05, (count, DIM)).astype("float32")
    return rows / numpy.linalg.norm(rows, axis=1, keepdims=True)


def exact(data, ids, query, k: int = 10, allowed: set[int] | None = None) -> set[int]:
    scores = data @ query
    order = [int(ids[i]) for i in numpy.argsort(-scores) if allowed is None or int(ids[i]) in allowed]
    return set(order[:k])


def recall(index: VectorIndex, data, ids, queries, allowed: set[int] | None = None) -> float:
    found = 0
    for query in queries:
        got = {i for i, _ in index.search_vector(query[None, :], 10, allowed)}
        if allowed is not None:
            assert got <= allowed
        found += len(got & exact(data, ids, query, 10, allowed))
    return found / (10 * len(queries))


@pytest.fixture(scope="module")
def built(embedder, tmp_path_factory):
    rng = numpy.random.default_rng(3)
    data = clustered(20_060, rng)
    data, queries = data[:20_000], data[20_000:]  # queries from the same clusters, not in the index
    ids = numpy.arange(10, 20_010, dtype="int64")
    index = VectorIndex(tmp_path_factory.mktemp("vectors"), exact_limit=2_000)
    index.add(ids[:1_000], data[:1_000])
    assert not index.approximate
    index.add(ids[1_000:], data[1_000:])  # crosses the limit: trained on all 20,000, exact vectors dropped
    return index, data, ids, queries


def test_past_its_limit_the_index_is_an_ivf_with_recall_at_10_of_at_least_095(built):
    index, data, ids, queries = built
    assert index.approximate and index.count() == len(ids) and index.trained_at == len(ids)
    assert recall(index, data, ids, queries) >= 0.95


def test_below_its_limit_the_index_is_exact(embedder, tmp_path):
    rng = numpy.random.default_rng(4)
    data = clustered(1_520, rng)
    data, queries = data[:1_500], data[1_500:]
    ids = numpy.arange(1, 1_501, dtype="int64")
    index = VectorIndex(tmp_path)
    index.add(ids, data)
    assert not index.approximate and recall(index, data, ids, queries) == 1.0


def test_a_filter_returns_only_allowed_ids_and_finds_the_best_of_them(built):
    index, data, ids, queries = built
    allowed = set(numpy.random.default_rng(5).choice(ids, 300, replace=False).tolist())
    assert recall(index, data, ids, queries[:20], allowed) >= 0.95


def test_removed_ids_never_come_back_and_the_ivf_survives_save_and_reload(built, tmp_path):
    index, data, ids, queries = built
    gone = set(ids[::7].tolist())
    index.remove(sorted(gone))
    assert index.count() == len(ids) - len(gone)
    index.save(41)
    reloaded = VectorIndex(index.folder)
    assert reloaded.stamp() == 41
    reloaded.load()
    assert reloaded.approximate and reloaded.trained_at == len(ids) and reloaded.count() == index.count()
    keep = numpy.array([i not in gone for i in ids.tolist()])
    for query in queries[:20]:
        found = reloaded.search_vector(query[None, :], 10)
        assert found == index.search_vector(query[None, :], 10)
        assert not {i for i, _ in found} & gone
    assert recall(reloaded, data[keep], ids[keep], queries) >= 0.95


def test_query_embeddings_are_cached_by_text(embedder, tmp_path):
    index = VectorIndex(tmp_path)
    index.add([1], embed(embedder, ["Bees dance to tell the hive where the flowers are."]))
    query_vector.cache_clear()
    index.search("insects communicating by movement", 1)
    index.search("insects communicating by movement", 1)
    info = query_vector.cache_info()
    assert (info.misses, info.hits) == (1, 1)
    cached = query_vector(index.model_name, "insects communicating by movement")
    assert numpy.allclose(cached, embed(embedder, ["insects communicating by movement"]))
    with pytest.raises(ValueError):
        cached[0, 0] = 1.0  # shared by every caller: read-only


TOPICS = ["Magma rises through cracks in the crust until pressure forces an eruption of basalt lava.",
          "Knead the dough until smooth, then leave it covered so the yeast can make the loaf rise.",
          "White opens by moving the king's pawn two squares; castling tucks the king behind pawns.",
          "A deduction lowers taxable income, while a credit reduces the tax owed directly.",
          "Bees dance to tell the hive where the flowers are.",
          "The lighthouse keeper polished the brass lens every evening."]


def test_a_memory_past_the_limit_searches_deletes_reloads_and_retrains_through_the_ivf(embedder, tmp_path,
                                                                                       monkeypatch):
    monkeypatch.setattr(vectors_module, "EXACT_LIMIT", 2)
    monkeypatch.setattr(vectors_module, "TRAIN_PER_CELL", 1)
    monkeypatch.setattr(vectors_module, "cells_for", lambda count: 2)
    notices: list[str] = []
    with Memory(tmp_path, notice=notices.append) as memory:
        docs = [memory.add(text, name=f"{n}.txt") for n, text in enumerate(TOPICS[:3])]
        index = memory.search_index()
        assert index.vectors.approximate and index.vectors.trained_at == 3
        docs += [memory.add(text, name=f"{n + 3}.txt") for n, text in enumerate(TOPICS[3:])]
        assert index.vectors.count() == 6 and index.vectors.trained_at == 3  # 6 <= 8 * 3: not retrained
        assert memory.search("a mountain spewing molten rock", 1, mode="vector")[0].node.document == docs[0].id
        memory.delete(docs[4])
        assert index.vectors.count() == 5
        assert all(h.node.document != docs[4].id for h in memory.search("insects and flowers", 5, mode="vector"))
    with Memory(tmp_path, notice=notices.append) as memory:
        index = memory.search_index()
        assert index.vectors.approximate and index.vectors.count() == 5
        assert memory.search("a tower that guides ships at night", 1, mode="vector")[0].node.document == docs[5].id
        monkeypatch.setattr(vectors_module, "RETRAIN_GROWTH", 2)
        memory.add("The tide table lists high water at noon.", name="tide.txt")
        assert index.vectors.trained_at == 3  # 6 vectors: not yet past 2 times 3
        memory.add("Owls hunt at night by sound alone.", name="owls.txt")
        assert index.vectors.trained_at == 7 and index.vectors.count() == len(memory.store.all_ids()) == 7
        assert memory.search("king safety in the opening", 1, mode="vector")[0].node.document == docs[2].id
    assert not any("rebuilding" in n for n in notices), notices
