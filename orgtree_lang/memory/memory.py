"""The memory of a workspace: add texts, fit them into a model's budget, expand nodes, search, delete."""

from __future__ import annotations

import hashlib
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import Callable, Iterable

from orgtree_lang.runtime.blobs import BlobStore
from orgtree_lang.memory.budget import Budget
from orgtree_lang.memory.nodes import Node, Span
from orgtree_lang.memory.store import NodeStore
from orgtree_lang.memory.summarize import ExtractiveSummarizer, Summarizer
from orgtree_lang.memory.tokenizer import Tokenizer
from orgtree_lang.memory.tree import PIECE_TOKENS, TreeBuilder, View, split_document
from orgtree_lang.runtime.errors import UsageError

# Pieces made when a document is added are counted with this model's tokenizer (o200k_base).
PIECE_MODEL = "gpt-4o"
Progress = Callable[[int, int], None]


class MemoryInputError(UsageError, ValueError):
    """Input the memory cannot take: an empty text, a file that is not UTF-8 text, an unknown node."""




class Memory:
    """Texts, pieces and summaries of one workspace (`.orgtree/state.db`, `.orgtree/blobs/`, `.orgtree/index/`).

    `Memory(None)` keeps everything in a temporary folder removed by `close()`. With `index=True` every new
    piece and summary also goes into the search indexes (`search()`); `index=False` skips them, and
    `vectors=False` leaves out the vector index (no embedding model is loaded; search is by keyword only).
    """

    def __init__(self, root: Path | str | None = None, *, index: bool = True, vectors: bool = True,
                 notice: Callable[[str], None] | None = None) -> None:
        self._temp = tempfile.TemporaryDirectory(prefix="pipe-memory-") if root is None else None
        self.root = Path(self._temp.name if self._temp else root)
        state = self.root / ".orgtree"
        self.store = NodeStore(state / "state.db")
        self.blobs = BlobStore(state / "blobs")
        self.index_dir = state / "index"
        self.indexing = index
        self.vectors = vectors
        self.notice = notice or (lambda message: print(message, file=sys.stderr))
        self._search = None

    def close(self) -> None:
        if self._search is not None:
            self._search.close()
        self.store.close()
        if self._temp is not None:
            self._temp.cleanup()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- reading ----------------------------------------------------------------------------------------

    def get(self, node_id: int) -> Node:
        node = self.store.get(int(node_id))
        if node is None:
            raise MemoryInputError(f"there is no memory node #{node_id} in {self.store.path}; "
                                   f"`pipe ctx search` lists node ids")
        return node

    def text(self, node: Node | int) -> str:
        """The node's own text: a document's or piece's original bytes, or a summary's words."""
        node = node if isinstance(node, Node) else self.get(node)
        return self.blobs.read(node.blob, node.start, node.end).decode("utf-8")

    def expand(self, node: Node | int) -> list[Node] | str:
        """A summary's children, a document's pieces (or smaller pieces of a piece), or a piece's original text."""
        node = node if isinstance(node, Node) else self.get(node)
        children = self.store.children(node.id)
        return children if children else self.text(node)

    def spans(self, node: Node | int) -> list[Span]:
        """The original bytes a node stands for, as ranges of its documents."""
        return self.store.spans(node if isinstance(node, Node) else self.get(node))

    def documents(self) -> list[Node]:
        return self.store.documents()

    # ---- adding -----------------------------------------------------------------------------------------

    def add(self, text: str, name: str = "", tags: Iterable[str] = (), progress: Progress | None = None) -> Node:
        """Store a text as a document cut into pieces (all indexed); adding the same name and text again is a no-op."""
        return self.add_all([(name, text)], tags, progress)[0]

    def add_all(self, documents: Iterable[tuple[str, str]], tags: Iterable[str] = (),
                progress: Progress | None = None) -> list[Node]:
        """`add` of each (name, text), all in one transaction, their bytes written in packs (`pipe ctx add` of
        several files): one durable commit for the lot, where an add each made one per document."""
        tags = tuple(sorted(set(tags)))
        tokenizer = Tokenizer(PIECE_MODEL)
        out: list[Node | None] = []
        keys: list[str] = []
        # key -> (place, name, data, digest, its text), the text replaced by its pieces' ranges once it is cut
        new: dict[str, tuple] = {}
        for name, text in documents:
            if not isinstance(text, str):
                raise MemoryInputError(f"a document is text (str), got {type(text).__name__}"
                                       + (f" for {name}" if name else ""))
            if not text.strip():
                raise MemoryInputError(f"the document {name or '(unnamed)'} is empty; there is nothing to remember")
            data = text.encode("utf-8")
            digest = hashlib.sha256(data).hexdigest()
            key = f"document:{name}:{digest}"
            keys.append(key)
            out.append(self.store.by_key(key))
            if out[-1] is None and key not in new:
                new[key] = (len(out) - 1, name, data, digest, text)
        if not new:
            return out
        # The new documents' bytes go into packs (see pack_documents), written and fsynced on a thread while the
        # texts are cut; each text is cut into pieces after a batch of them is tokenized on two threads (see
        # Tokenizer.ids_ahead).
        pack_datas, pack_digests, places = pack_documents([item[2] for item in new.values()],
                                                          [item[3] for item in new.values()])
        with ThreadPoolExecutor(1, thread_name_prefix="memory-blobs") as pool:
            writing = pool.submit(self.blobs.put_many, pack_datas, pack_digests)
            try:
                texts = [item[4] for item in new.values()]
                for (key, item), ids in zip(list(new.items()), tokenizer.ids_ahead(texts)):
                    new[key] = (*item[:4], split_document(item[4], PIECE_TOKENS, tokenizer, ids))
                writing.result()
            except BaseException:
                wait([writing])
                self._drop_unused_blobs(pack_digests)
                raise
        self._ready()
        pieces: list[Node] = []
        with self.store.write() as db:
            # Put again inside the transaction: only a blob that a concurrent delete of the same text removed since
            # is written here, and from here on no delete can remove it before this commit refers to it.
            self.blobs.put_many(pack_datas, pack_digests)  # hashed once, above
            for (key, (place, name, data, digest, ranges)), (pack, at) in zip(new.items(), places):
                # Checked again inside the transaction: another process or thread may have added it meanwhile.
                doc = self.store.by_key(key)
                if doc is None:
                    doc = self.store.insert(db, "document", 0, pack_digests[pack], at, at + len(data),
                                            sum(r[2] for r in ranges), key, name=name, tags=tags)
                    pieces += self.store.insert_pieces(db, doc, [(at + a, at + b, t) for a, b, t in ranges])
                out[place] = doc
            if pieces:
                self.store.bump(db)
        self._indexed(pieces, progress)
        # A text given twice under one name is the node made for its first place.
        return [node if node is not None else out[new[key][0]] for node, key in zip(out, keys)]

    def add_file(self, path: Path | str, name: str | None = None, tags: Iterable[str] = (),
                 progress: Progress | None = None) -> Node:
        """Add a UTF-8 text file; a binary or undecodable file is refused with its name and the first bad byte."""
        return self.add_files([path], None if name is None else [name], tags, progress)[0]

    def add_files(self, paths: Iterable[Path | str], names: Iterable[str] | None = None, tags: Iterable[str] = (),
                  progress: Progress | None = None) -> list[Node]:
        """`add_file` of each, in one `add_all`; a file that cannot be read refuses them all, before anything is added."""
        paths = [Path(p) for p in paths]
        names = [str(p) for p in paths] if names is None else list(names)
        return self.add_all([(name, _file_text(path)) for name, path in zip(names, paths)], tags, progress)

    def pieces(self, doc: Node, limit: int, tokenizer: Tokenizer) -> list[Node]:
        """A document's pieces, each at most `limit` tokens (a larger piece is cut further, once, and kept)."""
        return self.pieces_of_all([doc], limit, tokenizer)

    def pieces_of_all(self, docs: list[Node], limit: int, tokenizer: Tokenizer) -> list[Node]:
        """`pieces` of each document, one after another (read from the store in a few queries)."""
        children = self.store.children_of_all([doc.id for doc in docs])
        out: list[Node] = []
        for doc in docs:
            for piece in children[doc.id]:
                out += self._within(piece, limit, tokenizer)
        return out

    def _within(self, piece: Node, limit: int, tokenizer: Tokenizer) -> list[Node]:
        if piece.tokens <= limit:
            return [piece]
        smaller = self.store.children(piece.id)
        if not smaller:
            text = self.text(piece)
            ranges = split_document(text, limit, tokenizer)
            with self.store.write() as db:
                smaller = self.store.insert_pieces(db, piece, [(piece.start + a, piece.start + b, tokens)
                                                               for a, b, tokens in ranges])
                self.store.bump(db)
            self._indexed(smaller)
        out: list[Node] = []
        for node in smaller:
            out += self._within(node, limit, tokenizer)
        return out

    # ---- fitting ----------------------------------------------------------------------------------------

    def fit(self, documents: Iterable[Node | int | str], model: object, share: float = 0.25, *,
            context_window: int | None = None, summarizer: Summarizer | None = None,
            progress: Progress | None = None) -> View:
        """A view of `documents` within `share` of `model`'s context window (see docs/memory.md).

        Documents are nodes, node ids, or texts (added first). `model` is a Model, a name ("gpt-4o") or
        "name:TOKENS"; `context_window` overrides the window. Summaries are cached in the store. `progress(level,
        summaries written)` hears of each level of summaries as it is done.
        """
        docs = []
        for item in documents:
            if isinstance(item, str):
                docs.append(self.add(item))
            else:
                node = item if isinstance(item, Node) else self.get(item)
                docs.append(node)
        if not docs:
            raise MemoryInputError("fit needs at least one document")
        budget = Budget.for_model(model, share, context_window)
        self._ready()
        builder = TreeBuilder(self, budget, summarizer or ExtractiveSummarizer(), self._indexed, progress)
        return builder.fit(docs)

    # ---- changing -------------------------------------------------------------------------------------

    def delete(self, document: Node | int) -> list[int]:
        """Forget a document, its pieces and every summary over them, in the store and both indexes."""
        doc = document if isinstance(document, Node) else self.get(document)
        if doc.kind != "document":
            raise MemoryInputError(f"#{doc.id} is a {doc.kind}; only documents can be deleted")
        blobs = {doc.blob}
        self._ready()
        with self.store.write() as db:
            removed = self.store.delete_document(db, doc.id)
            self.store.bump(db)
            # Decided inside the transaction, so an add of the same text (which writes its blob in its own
            # transaction) cannot be left pointing at a deleted blob.
            for blob in blobs:
                if not self.store.blob_in_use(blob):
                    self.blobs.delete(blob)
        if self._search is not None:
            self._search.remove(removed)
        return removed

    def update(self, document: Node | int, text: str) -> Node:
        """Replace a document's text: the old nodes go (store and indexes), the new text is added under its name."""
        doc = document if isinstance(document, Node) else self.get(document)
        new = self.add(text, name=doc.name, tags=doc.tags)
        if new.id != doc.id:
            self.delete(doc)
        return new

    # ---- search ---------------------------------------------------------------------------------------

    def search_index(self):
        """The hybrid search index (opened on first use; rebuilt from the store if missing, stale or corrupt)."""
        if self._search is None:
            from orgtree_lang.memory.search import SearchIndex

            self._search = SearchIndex(self.index_dir, self, notice=self.notice, vectors=self.vectors)
        return self._search

    def search(self, query: str, k: int = 10, *, documents: list[int] | None = None, levels: list[int] | None = None,
               tags: list[str] | None = None, mode: str = "hybrid") -> list:
        """The `k` nodes best matching `query` (mode: hybrid, keyword or vector), filtered; see docs/memory.md."""
        return self.search_index().search(query, k, documents=documents, levels=levels, tags=tags, mode=mode)

    def _drop_unused_blobs(self, digests: list[str]) -> None:
        """Delete those of these blobs no node or summary refers to (written for an add that then failed)."""
        with self.store.write():
            for digest in digests:
                if not self.store.blob_in_use(digest):
                    self.blobs.delete(digest)

    def _ready(self) -> None:
        """Open the indexes before the store changes, so they are in step with it and only get the change."""
        if self.indexing:
            self.search_index()

    def _indexed(self, nodes: list[Node], progress: Progress | None = None) -> None:
        if self.indexing and nodes:
            self.search_index().add(nodes, progress)


# The most bytes of documents put into one pack; a bigger document is a pack of its own.
PACK_BYTES = 64 * 1024 * 1024


def pack_documents(datas: list[bytes], digests: list[str]) -> tuple[list[bytes], list[str], list[tuple[int, int]]]:
    """Documents' bytes (and their sha256s) laid out in packs: blobs of up to PACK_BYTES holding documents one
    after another, so an add of a thousand files writes and fsyncs a few files where a blob each made a thousand
    (on a 2-core machine the writes alone took longer than tokenizing the text). A document is its pack's byte
    range, the same text twice is stored once, and a pack of one document is that document's own blob.

    Returns the packs' bytes, their sha256s, and for each document (pack index, byte offset in that pack)."""
    groups: list[list[int]] = []  # indexes into datas, each a text not seen before
    size = 0  # of the last group
    seen: set[str] = set()
    for index, (data, digest) in enumerate(zip(datas, digests)):
        if digest in seen:
            continue
        seen.add(digest)
        if not groups or size + len(data) > PACK_BYTES:
            groups.append([])
            size = 0
        groups[-1].append(index)
        size += len(data)
    packs, pack_digests = [], []
    where: dict[str, tuple[int, int]] = {}
    for number, group in enumerate(groups):
        offset = 0
        for index in group:
            where[digests[index]] = (number, offset)
            offset += len(datas[index])
        if len(group) == 1:
            packs.append(datas[group[0]])
            pack_digests.append(digests[group[0]])
        else:
            packs.append(b"".join(datas[index] for index in group))
            pack_digests.append(hashlib.sha256(packs[-1]).hexdigest())
    return packs, pack_digests, [where[digest] for digest in digests]


def _file_text(path: Path) -> str:
    """A UTF-8 text file's text; a binary or undecodable file is refused with its name and the first bad byte."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise MemoryInputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if b"\0" in data[:8192]:
        raise MemoryInputError(f"{path} looks binary (it has NUL bytes); only text files can be added")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MemoryInputError(f"{path} is not UTF-8 text: byte {exc.start} is {data[exc.start]:#04x}; "
                               f"convert it first (e.g. iconv -t utf-8)") from None


def fit(documents: Iterable[Node | int | str], model: object, share: float = 0.25, *, memory: Memory | None = None,
        context_window: int | None = None, summarizer: Summarizer | None = None) -> View:
    """`Memory.fit` on `memory`, or on a temporary, unindexed memory (nothing is cached between calls then)."""
    if memory is not None:
        return memory.fit(documents, model, share, context_window=context_window, summarizer=summarizer)
    with Memory(None, index=False) as scratch:
        return scratch.fit(documents, model, share, context_window=context_window, summarizer=summarizer)
