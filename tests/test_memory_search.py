"""Hybrid search over the memory: keyword and paraphrase at every level, incremental inserts, deletes and updates,
corrupt indexes rebuilt, and keyword-only search when the embedding stack is missing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from orgtree_lang.memory import Memory
from orgtree_lang.memory.vectors import load_embedder

TOPICS = {
    "volcano": ("Magma rises through cracks in the crust until pressure forces an eruption. Basalt lava flows "
                "slowly downhill while ash clouds drift over nearby villages. Geologists measure sulfur gas "
                "and ground swelling to warn people before the mountain erupts."),
    "bread": ("Knead the dough until it is smooth, then leave it covered so the yeast can make it rise. Shape "
              "the loaf, score the top with a sharp blade, and bake it in a hot oven until the crust is brown "
              "and the base sounds hollow."),
    "chess": ("White opens by moving the king's pawn two squares to control the center. The knights develop "
              "toward the middle, the bishops follow, and castling tucks the king behind a wall of pawns "
              "before the middlegame begins."),
    "tax": ("A deduction lowers the income on which tax is computed, while a credit reduces the tax owed "
            "directly. Keep receipts for charitable gifts and file the annual return before the deadline "
            "to avoid penalties and interest."),
}


def corpus() -> str:
    return "\n\n".join(f"## {name}\n\n" + " ".join([text] * 3) for name, text in TOPICS.items())


@pytest.fixture(scope="session")
def embedder():
    """The embedding model, loaded once for the whole test session (it takes seconds)."""
    return load_embedder()


@pytest.fixture
def memory(tmp_path, embedder):
    notices: list[str] = []
    with Memory(tmp_path, notice=notices.append) as opened:
        opened.notices = notices
        yield opened


def test_keyword_search_finds_a_passage_by_its_words(memory):
    doc = memory.add(corpus(), name="topics.md")
    hit = memory.search("sulfur gas ground swelling", 1, mode="keyword")[0]
    assert "sulfur" in hit.text and hit.node.level == 0
    data = corpus().encode("utf-8")
    assert hit.spans[0].document == doc.id
    assert data[hit.spans[0].start:hit.spans[0].end].decode("utf-8") == hit.text


def test_vector_search_finds_a_passage_by_meaning_alone(memory):
    memory.add(corpus(), name="topics.md")
    hit = memory.search("how do I make a homemade loaf rise?", 1, mode="vector")[0]
    assert "yeast" in hit.text
    hit = memory.search("protecting the monarch early in a board game", 1, mode="vector")[0]
    assert "castling" in hit.text


def test_search_finds_passages_at_every_level_of_the_tree(memory):
    doc = memory.add(corpus(), name="topics.md")
    view = memory.fit([doc], "gpt-4o:1000", share=0.1)
    assert view.levels >= 2
    for level in range(view.levels + 1):  # every node, by its own words, within its level
        ids = memory.store.filter_ids(levels=[level])
        assert ids, level
        for node in memory.store.many(sorted(ids)):
            query = " ".join(memory.text(node).split()[:12])
            if not query:
                continue  # a piece of whitespace between two full pieces has no words to search for
            found = [h.node.id for h in memory.search(query, 3, levels=[level], mode="keyword")]
            # The corpus repeats itself, so other nodes may hold the same words equally well.
            assert node.id in found or (found and all(query in " ".join(memory.text(n).split())
                                                      for n in memory.store.many(found))), (level, query)
    section = corpus().index("## volcano"), corpus().index("## bread")  # ASCII: characters are bytes
    for level in (0, 1):  # by meaning: a paraphrase finds the part about volcanoes
        hit = memory.search("a mountain spewing molten rock", 1, levels=[level], mode="vector")[0]
        assert hit.node.level == level
        assert any(s.start < section[1] and section[0] < s.end for s in hit.spans), level


def test_hybrid_fuses_both_rankings_and_filters_by_document_and_tag(memory):
    first = memory.add(corpus(), name="topics.md", tags=["notes"])
    second = memory.add("Sourdough starters need flour and water fed daily to stay active.", name="starter.txt")
    hits = memory.search("bread dough rising with yeast", 5)
    assert {h.node.document for h in hits} == {first.id, second.id}
    assert any(h.keyword_rank and h.vector_rank for h in hits)
    assert {h.node.document for h in memory.search("bread dough yeast", 5, documents=[second.id])} == {second.id}
    assert {h.node.document for h in memory.search("bread dough yeast", 5, tags=["notes"])} == {first.id}


def test_an_insert_is_searchable_at_once_without_a_rebuild(memory):
    memory.add(corpus(), name="topics.md")
    index = memory.search_index()
    before = index.keyword.count(), index.vectors.count()
    doc = memory.add("The lighthouse keeper polished the brass lens every evening.", name="light.txt")
    pieces = len(memory.store.children(doc.id))
    assert (index.keyword.count(), index.vectors.count()) == (before[0] + pieces, before[1] + pieces)
    assert memory.search("lighthouse brass lens", 1)[0].node.document == doc.id
    assert memory.search("a tower that guides ships at night", 1, mode="vector")[0].node.document == doc.id
    assert memory.notices == []


def test_delete_and_update_keep_both_indexes_in_step_with_the_store(memory):
    keep = memory.add(corpus(), name="topics.md")
    gone = memory.add("Zeppelins float because hydrogen is lighter than air.", name="air.txt")
    memory.fit([keep, gone], "gpt-4o:1000")
    memory.delete(gone)
    index = memory.search_index()
    stored = len(memory.store.all_ids())
    assert index.keyword.count() == stored == index.vectors.count()
    assert all(h.node.document != gone.id and gone.id not in memory.store.covered_documents(h.node.id)
               for h in memory.search("zeppelins hydrogen", 10))
    newer = memory.update(keep, "Only orchids remain: they need bright, indirect light and weekly watering.")
    assert memory.search("orchids indirect light", 1)[0].node.document == newer.id
    assert memory.search("basalt magma", 5, mode="keyword") == []
    assert index.keyword.count() == len(memory.store.all_ids()) == index.vectors.count()


def test_a_corrupt_index_is_rebuilt_from_the_store_and_said(tmp_path, embedder):
    with Memory(tmp_path) as memory:
        memory.add(corpus(), name="topics.md")
        count = len(memory.store.all_ids())
    (tmp_path / ".orgtree/index/vectors.faiss").write_bytes(b"not a faiss index")
    for meta in (tmp_path / ".orgtree/index/keyword").glob("meta.json"):
        meta.write_text("{ broken")
    notices: list[str] = []
    with Memory(tmp_path, notice=notices.append) as memory:
        hit = memory.search("sulfur gas ground swelling", 1)[0]
        assert "sulfur" in hit.text
        index = memory.search_index()
        assert index.keyword.count() == count == index.vectors.count()
    assert any("keyword index" in n and "corrupt" in n and "rebuilding" in n for n in notices), notices
    assert any("vector index" in n and "corrupt" in n and "rebuilding" in n for n in notices), notices


def test_search_is_keyword_only_without_sentence_transformers_and_says_so_once(tmp_path):
    script = textwrap.dedent(f"""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("sentence_transformers", "torch"):
                    raise ImportError(f"No module named {{name!r}}", name=name)
        sys.meta_path.insert(0, Block())
        from orgtree_lang.memory import Memory
        for _ in range(2):
            with Memory({str(tmp_path)!r}) as memory:
                memory.add("The lighthouse keeper polished the brass lens.", name="a.txt")
                print("HIT", memory.search("brass lens", 1)[0].node.document)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, PIPE_NO_PLUGINS="1"))
    assert result.stdout.split() == ["HIT", "1", "HIT", "1"], result.stderr
    assert result.stderr.count("search is keyword-only") == 1, result.stderr


def test_two_memories_adding_in_turn_both_stay_in_the_vector_index(tmp_path, embedder):
    notices: list[str] = []
    first = Memory(tmp_path, notice=notices.append)
    second = Memory(tmp_path, notice=notices.append)
    try:
        first.search_index()  # opened (and loaded) before the other memory adds anything
        light = second.add("The lighthouse keeper polished the brass lens every evening.", name="light.txt")
        bees = first.add("Bees dance to tell the hive where the flowers are.", name="bees.txt")
    finally:
        first.close()
        second.close()
    with Memory(tmp_path, notice=notices.append) as fresh:
        index = fresh.search_index()
        assert index.vectors.count() == len(fresh.store.all_ids())
        assert fresh.search("a tower that guides ships at night", 1, mode="vector")[0].node.document == light.id
        assert fresh.search("insects communicating by movement", 1, mode="vector")[0].node.document == bees.id
    assert not any("rebuilding" in n for n in notices)
