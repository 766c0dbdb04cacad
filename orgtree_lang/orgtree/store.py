"""Org tree nodes in the workspace's state.db: written in batches by a run, read by `pipe tree` and call history."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from operator import attrgetter
from pathlib import Path
from typing import Any

from orgtree_lang.runtime.state_db import Transaction, open_state_db, state_db_path

KINDS = ("pipeline", "skill", "ambiguous")
STATUSES = ("running", "ok", "error", "interrupted")  # interrupted: the process running it died first
# state.db's tree_nodes CHECK allows running, ok and error (migration 1, which cannot change): an interrupted node
# is stored as an error whose text starts with this mark, and read back as interrupted.
_INTERRUPTED_MARK = "[interrupted] "


@dataclass(slots=True)
class TreeNode:
    """One node: a run's entry, a pipeline call, a skill call, or an ambiguous block with its generated child."""

    id: str
    run_id: str
    parent_id: str | None
    seq: int
    name: str
    kind: str
    caller: str
    status: str
    inputs: str
    output: str
    error: str | None
    started_at: float
    duration_ms: float | None
    tokens: int = 0
    cost: float = 0.0
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# A run's own nodes and those of the generated children under it (their run ids extend it after a `/`).
_IN_RUN = "(run_id = ? OR substr(run_id, 1, length(?)) = ?)"


def _in_run_args(run_id: str) -> list[str]:
    return [run_id, run_id + "/", run_id + "/"]

_COLUMNS = tuple(f.name for f in fields(TreeNode))
_ROW = attrgetter(*_COLUMNS)
_INSERT = (f"INSERT OR REPLACE INTO tree_nodes ({', '.join(_COLUMNS)}) "
           f"VALUES ({', '.join('?' for _ in _COLUMNS)})")


def _stored(node: TreeNode) -> TreeNode:
    if node.status != "interrupted":
        return node
    return replace(node, status="error", error=_INTERRUPTED_MARK + (node.error or ""))


def _read(node: TreeNode) -> TreeNode:
    if node.status == "error" and node.error is not None and node.error.startswith(_INTERRUPTED_MARK):
        node.status, node.error = "interrupted", node.error[len(_INTERRUPTED_MARK):] or None
    return node


class TreeStore:
    """Reads and writes the `tree_nodes` table of one state.db."""

    def __init__(self, db_path: Path | str, *, synchronous: str = "NORMAL") -> None:
        self.path = Path(db_path)
        self.db = open_state_db(self.path, synchronous=synchronous)

    @classmethod
    def for_workspace(cls, workspace_root: Path | str) -> TreeStore:
        return cls(state_db_path(workspace_root))

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> TreeStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def write(self, nodes: list[TreeNode]) -> None:
        """Insert or replace `nodes` in one transaction (a resumed run rewrites the nodes it runs again)."""
        if not nodes:
            return
        with Transaction(self.db) as db:
            db.executemany(_INSERT, (_ROW(_stored(node)) for node in nodes))

    def _select(self, where: str, args: tuple[Any, ...], order: str, limit: int | None = None) -> list[TreeNode]:
        sql = f"SELECT {', '.join(_COLUMNS)} FROM tree_nodes WHERE {where} ORDER BY {order}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [_read(TreeNode(**dict(row))) for row in self.db.execute(sql, args)]

    def calls(self, name: str | None = None, run_id: str | None = None, limit: int | None = 100) -> list[TreeNode]:
        """Calls of skill or pipeline `name` (any, if None), newest first; only run `run_id`'s if given."""
        where, args = ["1"], []
        if name is not None:
            where.append("name = ?")
            args.append(name)
        if run_id is not None:
            where.append(_IN_RUN)
            args += _in_run_args(run_id)
        return self._select(" AND ".join(where), tuple(args), "started_at DESC, seq DESC", limit)

    def count(self, name: str, kind: str, status: str) -> int:
        """How many nodes named `name` of this kind ended with this status, over every recorded run."""
        row = self.db.execute("SELECT COUNT(*) FROM tree_nodes WHERE name = ? AND kind = ? AND status = ?",
                              (name, kind, status)).fetchone()
        return int(row[0])

    def run_nodes(self, run_id: str) -> list[TreeNode]:
        """Every node of run `run_id` and of the generated children under it, in the order they opened."""
        return self._select(_IN_RUN, tuple(_in_run_args(run_id)), "started_at, seq")

    def node(self, node_id: str) -> TreeNode | None:
        found = self._select("id = ?", (node_id,), "seq")
        return found[0] if found else None

    def run_ids(self) -> list[str]:
        """Top-level runs with nodes, newest first."""
        rows = self.db.execute("SELECT run_id, MIN(started_at) AS first FROM tree_nodes WHERE parent_id IS NULL "
                               "GROUP BY run_id ORDER BY first DESC")
        return [row["run_id"] for row in rows]
