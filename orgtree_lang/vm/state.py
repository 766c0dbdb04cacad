"""The complete state of a run between steps, as plain data that round-trips through JSON exactly."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from orgtree_lang.runtime.values import decode, encode
from orgtree_lang.vm.tasks import Call, Task

STATE_FORMAT = 1


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

    def to_json(self, locals_of: list[int] | None = None) -> dict[str, Any]:
        """`locals_of` ([task id, frame index]) names the frame whose locals this one shares (a branch of a
        parallel block shares its block's), written once there."""
        data = {
            "pipeline": self.pipeline,
            "pc": self.pc,
            "stack": [encode(v) for v in self.stack],
            "locals": [encode(v) for v in self.locals] if locals_of is None else None,
            "handlers": [list(h) for h in self.handlers],
            "node": self.node,
            "calls": self.calls,
        }
        if locals_of is not None:
            data["locals_of"] = list(locals_of)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Frame:
        local_values = data["locals"]
        return cls(data["pipeline"], data["pc"], [decode(v) for v in data["stack"]],
                   [decode(v) for v in local_values] if local_values is not None else [],
                   [list(h) for h in data["handlers"]], node=data.get("node", ""), calls=data.get("calls", 0))

    def __eq__(self, other: object) -> bool:
        # Compared as JSON text: dict equality would ignore key order, which .pipe programs can observe.
        return isinstance(other, Frame) and json.dumps(self.to_json()) == json.dumps(other.to_json())


@dataclass(eq=False)
class RunState:
    """Frames plus counters, output and outcome: everything needed to continue a run elsewhere."""

    run_id: str
    program_hash: str
    entry: str
    frames: list[Frame] = field(default_factory=list)
    steps: int = 0
    skill_calls: int = 0
    effect_seq: int = 0  # side-effecting steps asked for so far (each is a journal row in a durable run)
    elapsed: float = 0.0  # wall seconds spent running before the current stretch
    status: str = "ready"  # ready | paused | done | failed
    output: list[str] = field(default_factory=list)
    result: Any = None
    error: dict[str, Any] | None = None
    # What the run tree spent beyond this run's own counters: model tokens and cost, and the steps and skill
    # calls of its finished generated children (see vm.budget.TreeMeter).
    usage: dict[str, Any] = field(default_factory=dict)
    # With more than one task (vm/scheduler.py): every live task (the current one's frames are `frames`),
    # the current task's id, the step at which its turn ends, and the slow calls issued and not delivered.
    # Empty while the run has one task, which then costs nothing more.
    tasks: list[Task] = field(default_factory=list)
    current: int = 0
    slice_end: int = 0
    next_task: int = 1
    calls: list[Call] = field(default_factory=list)
    next_call: int = 0

    def to_json(self) -> dict[str, Any]:
        frames = self._frames_json()
        data = {
            "format": STATE_FORMAT,
            "run_id": self.run_id,
            "program_hash": self.program_hash,
            "entry": self.entry,
            "frames": frames.pop(None),
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
            data["tasks"] = [task.to_json(frames.get(task.id)) for task in self.tasks]
            data["current"] = self.current
            data["slice_end"] = self.slice_end
            data["next_task"] = self.next_task
            data["calls"] = [call.to_json() for call in self.calls]
            data["next_call"] = self.next_call
        return data

    def _frames_json(self) -> dict[int | None, list[dict[str, Any]]]:
        """Each task's frames (None: the current task's), writing locals shared by frames only once."""
        seen: dict[int, list[int]] = {}
        out: dict[int | None, list[dict[str, Any]]] = {}
        stacks = [(None, self.frames)] + [(t.id, t.frames) for t in self.tasks if t.id != self.current]
        for task_id, frames in stacks:
            encoded = []
            for index, frame in enumerate(frames):
                ref = seen.get(id(frame.locals))
                if ref is None:
                    seen[id(frame.locals)] = [self.current if task_id is None else task_id, index]
                encoded.append(frame.to_json(ref))
            out[task_id] = encoded
        return out

    def dumps(self) -> str:
        # No sort_keys: the order of a dict's keys is part of its value (print and `for` show it).
        return json.dumps(self.to_json())

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunState:
        if data.get("format") != STATE_FORMAT:
            raise ValueError(f"run state format {data.get('format')} is not supported (expected {STATE_FORMAT})")
        frames = [Frame.from_json(f) for f in data["frames"]]
        current = data.get("current", 0)
        tasks = []
        stacks = {current: (frames, data["frames"])}
        for raw in data.get("tasks", ()):
            if raw["frames"] is None:
                tasks.append(Task.from_json(raw, frames))
            else:
                task_frames = [Frame.from_json(f) for f in raw["frames"]]
                stacks[raw["id"]] = (task_frames, raw["frames"])
                tasks.append(Task.from_json(raw, task_frames))
        for task_frames, raw_frames in stacks.values():
            for frame, raw in zip(task_frames, raw_frames):
                if "locals_of" in raw:
                    task_id, index = raw["locals_of"]
                    frame.locals = stacks[task_id][0][index].locals
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
            current=current,
            slice_end=data.get("slice_end", 0),
            next_task=data.get("next_task", 1),
            calls=[Call.from_json(c) for c in data.get("calls", ())],
            next_call=data.get("next_call", 0),
        )

    @classmethod
    def loads(cls, text: str) -> RunState:
        return cls.from_json(json.loads(text))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RunState) and self.dumps() == other.dumps()
