"""Memory.add_all: many documents in one transaction, their blobs written side by side, as `add` of each makes them."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from orgtree_lang.memory import Memory, MemoryInputError
from orgtree_lang.runtime.blobs import BlobStore

pytestmark = pytest.mark.fast

WORDS = ("crash", "on", "start", "the", "editor", "window", "when", "saving", "a", "file", "Done.", "\n\n")


def _text(seed: int, words: int) -> str:
    return " ".join(WORDS[(seed * 5 + i * i) % len(WORDS)] for i in range(words))


DOCUMENTS = [(f"notes/{i}.txt", _text(i, 300 + 400 * i)) for i in range(5)]


def _tree(memory: Memory, doc) -> list[tuple[int, int, int, str]]:
    """The pieces of a document: byte range in the document (its blob may be a pack of several), tokens, text."""
    return [(p.start - doc.start, p.end - doc.start, p.tokens, memory.text(p)) for p in memory.store.children(doc.id)]


def test_add_all_cuts_each_document_into_the_pieces_add_makes(tmp_path: Path) -> None:
    with Memory(tmp_path / "each", index=False) as each, Memory(tmp_path / "all", index=False) as together:
        one_by_one = [each.add(text, name=name) for name, text in DOCUMENTS]
        at_once = together.add_all(DOCUMENTS)
        assert [d.name for d in at_once] == [name for name, _ in DOCUMENTS]
        for a, b, (_name, text) in zip(one_by_one, at_once, DOCUMENTS):
            assert together.text(b) == text
            assert _tree(together, b) == _tree(each, a)
            assert len(_tree(together, b)) > 1
            assert together.store.covered_documents(together.store.children(b.id)[-1].id) == [b.id]


def test_add_all_is_one_change_of_the_store(tmp_path: Path) -> None:
    with Memory(tmp_path, index=False) as memory:
        before = memory.store.generation()
        memory.add_all(DOCUMENTS)
        assert memory.store.generation() == before + 1
        memory.add_all(DOCUMENTS)  # all there already: nothing changes
        assert memory.store.generation() == before + 1


def test_a_text_given_twice_under_one_name_is_one_document(tmp_path: Path) -> None:
    with Memory(tmp_path, index=False) as memory:
        first = memory.add(*reversed(DOCUMENTS[0]))
        docs = memory.add_all([DOCUMENTS[1], DOCUMENTS[0], DOCUMENTS[1], ("other.txt", DOCUMENTS[1][1])])
        assert docs[1].id == first.id and docs[0].id == docs[2].id != docs[3].id
        assert len(memory.documents()) == 3


def test_a_file_that_is_not_text_refuses_the_whole_add(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.txt", tmp_path / "bad.bin"
    good.write_text(DOCUMENTS[0][1])
    bad.write_bytes(b"\x00\x01binary")
    with Memory(tmp_path / "ws", index=False) as memory:
        with pytest.raises(MemoryInputError, match="bad.bin looks binary"):
            memory.add_files([good, bad])
        assert memory.documents() == []
        assert [d.name for d in memory.add_files([good])] == [str(good)]


def test_put_many_stores_each_new_blob_once_and_leaves_existing_ones(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "blobs")
    datas = [f"blob {i}\n".encode() * (i + 1) for i in range(40)]
    kept = store.put(datas[3])
    inode = store.path(kept).stat().st_ino
    digests = store.put_many(datas + [datas[5]])
    assert digests == [hashlib.sha256(d).hexdigest() for d in datas + [datas[5]]]
    assert [store.read(d) for d in digests] == datas + [datas[5]]
    assert store.path(kept).stat().st_ino == inode  # not written again
    assert not [p for p in (tmp_path / "blobs").rglob("*.tmp")]


def test_an_add_whose_cutting_fails_leaves_no_blob_behind(tmp_path: Path, monkeypatch) -> None:
    import orgtree_lang.memory.memory as memory_module

    with Memory(tmp_path / "m", index=False) as memory:
        kept = memory.add("a text that stays, and its blob with it", name="kept.txt")

        def broken(text, limit, tokenizer, ids=None):
            raise RuntimeError("cutting failed")

        monkeypatch.setattr(memory_module, "split_document", broken)
        with pytest.raises(RuntimeError, match="cutting failed"):
            memory.add_all(DOCUMENTS)
        monkeypatch.undo()
        stored = sorted(p.name for p in (tmp_path / "m").rglob("*") if p.is_file() and p.parent.parent.name == "blobs")
        assert stored == [kept.blob[2:]]  # the failed add's blobs were written on a thread, then deleted
        assert memory.text(kept) == "a text that stays, and its blob with it"
        assert [d.name for d in memory.add_all(DOCUMENTS)] == [name for name, _text in DOCUMENTS]


def _blob_files(root: Path) -> list[Path]:
    return sorted(p for p in (root / ".orgtree" / "blobs").rglob("*") if p.is_file())


def test_documents_added_together_share_one_pack_and_read_back_whole(tmp_path: Path) -> None:
    with Memory(tmp_path, index=False) as memory:
        docs = memory.add_all(DOCUMENTS + [("copy.txt", DOCUMENTS[2][1])])
        assert len(_blob_files(tmp_path)) == 1  # one file for six documents
        assert len({d.blob for d in docs}) == 1
        assert docs[5].start == docs[2].start  # the same text is stored once
        for doc, (_name, text) in zip(docs, DOCUMENTS + [("copy.txt", DOCUMENTS[2][1])]):
            assert memory.text(doc) == text
            assert b"".join(memory.blobs.read(p.blob, p.start, p.end) for p in memory.store.children(doc.id)) \
                == text.encode("utf-8")


def test_spans_count_from_the_documents_start_not_the_packs(tmp_path: Path) -> None:
    with Memory(tmp_path, index=False) as memory:
        docs = memory.add_all(DOCUMENTS)
        last = docs[-1]
        assert last.start > 0  # well inside the pack
        assert [(s.start, s.end) for s in memory.spans(last)] == [(0, len(DOCUMENTS[-1][1].encode()))]
        pieces = memory.store.children(last.id)
        second = memory.spans(pieces[1])[0]
        text = DOCUMENTS[-1][1].encode()
        assert second.name == DOCUMENTS[-1][0]
        assert text[second.start:second.end] == memory.text(pieces[1]).encode()


def test_a_pack_stays_until_its_last_document_is_deleted(tmp_path: Path) -> None:
    with Memory(tmp_path, index=False) as memory:
        docs = memory.add_all(DOCUMENTS[:2])
        memory.delete(docs[0])
        assert len(_blob_files(tmp_path)) == 1
        assert memory.text(docs[1]) == DOCUMENTS[1][1]
        memory.delete(docs[1])
        assert _blob_files(tmp_path) == []


def test_one_document_alone_is_its_own_blob(tmp_path: Path) -> None:
    with Memory(tmp_path, index=False) as memory:
        doc = memory.add_all(DOCUMENTS[:1])[0]
        assert (doc.blob, doc.start) == (hashlib.sha256(DOCUMENTS[0][1].encode()).hexdigest(), 0)


def test_big_documents_are_spread_over_packs(tmp_path: Path, monkeypatch) -> None:
    import orgtree_lang.memory.memory as memory_module

    monkeypatch.setattr(memory_module, "PACK_BYTES", 3000)
    with Memory(tmp_path, index=False) as memory:
        docs = memory.add_all(DOCUMENTS)
        sizes = [len(text.encode()) for _name, text in DOCUMENTS]
        assert len({d.blob for d in docs}) == len(_blob_files(tmp_path)) > 1
        assert all(memory.blobs.path(blob).stat().st_size <= 3000 or sum(1 for d in docs if d.blob == blob) == 1
                   for blob in {d.blob for d in docs})
        assert [memory.text(d) for d in docs] == [text for _name, text in DOCUMENTS] and max(sizes) > 3000
