"""Org tree nodes in the workspace's state.db: written in batches by a run, read by `pipe tree` and call history.

Two tables hold them. `tree_nodes` has one row per node: run entries, ambiguous blocks, and calls that were
still running when a batch was written (so `pipe tree` shows them while they run). `tree_calls` holds
finished calls as groups: one row per batch, caller node, name and kind, with the calls as a JSON list. A
loop of a thousand trivial calls then costs SQLite one row, not a thousand, and readers see the same nodes."""

from __future__ import annotations

import base64
import json
from array import array
from dataclasses import asdict, dataclass, fields
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any

from orgtree_lang.runtime.state_db import Transaction, open_state_db, state_db_path

KINDS = ("pipeline", "skill", "ambiguous", "branch", "decision")  # branch: of a parallel block or loop; decision:
# a block node's agent deciding what a message means (docs/org.md)
# A node is open while running, waiting (its run waits for a person's answer) or receiving (it waits in
# `receive` for a message); it ended ok, with an error, cancelled (by `cancel`, or a failed sibling branch), or
# interrupted (the process running it died first: durable/reconcile.py says so once no process holds the run).
OPEN = ("running", "waiting", "receiving")
STATUSES = (*OPEN, "ok", "error", "cancelled", "interrupted")


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
row_of = _ROW  # a node as the tuple write_rows takes
_INSERT = (f"INSERT OR REPLACE INTO tree_nodes ({', '.join(_COLUMNS)}) "
           f"VALUES ({', '.join('?' for _ in _COLUMNS)})")
_INSERT_GROUP = ("INSERT INTO tree_calls (run_id, parent_id, name, kind, caller, first_started, last_started, ok, "
                 "errors, calls) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
_GROUP_COLUMNS = "run_id, parent_id, name, kind, caller, calls"
# A group's calls are stored by column (one JSON object; see _encoded): a column whose calls all hold one value is
# that value once, the start times and durations are float64 arrays in base64. Encoding a call as a JSON list of
# its eleven fields cost 1.3 us a call, most of the org tree's budget for a pipeline call
# (benchmarks/orgtree_overhead.py); by column it is about a third of that. Groups written before are JSON lists of
# calls ([[id, seq, status, ...], ...]) and are read as they are.
_CALL_FIELDS = ("id", "seq", "status", "inputs", "output", "error", "started_at", "duration_ms", "tokens", "cost",
                "detail")
_CALL_COLUMNS = (0, 3, 7, 8, 9, 10, 11, 12, 13, 14, 15)  # those fields' places in a TreeNode row
_FLOATS = ("started_at", "duration_ms")
_STARTED, _STATUS = itemgetter(11), itemgetter(7)
_GROUP = itemgetter(1, 2, 4, 5, 6)  # run_id, parent_id, name, kind, caller


def _encoded(members: list[tuple]) -> str:
    """The calls of one group (TreeNode rows) as the JSON text of their columns."""
    columns = list(zip(*members))
    return _encoded_columns({name: columns[place] for name, place in zip(_CALL_FIELDS, _CALL_COLUMNS)},
                            len(members))


def _encoded_columns(columns: dict[str, Any], count: int) -> str:
    """A group's `count` calls, given as a list or tuple of values per field of _CALL_FIELDS (or one value, not
    a list, that every call has), as the JSON text of their columns."""
    data: dict[str, Any] = {}
    for name in _CALL_FIELDS:
        values = columns[name]
        if type(values) is not list and type(values) is not tuple:
            data[name] = values
            continue
        first = values[0]
        if values.count(first) == count and type(values[-1]) is type(first):
            data[name] = first  # one value for every call (a column's values have one type: 0 == 0.0 aside)
        elif name in _FLOATS and first is not None:
            try:
                data[name] = {"f64": base64.b64encode(array("d", values).tobytes()).decode("ascii")}
            except TypeError:  # a None among them (no call here has one, but the format allows it)
                data[name] = list(values)
        else:
            data[name] = list(values)
    data["n"] = count
    return json.dumps(data, separators=(",", ":"))


def _group_row(group: tuple) -> tuple:
    """A tree_calls row for a group given by column: (run_id, parent_id, name, kind, caller, columns, count)."""
    run_id, parent_id, name, kind, caller, columns, count = group
    starts, statuses = columns["started_at"], columns["status"]
    if type(statuses) is str:
        ok, errors = (count, 0) if statuses == "ok" else (0, count if statuses == "error" else 0)
    else:
        ok, errors = statuses.count("ok"), statuses.count("error")
    return (run_id, parent_id, name, kind, caller, min(starts), max(starts), ok, errors,
            _encoded_columns(columns, count))


def _decoded(calls: str) -> list[tuple]:
    """A group's calls as tuples of _CALL_FIELDS, from either stored form."""
    data = json.loads(calls)
    if type(data) is list:  # written before groups were stored by column
        return [tuple(c) for c in data]
    count = data["n"]
    columns = []
    for name in _CALL_FIELDS:
        value = data[name]
        if type(value) is list:
            columns.append(value)
        elif type(value) is dict:
            floats = array("d")
            floats.frombytes(base64.b64decode(value["f64"]))
            columns.append(floats.tolist())
        else:
            columns.append([value] * count)
    return list(zip(*columns))


def _grouped(rows: list[tuple]) -> list[tuple]:
    """Finished call rows (TreeNode field order) as tree_calls rows, one per caller node, name and kind."""
    groups: dict[tuple, list[tuple]] = {}
    for row in rows:
        key = _GROUP(row)
        found = groups.get(key)
        if found is None:
            groups[key] = [row]
        else:
            found.append(row)
    out = []
    for (run_id, parent_id, name, kind, caller), members in groups.items():
        starts = list(map(_STARTED, members))
        statuses = list(map(_STATUS, members))
        out.append((run_id, parent_id, name, kind, caller, min(starts), max(starts), statuses.count("ok"),
                    statuses.count("error"), _encoded(members)))
    return out


def _expand(row) -> list[TreeNode]:
    run_id, parent_id, name, kind, caller, calls = row
    return [TreeNode(c[0], run_id, parent_id, c[1], name, kind, caller, c[2], c[3], c[4], c[5], c[6], c[7], c[8],
                     c[9], c[10]) for c in _decoded(calls)]


def _merged(*sources: list[TreeNode]) -> dict[str, TreeNode]:
    """Nodes by id; where one id comes twice (a call that was running in one write and finished in a later one,
    or a resumed run's call made again), the finished one, else the later one, wins."""
    merged: dict[str, TreeNode] = {}
    for nodes in sources:
        for node in nodes:
            before = merged.get(node.id)
            if before is None or before.status in OPEN or node.status not in OPEN:
                merged[node.id] = node
    return merged


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
        self.write_rows([_ROW(node) for node in nodes])

    def write_rows(self, rows: list[tuple], finished_calls: list[tuple] = (), groups: list[tuple] = ()) -> None:
        """In one transaction: insert or replace `rows` (tuples in TreeNode's field order) as nodes, and add
        `finished_calls` (the same shape; calls that ended and will not change) as groups, and `groups` of such
        calls already given by column: (run_id, parent_id, name, kind, caller, {field: values}, count), where
        the fields are those of a TreeNode but run_id, parent_id, name, kind and caller, and a field's values
        are a list (or tuple), or one value that is no list for every call of the group."""
        if not rows and not finished_calls and not groups:
            return
        with Transaction(self.db) as db:
            if rows:
                db.executemany(_INSERT, rows)
            if finished_calls or groups:
                db.executemany(_INSERT_GROUP, _grouped(finished_calls) + list(map(_group_row, groups)))

    def _groups(self, where: str, args: tuple[Any, ...], order: str = "rowid") -> list[TreeNode]:
        sql = f"SELECT {_GROUP_COLUMNS} FROM tree_calls WHERE {where} ORDER BY {order}"
        return [node for row in self.db.execute(sql, args) for node in _expand(tuple(row))]

    def _select(self, where: str, args: tuple[Any, ...], order: str, limit: int | None = None) -> list[TreeNode]:
        sql = f"SELECT {', '.join(_COLUMNS)} FROM tree_nodes WHERE {where} ORDER BY {order}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [TreeNode(**dict(row)) for row in self.db.execute(sql, args)]

    def calls(self, name: str | None = None, run_id: str | None = None, limit: int | None = 100) -> list[TreeNode]:
        """Calls of skill or pipeline `name` (any, if None), newest first; only run `run_id`'s if given."""
        where, args = ["1"], []
        if name is not None:
            where.append("name = ?")
            args.append(name)
        if run_id is not None:
            where.append(_IN_RUN)
            args += _in_run_args(run_id)
        where_text = " AND ".join(where)
        nodes = self._select(where_text, tuple(args), "started_at DESC, seq DESC", limit)
        newest = sorted(_merged(nodes, self._newest_groups(where_text, tuple(args), limit)).values(),
                        key=lambda n: (n.started_at, n.seq), reverse=True)
        return newest if limit is None else newest[:limit]

    def _newest_groups(self, where: str, args: tuple[Any, ...], limit: int | None) -> list[TreeNode]:
        """The calls of the groups that can hold the `limit` newest calls (groups newest first, expanded until
        the next group's newest call is older than the limit-th found)."""
        sql = f"SELECT {_GROUP_COLUMNS}, last_started FROM tree_calls WHERE {where} ORDER BY last_started DESC"
        found: list[TreeNode] = []
        for row in self.db.execute(sql, args):
            if limit is not None and len(found) >= limit:
                found.sort(key=lambda n: n.started_at, reverse=True)
                if row["last_started"] < found[limit - 1].started_at:
                    break
            found += _expand(tuple(row)[:6])
        return list(reversed(found))  # oldest first, so that a later group's copy of a call wins in _merged

    def count(self, name: str, kind: str, status: str) -> int:
        """How many nodes named `name` of this kind ended with this status, over every recorded run."""
        row = self.db.execute("SELECT COUNT(*) FROM tree_nodes WHERE name = ? AND kind = ? AND status = ?",
                              (name, kind, status)).fetchone()
        column = {"ok": "ok", "error": "errors"}.get(status)
        if column is None:
            return int(row[0])
        grouped = self.db.execute(f"SELECT TOTAL({column}) FROM tree_calls WHERE name = ? AND kind = ?",
                                  (name, kind)).fetchone()
        return int(row[0]) + int(grouped[0])

    def run_nodes(self, run_id: str) -> list[TreeNode]:
        """Every node of run `run_id` and of the generated children under it, in the order they opened."""
        args = tuple(_in_run_args(run_id))
        merged = _merged(self._select(_IN_RUN, args, "started_at, seq"), self._groups(_IN_RUN, args))
        return sorted(merged.values(), key=lambda n: (n.started_at, n.seq))

    def node(self, node_id: str) -> TreeNode | None:
        found = self._select("id = ?", (node_id,), "seq")
        if found and found[0].status not in OPEN:
            return found[0]
        # A finished call sits in its caller's groups; its id is the caller's id, a slash and its own part.
        parent = node_id.rpartition("/")[0]
        grouped = [n for n in self._groups("parent_id = ?", (parent,)) if n.id == node_id]
        return grouped[-1] if grouped else (found[0] if found else None)

    def run_ids(self) -> list[str]:
        """Top-level runs with nodes, newest first."""
        rows = self.db.execute("SELECT run_id, MIN(started_at) AS first FROM tree_nodes WHERE parent_id IS NULL "
                               "GROUP BY run_id ORDER BY first DESC")
        return [row["run_id"] for row in rows]
