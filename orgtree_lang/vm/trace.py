"""Write a run's trace: one JSON object per line for each step, call, print and error."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import IO, Any

from orgtree_lang.runtime.values import display_short
from orgtree_lang.syntax.spans import Span
from orgtree_lang.vm.observe import QUIET_INTERVAL, RunObserver

SUMMARY_CHARS = 200


def summarize(value: Any, limit: int = SUMMARY_CHARS) -> str:
    """A short display form of a value for traces and the org tree (only the part shown is rendered)."""
    try:
        return display_short(value, limit)
    except RecursionError:  # a list nested thousands deep: summaries must never stop the run
        return "<a value nested too deeply to show>"


class Tracer(RunObserver):
    """Appends trace events to a JSONL file; each event carries time, run id, frame and source location.

    With `steps`, every statement is an event too (the machine then stops at every statement to report it)."""

    def __init__(self, path: Path, run_id: str, steps: bool = True) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.run_id = run_id
        self.steps = steps
        self.step_interval = 0 if steps else QUIET_INTERVAL
        self._handle: IO[str] | None = open(self.path, "a", encoding="utf-8")

    def emit(self, event: str, span: Span | None = None, frame: str | None = None, **fields: Any) -> None:
        if self._handle is None:
            return
        record = {"time": round(time.time(), 6), "run": self.run_id, "node": "root", "event": event}
        if frame is not None:
            record["frame"] = frame
        if span is not None:
            record["at"] = f"{span.file}:{span.line}"
        record.update(fields)
        self._handle.write(json.dumps(record, default=str) + "\n")

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def for_child(self, node: str, parent_run_id: str) -> Tracer:
        """The trace of a generated child run for block node `node`, in a file of its own next to this one.

        The parent's trace holds only what a replay of the parent reproduces (a replay takes the block's
        outputs from the journal and runs no child). One file per block in the program (each event names the
        child run): a block reached in a loop does not make a file per visit."""
        suffix = re.sub(r"[@#]\d+", "", node[len(parent_run_id) + 1:]).replace("/", ".")
        return Tracer(self.path.with_name(f"{self.path.stem}.{suffix}.jsonl"), node, steps=self.steps)

    # ---- what the machine reports ------------------------------------------------------------

    def run_started(self, state, fresh, span) -> None:
        if fresh:
            self.emit("run.start", span, state.entry, entry=state.entry)

    def run_stopped(self, state, error) -> None:
        if error is not None:
            self.emit("run.end", error.span, None, outcome="error", error=error.message, steps=state.steps)
        elif state.status == "done":
            self.emit("run.end", None, None, outcome="ok", result=summarize(state.result), steps=state.steps,
                      skill_calls=state.skill_calls)

    def at_statement(self, state, frame) -> None:
        if self.steps:
            self.emit("step", frame.code.span_at(frame.pc), frame.pipeline, step=state.steps + 1)

    def pipeline_called(self, state, caller, frame) -> None:
        self.emit("pipeline.call", caller.code.span_at(caller.pc - 1), caller.pipeline, pipeline=frame.pipeline)

    def pipeline_returned(self, state, frame, value, finished) -> None:
        if not finished:
            self.emit("pipeline.return", None, frame.pipeline, result=summarize(value))

    def skill_called(self, state, frame, name, args, kwargs, outcome, result, failure, started, spend,
                     where=None) -> None:
        # `where` stays out of the trace: a replay, which calls nothing, must give the same trace.
        self.emit("skill", frame.code.span_at(frame.pc - 1), frame.pipeline, skill=name,
                  args=[summarize(a, 80) for a in args], kwargs={k: summarize(v, 80) for k, v in kwargs.items()},
                  result=summarize(result) if outcome == "ok" else None,
                  duration_ms=round((time.perf_counter() - started) * 1000, 3), outcome=outcome)

    def printed(self, state, frame, line) -> None:
        self.emit("print", frame.code.span_at(frame.pc - 1), frame.pipeline, text=line[:SUMMARY_CHARS])

    def error_raised(self, state, error, caught) -> None:
        self.emit("error", error.span, state.frames[-1].pipeline, kind=error.kind, error=error.message,
                  outcome="caught" if caught else "raised")

    def block_started(self, state, frame, spec, inputs, node_id) -> None:
        self.emit("ambiguous", spec.span, frame.pipeline, block=spec.name,
                  inputs={k: summarize(v, 80) for k, v in inputs.items()})

    def task_started(self, state, task, frame) -> None:
        self.emit("node.spawn", task.frames[0].code.span_at(task.frames[0].pc), frame.pipeline, task=task.id,
                  branch=task.node, label=task.label)

    def task_cancelled(self, state, task) -> None:
        self.emit("node.cancel", None, None, task=task.id, branch=task.node, label=task.label)

    def task_ended(self, state, task) -> None:
        self.emit("node.end", None, None, task=task.id, branch=task.node, outcome=task.status,
                  error=task.error["message"] if task.error else None)

    def human_waiting(self, state, question) -> None:
        self.emit("human.ask", None, None, asker=question.node, kind=question.kind, step=question.seq,
                  question=question.text[:SUMMARY_CHARS], at=f"{question.file}:{question.line}")

    def human_answered(self, state, question, answer) -> None:
        self.emit("human.answer", None, None, asker=question.node, kind=question.kind, step=question.seq,
                  answer=summarize(answer))

    def released(self) -> None:
        self.close()
