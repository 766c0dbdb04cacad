"""The memory's tables in state.db: nodes, their children, the documents each covers, and the summary cache."""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from orgtree_lang.memory.nodes import Node, Span
from orgtree_lang.runtime.state_db import Transaction, open_state_db

_NODE_COLUMNS = "id, kind, level, blob, start, end, tokens, document, name, tags"


def _node(row: tuple) -> Node:
    tags = row[9]
    return Node(row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8],
                () if tags == "[]" else tuple(json.loads(tags)))  # most nodes have none: no JSON to read


class NodeStore:
    """The memory tables of one state.db (WAL); every change bumps a generation number the indexes compare with."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = open_state_db(self.path, synchronous="NORMAL", timeout=30)
        self.db.row_factory = None  # rows as tuples, as this store reads them

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One transaction: everything inside commits together, or nothing does."""
        with Transaction(self.db) as db:
            yield db

    # ---- generation -------------------------------------------------------------------------------------

    def generation(self) -> int:
        row = self.db.execute("SELECT value FROM memory_meta WHERE key = 'generation'").fetchone()
        return int(row[0]) if row else 0

    def bump(self, db: sqlite3.Connection) -> None:
        """Inside a write: mark the store changed, so an index that missed the change knows it is stale."""
        db.execute("INSERT INTO memory_meta (key, value) VALUES ('generation', '1') ON CONFLICT(key) "
                   "DO UPDATE SET value = CAST(value AS INTEGER) + 1")

    # ---- nodes ------------------------------------------------------------------------------------------

    def insert(self, db: sqlite3.Connection, kind: str, level: int, blob: str, start: int, end: int, tokens: int,
               key: str, document: int | None = None, name: str = "", tags: tuple[str, ...] = (),
               children: list[int] = (), covers: set[int] = frozenset()) -> Node:
        """Inside a write: add one node with its children and covered documents; a document covers itself."""
        cursor = db.execute(
            "INSERT INTO memory_nodes (kind, level, blob, start, end, tokens, document, name, tags, key, created) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (kind, level, blob, start, end, tokens, document, name, json.dumps(list(tags)), key, time.time()))
        node_id = cursor.lastrowid
        if kind == "document":
            document = node_id
            db.execute("UPDATE memory_nodes SET document = ? WHERE id = ?", (node_id, node_id))
            covers = {node_id}
        db.executemany("INSERT INTO memory_edges (parent, position, child) VALUES (?, ?, ?)",
                       [(node_id, i, child) for i, child in enumerate(children)])
        db.executemany("INSERT INTO memory_covers (node, document) VALUES (?, ?)", [(node_id, d) for d in covers])
        return Node(node_id, kind, level, blob, start, end, tokens, document, name, tuple(tags))

    def insert_pieces(self, db: sqlite3.Connection, parent: Node, ranges: list[tuple[int, int, int]]) -> list[Node]:
        """Inside a write: the pieces (byte start, byte end, tokens) of `parent`'s blob, in order, as `parent`'s
        children (a document's, or a piece cut smaller), each covering the document: a statement per table."""
        document, blob, now = parent.document, parent.blob, time.time()
        db.executemany("INSERT INTO memory_nodes (kind, level, blob, start, end, tokens, document, name, tags, key, "
                       "created) VALUES ('piece', 0, ?, ?, ?, ?, ?, '', '[]', ?, ?)",
                       [(blob, start, end, tokens, document, f"piece:{document}:{start}:{end}", now)
                        for start, end, tokens in ranges])
        # The write holds the database's only write lock: the rows just inserted are the last ids, in order.
        last = db.execute("SELECT last_insert_rowid()").fetchone()[0]
        ids = range(last - len(ranges) + 1, last + 1)
        db.executemany("INSERT INTO memory_edges (parent, position, child) VALUES (?, ?, ?)",
                       [(parent.id, i, child) for i, child in enumerate(ids)])
        db.executemany("INSERT INTO memory_covers (node, document) VALUES (?, ?)", [(child, document) for child in ids])
        return [Node(child, "piece", 0, blob, start, end, tokens, document, "", ())
                for child, (start, end, tokens) in zip(ids, ranges)]

    def get(self, node_id: int) -> Node | None:
        row = self.db.execute(f"SELECT {_NODE_COLUMNS} FROM memory_nodes WHERE id = ?", (node_id,)).fetchone()
        return _node(row) if row else None

    def by_key(self, key: str) -> Node | None:
        row = self.db.execute(f"SELECT {_NODE_COLUMNS} FROM memory_nodes WHERE key = ?", (key,)).fetchone()
        return _node(row) if row else None

    def many(self, ids: list[int]) -> list[Node]:
        """The nodes with these ids, in the order given (ids not stored are left out)."""
        found: dict[int, Node] = {}
        for chunk in range(0, len(ids), 500):
            part = ids[chunk:chunk + 500]
            marks = ",".join("?" * len(part))
            for row in self.db.execute(f"SELECT {_NODE_COLUMNS} FROM memory_nodes WHERE id IN ({marks})", part):
                found[row[0]] = _node(row)
        return [found[i] for i in ids if i in found]

    def children(self, node_id: int) -> list[Node]:
        return self.children_of_all([node_id])[node_id]

    def children_of_all(self, node_ids: list[int]) -> dict[int, list[Node]]:
        """The children of each node, in order, in a query per 500 nodes."""
        found: dict[int, list[Node]] = {node_id: [] for node_id in node_ids}
        columns = _NODE_COLUMNS.replace(", ", ", n.")
        for chunk in range(0, len(node_ids), 500):
            part = node_ids[chunk:chunk + 500]
            marks = ",".join("?" * len(part))
            for row in self.db.execute(f"SELECT e.parent, n.{columns} FROM memory_edges e JOIN memory_nodes n "
                                       f"ON n.id = e.child WHERE e.parent IN ({marks}) ORDER BY e.parent, e.position",
                                       part):
                found[row[0]].append(_node(row[1:]))
        return found

    def parents(self, node_id: int) -> list[Node]:
        ids = [r[0] for r in self.db.execute("SELECT parent FROM memory_edges WHERE child = ?", (node_id,))]
        return self.many(ids)

    def documents(self) -> list[Node]:
        rows = self.db.execute(f"SELECT {_NODE_COLUMNS} FROM memory_nodes WHERE kind = 'document' ORDER BY id")
        return [_node(r) for r in rows]

    def all_ids(self) -> list[int]:
        return [r[0] for r in self.db.execute("SELECT id FROM memory_nodes WHERE kind != 'document' ORDER BY id")]

    def covered_documents(self, node_id: int) -> list[int]:
        return [r[0] for r in self.db.execute("SELECT document FROM memory_covers WHERE node = ? ORDER BY document",
                                              (node_id,))]

    def tags_of(self, node: Node) -> set[str]:
        """A node's own tags and those of every document it covers."""
        tags = set(node.tags)
        for (raw,) in self.db.execute("SELECT n.tags FROM memory_covers c JOIN memory_nodes n ON n.id = c.document "
                                      "WHERE c.node = ?", (node.id,)):
            tags.update(json.loads(raw))
        return tags

    def leaves(self, node_id: int) -> list[Node]:
        """The pieces under a node that have no smaller pieces of their own, in text order."""
        rows = self.db.execute(
            "WITH RECURSIVE walk(id, path) AS (SELECT ?, '' UNION ALL "
            "SELECT e.child, walk.path || printf('%08d', e.position) FROM memory_edges e JOIN walk ON e.parent = walk.id) "
            f"SELECT n.{_NODE_COLUMNS.replace(', ', ', n.')} FROM walk JOIN memory_nodes n ON n.id = walk.id "
            "WHERE n.kind = 'piece' AND NOT EXISTS (SELECT 1 FROM memory_edges x WHERE x.parent = n.id) "
            "ORDER BY walk.path", (node_id,))
        return [_node(r) for r in rows]

    def spans(self, node: Node) -> list[Span]:
        """The original bytes a node stands for: merged consecutive ranges of the documents under it, counted from
        each document's start (a document is a byte range of its blob, see memory.pack_documents)."""
        if node.kind == "document":
            return [Span(node.id, node.name, 0, node.end - node.start)]
        documents: dict[int, tuple[str, int]] = {}  # id -> (name, where it starts in its blob)
        spans: list[Span] = []
        for leaf in self.leaves(node.id):
            if leaf.document not in documents:
                doc = self.get(leaf.document)
                documents[leaf.document] = (doc.name, doc.start) if doc else ("", 0)
            name, base = documents[leaf.document]
            start, end = leaf.start - base, leaf.end - base
            last = spans[-1] if spans else None
            if last and last.document == leaf.document and last.end == start:
                spans[-1] = Span(last.document, last.name, last.start, end)
            else:
                spans.append(Span(leaf.document, name, start, end))
        return spans

    def filter_ids(self, documents: list[int] | None = None, levels: list[int] | None = None,
                   tags: list[str] | None = None) -> set[int]:
        """Ids of the searchable nodes (pieces and summaries) that pass every given filter."""
        sql = "SELECT DISTINCT n.id FROM memory_nodes n JOIN memory_covers c ON c.node = n.id " \
              "JOIN memory_nodes d ON d.id = c.document WHERE n.kind != 'document'"
        args: list = []
        if documents:
            sql += f" AND c.document IN ({','.join('?' * len(documents))})"
            args += documents
        if levels:
            sql += f" AND n.level IN ({','.join('?' * len(levels))})"
            args += levels
        if tags:
            sql += " AND EXISTS (SELECT 1 FROM json_each(d.tags) WHERE json_each.value IN " \
                   f"({','.join('?' * len(tags))}))"
            args += tags
        return {r[0] for r in self.db.execute(sql, args)}

    # ---- summary cache ----------------------------------------------------------------------------------

    def cached_summary(self, key: str) -> tuple[str, int] | None:
        row = self.db.execute("SELECT blob, tokens FROM memory_summaries WHERE key = ?", (key,)).fetchone()
        return (row[0], row[1]) if row else None

    def cache_summary(self, db: sqlite3.Connection, key: str, blob: str, tokens: int) -> None:
        db.execute("INSERT OR REPLACE INTO memory_summaries (key, blob, tokens) VALUES (?, ?, ?)", (key, blob, tokens))

    # ---- deleting ---------------------------------------------------------------------------------------

    def delete_document(self, db: sqlite3.Connection, document: int) -> list[int]:
        """Inside a write: remove a document, its pieces and every summary over them; returns the removed ids."""
        ids = [r[0] for r in db.execute("SELECT node FROM memory_covers WHERE document = ?", (document,))]
        for chunk in range(0, len(ids), 500):
            part = ids[chunk:chunk + 500]
            marks = ",".join("?" * len(part))
            db.execute(f"DELETE FROM memory_nodes WHERE id IN ({marks})", part)
            db.execute(f"DELETE FROM memory_edges WHERE parent IN ({marks}) OR child IN ({marks})", part + part)
            db.execute(f"DELETE FROM memory_covers WHERE node IN ({marks})", part)
            db.execute(f"DELETE FROM memory_vectors WHERE node IN ({marks})", part)
        return ids

    def blob_in_use(self, blob: str) -> bool:
        return self.db.execute("SELECT 1 FROM memory_nodes WHERE blob = ? UNION ALL "
                               "SELECT 1 FROM memory_summaries WHERE blob = ? LIMIT 1", (blob, blob)).fetchone() \
            is not None

    # ---- vectors ----------------------------------------------------------------------------------------

    def vectors(self, model: str) -> list[tuple[int, bytes]]:
        return list(self.db.execute("SELECT node, vector FROM memory_vectors WHERE model = ? ORDER BY node", (model,)))

    def vectors_of(self, model: str, ids: list[int]) -> dict[int, bytes]:
        """The saved embeddings of some nodes (those that have one), by node id."""
        found: dict[int, bytes] = {}
        for chunk in range(0, len(ids), 500):
            part = ids[chunk:chunk + 500]
            marks = ",".join("?" * len(part))
            found.update(self.db.execute(f"SELECT node, vector FROM memory_vectors WHERE model = ? AND node IN "
                                         f"({marks})", [model, *part]))
        return found

    def save_vectors(self, model: str, rows: list[tuple[int, bytes]]) -> None:
        with self.write() as db:
            db.executemany("INSERT OR REPLACE INTO memory_vectors (node, model, vector) VALUES (?, ?, ?)",
                           [(node, model, vector) for node, vector in rows])
