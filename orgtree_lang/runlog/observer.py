"""Record a run's org tree from what its machine reports: pipeline, skill and ambiguous nodes."""

from __future__ import annotations

import time

from orgtree_lang.runlog.recorder import TreeRecorder, inputs_text
from orgtree_lang.vm import events
from orgtree_lang.vm.observe import RunObserver, hearing
from orgtree_lang.vm.trace import summarize


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

    @hearing(events.PipelineEntered)
    def pipeline_entered(self, event: events.PipelineEntered) -> None:
        state, frame, parent_node = event.state, event.frame, event.parent_node
        self.recorder.open(f"{state.run_id}/{frame.node}", state.run_id, parent_node, frame.pipeline, "pipeline",
                           inputs=inputs_text(frame.code.params, frame.locals))

    @hearing(events.FramesAttached)
    def frames_attached(self, event: events.FramesAttached) -> None:
        state, parent_node = event.state, event.parent_node
        # The nodes still open when the state was saved are running again: the frames of every task.
        for task in state.tasks or [None]:
            frames = state.frames if task is None else task.frames
            for i, frame in enumerate(frames):
                node_id = f"{state.run_id}/{frame.node}"
                before = self.recorder.recorded(node_id)  # keep the caller and inputs of the first opening
                if i == 0 and (task is None or task.kind == "main"):
                    parent = parent_node
                elif before is not None:
                    parent = before.parent_id
                else:  # a node's path extends its parent's
                    parent = f"{state.run_id}/{frame.node.rpartition('/')[0]}"
                branch = frame.node.rpartition("/")[2].startswith("parallel#")
                kind = before.kind if before else ("branch" if branch else "pipeline")
                self.recorder.open(node_id, state.run_id, parent, before.name if before else frame.pipeline, kind,
                                   caller=before.caller if before else "", inputs=before.inputs if before else "")

    @hearing(events.PipelineCalled, unpacked=True)
    def pipeline_called(self, state, caller, frame) -> None:
        # Heard once per pipeline call, as are returns: the parameters' values are summarized when the node is
        # written (.pipe values are immutable; the frame's locals are not, hence the copy).
        run_id, params = state.run_id, frame.code.params
        self.recorder.open_call(f"{run_id}/{frame.node}", run_id, f"{run_id}/{caller.node}", frame.pipeline,
                                caller.pipeline, params, frame.locals[:len(params)])

    @hearing(events.PipelineReturned, unpacked=True)
    def pipeline_returned(self, state, frame, value, finished) -> None:
        self.recorder.return_call(f"{state.run_id}/{frame.node}", value)

    @hearing(events.FrameUnwound)
    def frame_unwound(self, event: events.FrameUnwound) -> None:
        state, frame, error = event.state, event.frame, event.error
        self.recorder.close(f"{state.run_id}/{frame.node}", "error", error=error.message)

    @hearing(events.RunStopped)
    def run_stopped(self, event: events.RunStopped) -> None:
        state, error = event.state, event.error
        if error is not None:
            # The run failed: the nodes of every task still open end with it (a deadlock leaves several).
            for frames in [state.frames] + [task.frames for task in state.tasks if task.frames is not state.frames]:
                for frame in reversed(frames):
                    self.recorder.close(f"{state.run_id}/{frame.node}", "error", error=error.message)
        self.recorder.flush()

    @hearing(events.AtStatement)
    def at_statement(self, event: events.AtStatement) -> None:
        self.recorder.tick()

    @hearing(events.SkillCalled, unpacked=True)
    def skill_called(self, state, frame, name, args, kwargs, outcome, result, failure, started, spend,
                     where=None) -> None:
        # Heard once per skill call: the org tree's cost on a skill-heavy loop is mostly this method's.
        seconds = time.perf_counter() - started
        if spend is not None and (spend.tokens or spend.cost):  # most skills make no model call
            tokens, cost = spend.take()
        else:
            tokens, cost = 0, 0.0
        run_id = state.run_id
        parent = f"{run_id}/{frame.node}"
        inputs = _call_inputs(args, kwargs) if kwargs or len(args) != 1 else summarize(args[0], 80)
        self.recorder.skill_call(
            f"{run_id}/{events.skill_node(frame.node, name, state.skill_calls)}", run_id, parent, name,
            frame.pipeline, inputs, time.time() - seconds, round(seconds * 1000, 3), outcome,
            summarize(result) if outcome == "ok" else "", failure, tokens, cost, where)

    @hearing(events.BlockStarted)
    def block_started(self, event: events.BlockStarted) -> None:
        state, frame, spec, inputs, node_id = event.state, event.frame, event.spec, event.inputs, event.node_id
        self.recorder.open(node_id, state.run_id, f"{state.run_id}/{frame.node}", spec.name, "ambiguous",
                           caller=frame.pipeline, inputs=_pairs(inputs))

    @hearing(events.DecisionStarted)
    def decision_started(self, event: events.DecisionStarted) -> None:
        run_id, node_id, parent_id, name = event.run_id, event.node_id, event.parent_id, event.name
        self.recorder.open(node_id, run_id, parent_id, name, "decision")

    @hearing(events.DecisionEnded)
    def decision_ended(self, event: events.DecisionEnded) -> None:
        node_id, detail, error = event.node_id, event.detail, event.error
        if error is not None:
            self.recorder.close(node_id, "error", error=str(getattr(error, "message", error)))
        else:
            self.recorder.close(node_id, "ok", output=detail)

    @hearing(events.BlockEnded)
    def block_ended(self, event: events.BlockEnded) -> None:
        node_id, outputs, error = event.node_id, event.outputs, event.error
        if error is not None:
            self.recorder.close(node_id, "error", error=error.message)
        else:
            self.recorder.close(node_id, "ok", output=_pairs(outputs))

    @hearing(events.NodeAnnotated)
    def annotate(self, event: events.NodeAnnotated) -> None:
        self.recorder.annotate(event.node_id, tokens=event.tokens, cost=event.cost, detail=event.detail)

    @hearing(events.TaskStarted)
    def task_started(self, event: events.TaskStarted) -> None:
        state, task, frame = event.state, event.task, event.frame
        if task.kind == "spawn":
            return  # its pipeline node (opened as a call) is the node
        self.recorder.open(f"{state.run_id}/{task.node}", state.run_id, f"{state.run_id}/{frame.node}", task.label,
                           "branch", caller=frame.pipeline)

    @hearing(events.TaskEnded)
    def task_ended(self, event: events.TaskEnded) -> None:
        state, task = event.state, event.task
        status = {"done": "ok", "cancelled": "cancelled"}.get(task.status, "error")
        error = task.error["message"] if task.error else ("cancelled" if status == "cancelled" else None)
        # A branch that failed or was cancelled leaves the frames it was in (pipelines it called) open: they end
        # with it, and as it did.
        if task.status != "done":
            for frame in reversed(task.frames[1:] if task.kind == "branch" else task.frames):
                self.recorder.close(f"{state.run_id}/{frame.node}", status, error=error)
        if task.kind == "spawn":
            return
        self.recorder.close(f"{state.run_id}/{task.node}", status, error=error)

    @hearing(events.Receiving)
    def receiving(self, event: events.Receiving) -> None:
        state, task, waiting = event.state, event.task, event.waiting
        if task.frames:
            self.recorder.mark(f"{state.run_id}/{task.frames[-1].node}", "receiving" if waiting else "running")

    @hearing(events.HumanWaiting)
    def human_waiting(self, event: events.HumanWaiting) -> None:
        # The whole run stops until a person answers (docs/org.md): every node open in it waits with it.
        for node_id in self.recorder.open_nodes():
            self.recorder.mark(node_id, "waiting")
