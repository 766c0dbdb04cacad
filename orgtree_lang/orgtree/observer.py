"""Record a run's org tree from what its machine reports: pipeline, skill and ambiguous nodes."""

from __future__ import annotations

import time

from orgtree_lang.orgtree.recorder import TreeRecorder
from orgtree_lang.vm.observe import RunObserver
from orgtree_lang.vm.trace import summarize


def _inputs(params, values: list) -> str:
    return ", ".join([f"{p.name}={summarize(v, 80)}" for p, v in zip(params, values)])


def _pairs(values: dict) -> str:
    return ", ".join(f"{k}={summarize(v, 80)}" for k, v in values.items())


def _call_inputs(args: list, kwargs: dict) -> str:
    if not kwargs:
        return ", ".join([summarize(a, 80) for a in args])
    return ", ".join([summarize(a, 80) for a in args] + [f"{k}={summarize(v, 80)}" for k, v in kwargs.items()])


class TreeObserver(RunObserver):
    """Opens and closes the nodes of one machine in the run tree's TreeRecorder (shared by its children).

    The recorder belongs to whoever built the run: this observer flushes it, never finishes it."""

    def __init__(self, recorder: TreeRecorder) -> None:
        self.recorder = recorder

    def pipeline_entered(self, state, frame, parent_node) -> None:
        self.recorder.open(f"{state.run_id}/{frame.node}", state.run_id, parent_node, frame.pipeline, "pipeline",
                           inputs=_inputs(frame.code.params, frame.locals))

    def frames_attached(self, state, parent_node) -> None:
        # The nodes still open when the state was saved are running again.
        parent = parent_node
        for frame in state.frames:
            node_id = f"{state.run_id}/{frame.node}"
            before = self.recorder.recorded(node_id)  # keep the caller and inputs of the first opening
            self.recorder.open(node_id, state.run_id, parent, frame.pipeline, "pipeline",
                               caller=before.caller if before else "", inputs=before.inputs if before else "")
            parent = node_id

    def pipeline_called(self, state, caller, frame) -> None:
        self.recorder.open(f"{state.run_id}/{frame.node}", state.run_id, f"{state.run_id}/{caller.node}",
                           frame.pipeline, "pipeline", caller=caller.pipeline,
                           inputs=_inputs(frame.code.params, frame.locals))

    def pipeline_returned(self, state, frame, value, finished) -> None:
        self.recorder.close(f"{state.run_id}/{frame.node}", "ok", output=summarize(value))

    def frame_unwound(self, state, frame, error) -> None:
        self.recorder.close(f"{state.run_id}/{frame.node}", "error", error=error.message)

    def run_stopped(self, state, error) -> None:
        if error is not None:
            for frame in reversed(state.frames):
                self.recorder.close(f"{state.run_id}/{frame.node}", "error", error=error.message)
        self.recorder.flush()

    def at_statement(self, state, frame) -> None:
        self.recorder.tick()

    def skill_called(self, state, frame, name, args, kwargs, outcome, result, failure, started, spend,
                     where=None) -> None:
        seconds = time.perf_counter() - started
        tokens, cost = spend.take() if spend is not None else (0, 0.0)
        parent = f"{state.run_id}/{frame.node}"
        self.recorder.skill_call(
            f"{parent}/{name}#s{state.skill_calls}", state.run_id, parent, name, frame.pipeline,
            _call_inputs(args, kwargs), time.time() - seconds, round(seconds * 1000, 3), outcome,
            summarize(result) if outcome == "ok" else "", failure, tokens, cost, detail=where)

    def block_started(self, state, frame, spec, inputs, node_id) -> None:
        self.recorder.open(node_id, state.run_id, f"{state.run_id}/{frame.node}", spec.name, "ambiguous",
                           caller=frame.pipeline, inputs=_pairs(inputs))

    def block_ended(self, node_id, outputs, error) -> None:
        if error is not None:
            self.recorder.close(node_id, "error", error=error.message)
        else:
            self.recorder.close(node_id, "ok", output=_pairs(outputs))

    def annotate(self, node_id, **fields) -> None:
        self.recorder.annotate(node_id, **fields)

    def task_started(self, state, task, frame) -> None:
        if task.kind == "spawn":
            return  # its pipeline node (opened as a call) is the node
        # A branch is recorded as a pipeline node (named after it) until the tree table knows more kinds.
        self.recorder.open(f"{state.run_id}/{task.node}", state.run_id, f"{state.run_id}/{frame.node}", task.label,
                           "pipeline", caller=frame.pipeline)

    def task_ended(self, state, task) -> None:
        # A branch that failed leaves the frames it was in (pipelines it called) open: they end with it.
        if task.status != "done":
            for frame in reversed(task.frames[1:] if task.kind == "branch" else task.frames):
                self.recorder.close(f"{state.run_id}/{frame.node}", "error", error=task.error["message"]
                                    if task.error else "cancelled")
        if task.kind == "spawn":
            return
        error = task.error["message"] if task.error else ("cancelled" if task.status == "cancelled" else None)
        self.recorder.close(f"{state.run_id}/{task.node}", "ok" if task.status == "done" else "error", error=error)
