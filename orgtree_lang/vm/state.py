"""A run's complete state between steps (frames, tasks, the calls they wait on): plain data that round-trips through JSON.

The organization (org/) schedules the tasks and calls; this module only holds them, so that the machine and the
journal can save and load a run without knowing how it is scheduled."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from orgtree_lang.runtime.values import decode, encode

STATE_FORMAT = 1

# A task's status. ready: may run; blocked: waits for a slow call it issued; joining: waits for the branches of
# its parallel block; awaiting: waits for a spawned task to end; receiving: waits for a message (org/mailboxes.py);
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
    pipeline: str = ""  # set for a remote spawned node (org/remote.py): the call runs this pipeline whole
    # An ambiguous block resolved concurrently (org/block_calls.py), not a skill call: the pipeline and index of
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



@dataclass(eq=False)
class Frame:
    """One active pipeline call: where it is, its operand stack, its locals and its open try blocks."""

    pipeline: str
    pc: int
    stack: list[Any]
    locals: list[Any]
    handlers: list[list[int]] = field(default_factory=list)  # [handler pc, stack depth] per open try
    code: Any = field(default=None, repr=False)  # the CodeObject, attached by the machine; not serialized
    node: str = ""  # the run node this call is: `main`, `main/fetch#2`, ...
    calls: int = 0  # pipeline calls made so far from this frame (numbers its child nodes)
    # `on message m:` (org/mailboxes.py): [slot of m, handler pc] once installed; while the handler runs, where it
    # interrupted the frame: {"pc", "stack", "handlers"} (the statement's stack and try blocks, set aside).
    on_message: list[int] | None = None
    interrupted: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        data = {
            "pipeline": self.pipeline,
            "pc": self.pc,
            "stack": [encode(v) for v in self.stack],
            "locals": [encode(v) for v in self.locals],
            "handlers": [list(h) for h in self.handlers],
            "node": self.node,
            "calls": self.calls,
        }
        if self.on_message is not None:
            data["on_message"] = list(self.on_message)
        if self.interrupted is not None:
            data["interrupted"] = {"pc": self.interrupted["pc"],
                                   "stack": [encode(v) for v in self.interrupted["stack"]],
                                   "handlers": [list(h) for h in self.interrupted["handlers"]]}
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Frame:
        interrupted = data.get("interrupted")
        if interrupted is not None:
            interrupted = {"pc": interrupted["pc"], "stack": [decode(v) for v in interrupted["stack"]],
                           "handlers": [list(h) for h in interrupted["handlers"]]}
        return cls(data["pipeline"], data["pc"], [decode(v) for v in data["stack"]],
                   [decode(v) for v in data["locals"]], [list(h) for h in data["handlers"]],
                   node=data.get("node", ""), calls=data.get("calls", 0), on_message=data.get("on_message"),
                   interrupted=interrupted)

    def __eq__(self, other: object) -> bool:
        # Compared as JSON text: dict equality would ignore key order, which .pipe programs can observe.
        return isinstance(other, Frame) and json.dumps(self.to_json()) == json.dumps(other.to_json())


@dataclass(eq=False)
class RunState:
    """Frames plus counters, output and outcome: everything needed to continue a run elsewhere."""

    run_id: str
    program_hash: str  # compile.api.program_identity: the source and the compiler that made the bytecode
    entry: str
    frames: list[Frame] = field(default_factory=list)
    steps: int = 0
    skill_calls: int = 0
    effect_seq: int = 0  # side-effecting steps asked for so far (each is a journal row in a durable run)
    elapsed: float = 0.0  # wall seconds spent running before the current stretch
    status: str = "ready"  # ready | paused | waiting | done | failed
    output: list[str] = field(default_factory=list)
    result: Any = None
    error: dict[str, Any] | None = None
    # What the run tree spent beyond this run's own counters: model tokens and cost, and the steps and skill
    # calls of its finished generated children (see vm.budget.TreeMeter).
    usage: dict[str, Any] = field(default_factory=dict)
    # With more than one task (org/scheduler.py): every live task (the current one's frames are `frames`),
    # the current task's id, the step at which its turn ends, and the slow calls issued and not delivered.
    # Empty while the run has one task, which then costs nothing more.
    tasks: list[Task] = field(default_factory=list)
    current: int = 0
    slice_end: int = 0
    next_task: int = 1
    calls: list[Call] = field(default_factory=list)
    next_call: int = 0
    # While the run waits for people: the questions it asked (vm.questions.HumanQuestion.to_json()), else empty.
    waiting: list[dict[str, Any]] = field(default_factory=list)
    # Messages (org/mailboxes.py): every message sent so far, in order (id = position + 1, body encoded), the
    # ids waiting in each task's mailbox (by task id), and the tasks waiting in receive (timeout, whether it fired).
    messages: list[dict[str, Any]] = field(default_factory=list)
    mailboxes: dict[str, list[int]] = field(default_factory=dict)
    receiving: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data = {
            "format": STATE_FORMAT,
            "run_id": self.run_id,
            "program_hash": self.program_hash,
            "entry": self.entry,
            "frames": [f.to_json() for f in self.frames],
            "steps": self.steps,
            "skill_calls": self.skill_calls,
            "effect_seq": self.effect_seq,
            "elapsed": self.elapsed,
            "status": self.status,
            "output": list(self.output),
            "result": encode(self.result),
            "error": self.error,
            "usage": dict(self.usage),
        }
        if self.tasks:
            # The current task's frames are `frames`, written once.
            data["tasks"] = [task.to_json(None if task.id == self.current else [f.to_json() for f in task.frames])
                             for task in self.tasks]
            data["current"] = self.current
            data["slice_end"] = self.slice_end
            data["next_task"] = self.next_task
            data["calls"] = [call.to_json() for call in self.calls]
            data["next_call"] = self.next_call
        if self.waiting:
            data["waiting"] = [dict(question) for question in self.waiting]
        if self.messages:
            data["messages"] = [dict(message) for message in self.messages]
            data["mailboxes"] = {key: list(ids) for key, ids in self.mailboxes.items()}
        if self.receiving:
            data["receiving"] = {key: dict(wait) for key, wait in self.receiving.items()}
        return data

    def dumps(self) -> str:
        # No sort_keys: the order of a dict's keys is part of its value (print and `for` show it).
        return json.dumps(self.to_json())

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunState:
        if data.get("format") != STATE_FORMAT:
            raise ValueError(f"run state format {data.get('format')} is not supported (expected {STATE_FORMAT})")
        frames = [Frame.from_json(f) for f in data["frames"]]
        tasks = [Task.from_json(raw, frames if raw["frames"] is None else [Frame.from_json(f) for f in raw["frames"]])
                 for raw in data.get("tasks", ())]
        return cls(
            run_id=data["run_id"],
            program_hash=data["program_hash"],
            entry=data["entry"],
            frames=frames,
            steps=data["steps"],
            skill_calls=data["skill_calls"],
            effect_seq=data.get("effect_seq", 0),
            elapsed=data["elapsed"],
            status=data["status"],
            output=list(data["output"]),
            result=decode(data["result"]),
            error=data["error"],
            usage=dict(data.get("usage", {})),
            tasks=tasks,
            current=data.get("current", 0),
            slice_end=data.get("slice_end", 0),
            next_task=data.get("next_task", 1),
            calls=[Call.from_json(c) for c in data.get("calls", ())],
            next_call=data.get("next_call", 0),
            waiting=list(data.get("waiting", [])),
            messages=[dict(message) for message in data.get("messages", ())],
            mailboxes={key: list(ids) for key, ids in data.get("mailboxes", {}).items()},
            receiving={key: dict(wait) for key, wait in data.get("receiving", {}).items()},
        )

    @classmethod
    def loads(cls, text: str) -> RunState:
        return cls.from_json(json.loads(text))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RunState) and self.dumps() == other.dumps()
