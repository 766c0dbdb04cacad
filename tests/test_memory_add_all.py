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
    return [(p.start, p.end, p.tokens, memory.text(p)) for p in memory.store.children(doc.id)]


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
