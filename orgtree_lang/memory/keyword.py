"""The keyword index: node texts in, BM25-ranked node ids out (tantivy, under `.orgtree/index/keyword/`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

WRITER_HEAP = 64 * 1024 * 1024


def _schema():
    import tantivy

    builder = tantivy.SchemaBuilder()
    builder.add_integer_field("node", stored=True, indexed=True, fast=True)
    builder.add_text_field("text", stored=False)
    builder.add_integer_field("documents", indexed=True)
    builder.add_integer_field("level", indexed=True)
    builder.add_text_field("tags", tokenizer_name="raw")
    return builder.build()


class KeywordIndex:
    """A tantivy index with one entry per node: its text, level, covered documents and tags (for filters)."""

    def __init__(self, folder: Path) -> None:
        import tantivy

        self.folder = Path(folder)
        self.stamp_path = self.folder.parent / "keyword.json"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.schema = _schema()
        self.index = tantivy.Index(self.schema, path=str(self.folder), reuse=True)
        self._writer = None

    @classmethod
    def fresh(cls, folder: Path) -> KeywordIndex:
        """An empty index in `folder`, replacing whatever was there."""
        shutil.rmtree(folder, ignore_errors=True)
        Path(folder).parent.joinpath("keyword.json").unlink(missing_ok=True)
        return cls(folder)

    def stamp(self) -> int | None:
        """The store generation this index was last brought up to (None if never)."""
        try:
            return int(json.loads(self.stamp_path.read_text())["generation"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def set_stamp(self, generation: int) -> None:
        temp = self.stamp_path.with_suffix(".tmp")
        temp.write_text(json.dumps({"generation": generation}))
        temp.replace(self.stamp_path)

    def writer(self):
        if self._writer is None:
            self._writer = self.index.writer(heap_size=WRITER_HEAP, num_threads=1)
        return self._writer

    def add(self, entries: list[tuple[int, str, int, list[int], list[str]]]) -> None:
        """Add (node id, text, level, documents, tags) entries and commit them."""
        import tantivy

        writer = self.writer()
        for node, text, level, documents, tags in entries:
            doc = tantivy.Document()
            doc.add_integer("node", node)
            doc.add_text("text", text)
            doc.add_integer("level", level)
            for d in documents:
                doc.add_integer("documents", d)
            for tag in tags:
                doc.add_text("tags", tag)
            writer.add_document(doc)
        writer.commit()
        writer.wait_merging_threads()
        self._writer = None
        self.index.reload()

    def remove(self, nodes: list[int]) -> None:
        writer = self.writer()
        for node in nodes:
            writer.delete_documents_by_term("node", node)
        writer.commit()
        writer.wait_merging_threads()
        self._writer = None
        self.index.reload()

    def count(self) -> int:
        return self.index.searcher().num_docs

    def search(self, query: str, k: int, documents: list[int] | None = None, levels: list[int] | None = None,
               tags: list[str] | None = None) -> list[tuple[int, float]]:
        """(node id, BM25 score) of the best `k` matches, best first; query syntax errors are forgiven."""
        import tantivy

        parsed, _errors = self.index.parse_query_lenient(query, ["text"])
        clauses = [(tantivy.Occur.Must, parsed)]
        for field, values in (("documents", documents), ("level", levels), ("tags", tags)):
            if values:
                clauses.append((tantivy.Occur.Must, tantivy.Query.term_set_query(self.schema, field, list(values))))
        combined = tantivy.Query.boolean_query(clauses) if len(clauses) > 1 else parsed
        searcher = self.index.searcher()
        result = searcher.search(combined, limit=k)
        return [(searcher.doc(address)["node"][0], score) for score, address in result.hits]

    def close(self) -> None:
        self._writer = None
