"""Write a run's trace: one JSON object per line for each call, print and error (and each step, if asked)."""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from orgtree_lang.runtime.config import ConfigError, config_section
from orgtree_lang.runtime.values import decode, display_short
from orgtree_lang.syntax.spans import Span
from orgtree_lang.vm import events
from orgtree_lang.vm.observe import QUIET_INTERVAL, RunObserver, hearing

SUMMARY_CHARS = 200
_SMALL_INT = 10**18

# off: no trace file; calls: runs, pipeline/skill/model calls, prints, errors, blocks, messages; steps: also one
# event per statement executed (the machine then stops at every statement, which costs several times the run).
TRACE_LEVELS = ("off", "calls", "steps")
DEFAULT_LEVEL = "calls"
DEFAULT_MAX_MB = 64.0
DEFAULT_KEEP = 2


@dataclass(frozen=True)
class TraceSettings:
    """How much a run traces, and how large one trace file may grow before it is rotated.

    Past `max_bytes` the file is renamed `trace.jsonl.1` (an older `.1` becomes `.2`, up to `keep` old files;
    older ones are deleted) and a new one is started, so a run's trace never takes more than (keep + 1) files."""

    level: str = DEFAULT_LEVEL
    max_bytes: int = int(DEFAULT_MAX_MB * 2**20)
    keep: int = DEFAULT_KEEP

    @classmethod
    def from_config(cls, config, level: str | None = None) -> TraceSettings:
        """The `[trace]` table of orgtree.toml (`config`: its path or a ConfigSnapshot); `level`, when given (the
        --trace-level flag), wins over the file's `level`."""
        table = config_section("trace", config, types={"level": str, "max_mb": (int, float), "keep": int})
        unknown = sorted(set(table) - {"level", "max_mb", "keep"})
        if unknown:
            raise ConfigError(f"{config}: [trace] has no setting {', '.join(unknown)}; "
                              "its settings are level, max_mb and keep")
        chosen = level or table.get("level", DEFAULT_LEVEL)
        if chosen not in TRACE_LEVELS:
            raise ConfigError(f"{config}: [trace] level must be one of {', '.join(TRACE_LEVELS)}, got {chosen!r}")
        max_mb = table.get("max_mb", DEFAULT_MAX_MB)
        keep = table.get("keep", DEFAULT_KEEP)
        if max_mb <= 0 or keep < 0:
            raise ConfigError(f"{config}: [trace] max_mb must be above 0 and keep 0 or more, "
                              f"got max_mb = {max_mb!r}, keep = {keep!r}")
        return cls(chosen, max(1024, int(max_mb * 2**20)), keep)


def summarize(value: Any, limit: int = SUMMARY_CHARS) -> str:
    """A short display form of a value for traces and the org tree (only the part shown is rendered)."""
    # The org tree summarizes every call's arguments and result: the common small values take a short cut to
    # the text display_short gives them (a printable string needs no escape when it holds no quote or backslash).
    kind = type(value)
    if kind is str:
        if len(value) <= limit - 2 and value.isprintable() and '"' not in value and "\\" not in value:
            return f'"{value}"'
    elif kind is int and limit >= 20 and -_SMALL_INT < value < _SMALL_INT:
        return repr(value)
    try:
        return display_short(value, limit)
    except RecursionError:  # a list nested thousands deep: summaries must never stop the run
        return "<a value nested too deeply to show>"


class Tracer(RunObserver):
    """Appends trace events to a JSONL file; each event carries time, run id, frame and source location.

    At level `steps` every statement is an event too (the machine then stops at every statement to report it);
    at `off` nothing is written and no file is made."""

    def __init__(self, path: Path, run_id: str, settings: TraceSettings = TraceSettings()) -> None:
        self.path = Path(path)
        self.run_id = run_id
        self.settings = settings
        self.steps = settings.level == "steps"
        self.active = settings.level != "off"
        self.step_interval = 0 if self.steps else QUIET_INTERVAL
        self._handle: IO[str] | None = None
        self._size = 0
        self._children: dict[Path, Tracer] = {}  # the child traces this one opened, by file
        self._blocks: set[str] = set()  # the ambiguous nodes being resolved now
        if self.active:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._handle = open(self.path, "a", encoding="utf-8")
            self._size = self._handle.tell()

    def emit(self, event: str, span: Span | None = None, frame: str | None = None, *, node: str | None = None,
             **fields: Any) -> None:
        """Append one event; `node` is the org tree node it belongs to (a pipeline call, a branch, a skill call,
        an ambiguous block), by its id as `pipe tree` shows it, so a viewer never matches events by time."""
        if self._handle is None:
            return
        record = {"time": round(time.time(), 6), "run": self.run_id, "node": node or self.run_id, "event": event}
        if frame is not None:
            record["frame"] = frame
        if span is not None:
            record["at"] = f"{span.file}:{span.line}"
        record.update(fields)
        line = json.dumps(record, default=str) + "\n"
        if self._size + len(line) > self.settings.max_bytes and self._size > 0:
            self._rotate()
        self._handle.write(line)
        self._size += len(line)

    def _rotate(self) -> None:
        """Start a new file: the current one becomes `.1`, `.1` becomes `.2`, ..., and the one past `keep` goes."""
        self._handle.close()
        old = [self.path.with_name(f"{self.path.name}.{n}") for n in range(1, self.settings.keep + 1)]
        if old:
            old[-1].unlink(missing_ok=True)
            for newer, older in reversed(list(zip(old, old[1:]))):
                if newer.exists():
                    os.replace(newer, older)
            os.replace(self.path, old[0])
        self._handle = open(self.path, "w", encoding="utf-8")
        self._size = 0

    @property
    def rotated(self) -> bool:
        """True if this trace has older files (the run outgrew `max_bytes`): the file holds only its tail."""
        return self.path.with_name(f"{self.path.name}.1").exists()

    def close(self) -> None:
        for child in self._children.values():
            child.close()
        self._children.clear()
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def for_child(self, node: str, parent_run_id: str) -> Tracer:
        """The trace of a generated child run for block node `node`, in a file of its own next to this one.

        The parent's trace holds only what a replay of the parent reproduces (a replay takes the block's
        outputs from the journal and runs no child). One file per block in the program (each event names the
        child run): a block reached in a loop does not make a file per visit."""
        suffix = re.sub(r"[@#]\d+", "", node[len(parent_run_id) + 1:]).replace("/", ".")
        path = self.path.with_name(f"{self.path.stem}.{suffix}.jsonl")
        child = self._children.get(path)
        if child is None or child._handle is None or child.run_id != node:
            child = self._children[path] = Tracer(path, node, self.settings)
        return child

    # ---- what the machine reports ------------------------------------------------------------

    @hearing(events.RunStarted)
    def run_started(self, event: events.RunStarted) -> None:
        state, fresh, span = event.state, event.fresh, event.span
        if fresh:
            self.emit("run.start", span, state.entry, node=_top(state), entry=state.entry)

    @hearing(events.RunStopped)
    def run_stopped(self, event: events.RunStopped) -> None:
        state, error = event.state, event.error
        if error is not None:
            self.emit("run.end", error.span, None, node=_top(state), outcome="error", error=error.message,
                      steps=state.steps)
        elif state.status == "done":
            self.emit("run.end", None, None, node=_top(state), outcome="ok", result=summarize(state.result),
                      steps=state.steps, skill_calls=state.skill_calls)

    @hearing(events.AtStatement)
    def at_statement(self, event: events.AtStatement) -> None:
        state, frame = event.state, event.frame
        if self.steps:
            self.emit("step", frame.code.span_at(frame.pc), frame.pipeline, node=_node(state, frame.node),
                      step=state.steps + 1)

    @hearing(events.PipelineCalled)
    def pipeline_called(self, event: events.PipelineCalled) -> None:
        state, caller, frame = event.state, event.caller, event.frame
        self.emit("pipeline.call", caller.code.span_at(caller.pc - 1), caller.pipeline,
                  node=_node(state, caller.node), pipeline=frame.pipeline, callee=_node(state, frame.node))

    @hearing(events.PipelineReturned)
    def pipeline_returned(self, event: events.PipelineReturned) -> None:
        state, frame, value, finished = event.state, event.frame, event.value, event.finished
        if not finished:
            self.emit("pipeline.return", None, frame.pipeline, node=_node(state, frame.node),
                      result=summarize(value))

    @hearing(events.SkillCalled)
    def skill_called(self, event: events.SkillCalled) -> None:
        # `where` stays out of the trace: a replay, which calls nothing, must give the same trace.
        # The node id is the one the org tree gives this call (runlog/observer.py): caller, skill, call count.
        self.emit("skill", event.frame.code.span_at(event.frame.pc - 1), event.frame.pipeline,
                  node=_node(event.state, events.skill_node(event.frame.node, event.name, event.state.skill_calls)),
                  skill=event.name, args=[summarize(a, 80) for a in event.args],
                  kwargs={k: summarize(v, 80) for k, v in event.kwargs.items()},
                  result=summarize(event.result) if event.outcome == "ok" else None,
                  duration_ms=round((time.perf_counter() - event.started) * 1000, 3), outcome=event.outcome)

    @hearing(events.Printed)
    def printed(self, event: events.Printed) -> None:
        state, frame, line = event.state, event.frame, event.line
        self.emit("print", frame.code.span_at(frame.pc - 1), frame.pipeline, node=_node(state, frame.node),
                  text=line[:SUMMARY_CHARS])

    @hearing(events.ErrorRaised)
    def error_raised(self, event: events.ErrorRaised) -> None:
        state, error, caught = event.state, event.error, event.caught
        self.emit("error", error.span, state.frames[-1].pipeline, node=_node(state, state.frames[-1].node),
                  kind=error.kind, error=error.message,
                  outcome="caught" if caught else "raised")

    @hearing(events.BlockStarted)
    def block_started(self, event: events.BlockStarted) -> None:
        frame, spec, inputs, node_id = event.frame, event.spec, event.inputs, event.node_id
        self._blocks.add(node_id)
        self.emit("ambiguous", spec.span, frame.pipeline, node=node_id, block=spec.name,
                  inputs={k: summarize(v, 80) for k, v in inputs.items()})

    @hearing(events.BlockEnded)
    def block_ended(self, event: events.BlockEnded) -> None:
        self._blocks.discard(event.node_id)

    @hearing(events.ModelCallEnded)
    def model_call_ended(self, event: events.ModelCallEnded) -> None:
        # The decomposer's calls for a block go to the block's child trace: a replay of this run takes the
        # block's outputs from the journal and makes no model call, and this trace holds what a replay makes.
        node_id = getattr(event.spend, "node", None)
        if node_id is None:  # a skill's call (llm.ask): made for the node of the frame that called the skill
            machine = event.spend.machine
            frames = machine.state.frames if machine.state is not None else []
            node_id = machine.node_id(frames[-1].node) if frames else None
        target = self.for_child(node_id, self.run_id) if node_id in self._blocks else self
        target.emit("model", None, None, node=node_id, for_node=node_id, model=event.model,
                    tokens=event.input_tokens + event.output_tokens, input_tokens=event.input_tokens,
                    output_tokens=event.output_tokens, cost=event.cost,
                    duration_ms=round((time.time() - event.started) * 1000, 3),
                    outcome="error" if event.error is not None else "ok")

    @hearing(events.TaskStarted)
    def task_started(self, event: events.TaskStarted) -> None:
        state, task, frame = event.state, event.task, event.frame
        self.emit("node.spawn", task.frames[0].code.span_at(task.frames[0].pc), frame.pipeline,
                  node=_node(state, frame.node), task=task.id,
                  branch=task.node, label=task.label)

    @hearing(events.TaskCancelled)
    def task_cancelled(self, event: events.TaskCancelled) -> None:
        state, task = event.state, event.task
        self.emit("node.cancel", None, None, node=_node(state, task.node), task=task.id, branch=task.node, label=task.label)

    @hearing(events.TaskEnded)
    def task_ended(self, event: events.TaskEnded) -> None:
        state, task = event.state, event.task
        self.emit("node.end", None, None, node=_node(state, task.node), task=task.id, branch=task.node, outcome=task.status,
                  error=task.error["message"] if task.error else None)

    @hearing(events.HumanWaiting)
    def human_waiting(self, event: events.HumanWaiting) -> None:
        state, question = event.state, event.question
        self.emit("human.ask", None, None, node=_asker(state, question), asker=question.node, kind=question.kind, step=question.seq,
                  question=question.text[:SUMMARY_CHARS], at=f"{question.file}:{question.line}")

    @hearing(events.MessageSent)
    def message_sent(self, event: events.MessageSent) -> None:
        state, message = event.state, event.message
        self.emit("message.send", None, None, node=_node(state, message["sender"]), message=message["id"], sender=message["sender"], to=message["to"],
                  topic=message["topic"], body=summarize(decode(message["body"]), 80))

    @hearing(events.MessageReceived)
    def message_received(self, event: events.MessageReceived) -> None:
        state, message = event.state, event.message
        self.emit("message.receive", None, None, node=_node(state, message["to"]), message=message["id"], by=message["to"], sender=message["sender"])

    @hearing(events.Interrupted)
    def interrupted(self, event: events.Interrupted) -> None:
        state, node, message, span = event.state, event.node, event.message, event.span
        self.emit("interrupt", span, None, node=_node(state, node), task=node, message=message["id"])

    @hearing(events.HumanAnswered)
    def human_answered(self, event: events.HumanAnswered) -> None:
        state, question, answer = event.state, event.question, event.answer
        self.emit("human.answer", None, None, node=_asker(state, question), asker=question.node, kind=question.kind, step=question.seq,
                  answer=summarize(answer))

    @hearing(events.Released)
    def released(self, event: events.Released) -> None:
        self.close()


def _node(state, path: str) -> str:
    """The org tree id of the node at `path` (a frame's or a task's node) in `state`'s run."""
    return f"{state.run_id}/{path}"


def _top(state) -> str:
    """The node of the run's entry pipeline (its first frame), or the run itself once no frame is left."""
    return _node(state, state.frames[0].node) if state.frames else state.run_id


def _asker(state, question) -> str:
    """The org tree id of the node that asked `question`: its node is a path from the top run (a generated
    child's nodes sit under their ambiguous node, vm/machine.py `effect_node`)."""
    return f"{state.run_id.split('/', 1)[0]}/{question.node}"
