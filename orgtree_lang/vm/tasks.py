"""The tasks of a run: each a frame stack of its own in one RunState, and the table of calls they wait on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from orgtree_lang.runtime.values import decode, encode

# A task's status. ready: may run; blocked: waits for a slow call it issued; joining: waits for the branches of
# its parallel block; awaiting: waits for a spawned task to end; receiving: waits for a message (vm/messages.py);
# done / failed / cancelled: ended (a branch is collected by its parallel block at once, a spawned task when it
# is awaited).
LIVE = ("ready", "blocked", "joining", "awaiting", "receiving")


@dataclass(eq=False)
class Task:
    """One node running concurrently with others: its frames, what it waits on, and how it ended.

    A branch of a `parallel` block runs the block's code in a frame with a copy of the locals of the frame
    that started it; when it ends, the variables it assigned are copied back (the checker makes sure no
    two branches assign the same one), so they are there after the block."""

    id: int
    node: str  # its org tree node: `main/branch#1`
    frames: list[Any]
    status: str = "ready"
    parent: int | None = None  # the task whose parallel block started it
    label: str = ""  # how errors name it: `branch 2 (line 7)`
    cancel: bool = False  # a cancel waits to be seen at its next statement boundary
    cancelled: bool = False  # it has seen one
    error: dict[str, Any] | None = None  # how a failed task failed: message, kind, line
    # For a task joining its parallel block: the branches' start pcs, how many started, the limit, the
    # members' task ids (in branch order) and each member's error (None while running or when it succeeded).
    join: dict[str, Any] | None = None
    kind: str = "branch"  # main (the run's entry), branch (of a parallel block) or spawn
    waiting: int | None = None  # for an awaiting task: the spawned task it waits for
    result: Any = None  # what a spawned task returned
    route: str | None = None  # for a node a route started: its topic (sends to the topic reach it while it lives)

    def to_json(self, frames: list[dict] | None) -> dict[str, Any]:
        return {"id": self.id, "node": self.node, "frames": frames, "status": self.status, "parent": self.parent,
                "label": self.label, "cancel": self.cancel, "cancelled": self.cancelled, "error": self.error,
                "join": _join_json(self.join, encode), "kind": self.kind, "waiting": self.waiting, "result": encode(self.result),
                "route": self.route}

    @classmethod
    def from_json(cls, data: dict[str, Any], frames: list[Any]) -> Task:
        return cls(data["id"], data["node"], frames, data["status"], data["parent"], data["label"],
                   data["cancel"], data["cancelled"], data["error"], _join_json(data["join"], decode), data["kind"],
                   data["waiting"],
                   decode(data["result"]), data.get("route"))


def _join_json(join: dict[str, Any] | None, convert) -> dict[str, Any] | None:
    """A join record with its .pipe values (a parallel loop's items and results) encoded or decoded."""
    if join is None or "items" not in join:
        return join
    return dict(join, items=[convert(v) for v in join["items"]], results=[convert(v) for v in join["results"]])


@dataclass(eq=False)
class Call:
    """A slow call issued and not yet delivered: enough to issue it again after a resume (with the same
    journal step, hence the same idempotency key) and to deliver its result to the task that waits."""

    order: int  # issue order: results are delivered in it
    task: int
    name: str  # the skill
    args: list[Any]
    kwargs: dict[str, Any]
    seq: int | None  # its journal step (None when it is not journaled: pure, or not a durable run)
    node: str  # the journal node of the call
    span: tuple  # file, line, col, end_line, end_col of the call site
    statement: int
    started: float = field(default=0.0, compare=False)  # perf_counter when issued (not saved)
    finished: float = field(default=0.0, compare=False)  # perf_counter when it returned on its worker
    pipeline: str = ""  # set for a remote spawned node (vm/remote.py): the call runs this pipeline whole
    # An ambiguous block resolved concurrently (vm/block_calls.py), not a skill call: the pipeline and index of
    # its spec and its org tree node; `name` is then the block's name and `args` its input values.
    block: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        data = {"order": self.order, "task": self.task, "name": self.name, "args": [encode(a) for a in self.args],
                "kwargs": {k: encode(v) for k, v in self.kwargs.items()}, "seq": self.seq, "node": self.node,
                "span": list(self.span), "statement": self.statement,
                **({"pipeline": self.pipeline} if self.pipeline else {})}
        if self.block is not None:
            data["block"] = dict(self.block)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Call:
        return cls(data["order"], data["task"], data["name"], [decode(a) for a in data["args"]],
                   {k: decode(v) for k, v in data["kwargs"].items()}, data["seq"], data["node"],
                   tuple(data["span"]), data["statement"], pipeline=data.get("pipeline", ""),
                   block=data.get("block"))
