"""What a run tells its observers (tracer, org tree, progress, checkpoints): one interface, a no-op by default."""

from __future__ import annotations

from typing import Any

from orgtree_lang.vm.state import Frame, RunState

# Statements between two calls of `at_statement` when nothing asks for more: the wall-clock budget is checked
# there too, so this also bounds how late a `--max-seconds` stop can come.
QUIET_INTERVAL = 4096


class RunObserver:
    """Hears what one machine does. Every method does nothing here; an observer overrides those it needs.

    The machine calls exactly one observer (a `FanOut` when there are several), so an absent observer costs
    one empty call per event and never an `if`. `step_interval` is the most statements the machine may run
    between two `at_statement` calls (0: every statement)."""

    step_interval: int = QUIET_INTERVAL

    # ---- the run ------------------------------------------------------------------------------
    def run_started(self, state: RunState, fresh: bool, span) -> None:
        """A stretch of the run begins (`fresh`: its very first, at step 0); `span` is the entry pipeline's."""

    def run_stopped(self, state: RunState, error: Exception | None) -> None:
        """The loop returned (done or paused) or raised `error`; the state says which."""

    def suspending(self, state: RunState) -> None:
        """The loop is about to leave at a statement boundary (a pause, or a budget stop): the state is whole."""

    def waiting_long(self, state: RunState, whole: bool) -> None:
        """The run has waited WAIT_NOTICE seconds (vm/calls.py) for a slow call and waits on; nothing changes until
        it answers. `whole`: the state can be saved and resumed as it is (a task's call, issued again on resume);
        else the call is inside its instruction, and only the run's figures (steps, time, printed lines) stand."""

    def at_statement(self, state: RunState, frame: Frame) -> None:
        """A statement boundary, at most `step_interval` statements after the last one reported."""

    # ---- pipeline calls -----------------------------------------------------------------------
    def pipeline_entered(self, state: RunState, frame: Frame, parent_node: str | None) -> None:
        """The entry pipeline's frame was created (`parent_node`: the ambiguous node a child runs for)."""

    def frames_attached(self, state: RunState, parent_node: str | None) -> None:
        """A saved state's frames run again (resume): their nodes are open once more."""

    def pipeline_called(self, state: RunState, caller: Frame, frame: Frame) -> None:
        """`caller` called the pipeline whose new frame is `frame` (already on the stack)."""

    def pipeline_returned(self, state: RunState, frame: Frame, value: Any, finished: bool) -> None:
        """`frame` returned `value` and was popped; `finished` when it was the last frame."""

    def frame_unwound(self, state: RunState, frame: Frame, error: Exception) -> None:
        """`frame` was left by an error caught in a frame below it."""

    # ---- skills, prints, errors, blocks -------------------------------------------------------
    def skill_called(self, state: RunState, frame: Frame, name: str, args: list, kwargs: dict, outcome: str,
                     result: Any, failure: str | None, started: float, spend, where: str | None = None) -> None:
        """A skill call ended (`outcome` ok or error); `started` is its perf_counter start; `spend.take()`
        (when `spend` is not None) gives the tokens and cost of the model calls made inside it; `where` says
        where it ran when that was not this process (`ray node 5d332ad0`)."""

    def printed(self, state: RunState, frame: Frame, line: str) -> None:
        """The program printed `line`."""

    def error_raised(self, state: RunState, error: Exception, caught: bool) -> None:
        """A runtime error was raised (`caught`: a try block in the run will handle it)."""

    def block_started(self, state: RunState, frame: Frame, spec, inputs: dict[str, Any], node_id: str) -> None:
        """Ambiguous block `spec` is being resolved as node `node_id`."""

    def block_ended(self, node_id: str, outputs: dict[str, Any] | None, error: Exception | None) -> None:
        """The block's outputs, or the error that ended it."""

    def decision_started(self, run_id: str, node_id: str, parent_id: str, name: str) -> None:
        """The agent of a block's node starts deciding what a message means (a node of kind `decision`)."""

    def decision_ended(self, node_id: str, detail: str, error: Exception | None) -> None:
        """The decision `node_id` was taken (`detail` says which) or failed."""

    def annotate(self, node_id: str, *, tokens: int = 0, cost: float = 0.0, detail: str | None = None) -> None:
        """Model spending or a progress note for node `node_id` (the decomposer's)."""

    def model_call_ended(self, spend, model: str, input_tokens: int, output_tokens: int, cost: float,
                         started: float, error: Exception | None) -> None:
        """A model call charged to `spend` ended: a skill's vm.budget.ModelSpend (the same object reaches
        `skill_called` when the skill ends) or an ambiguous block's NodeSpend (`spend.node`). `started` is its
        time.time() start, `error` what it raised (its usage then 0)."""

    # ---- tasks (org/scheduler.py) -------------------------------------------------------------
    def task_started(self, state: RunState, task, frame: Frame) -> None:
        """`task` (a branch of a parallel block) was started by the task running `frame`."""

    def task_cancelled(self, state: RunState, task) -> None:
        """`task` was asked to stop (it sees a `cancelled` error at its next statement boundary)."""

    def task_ended(self, state: RunState, task) -> None:
        """`task` ended: its status is done, failed (its `error` says how) or cancelled."""

    def released(self) -> None:
        """The machine will not run again: let go of what it holds (a generated child's trace file)."""

    # ---- the human node -----------------------------------------------------------------------
    def human_waiting(self, state: RunState, question) -> None:
        """The run stops to wait for a person's answer to `question` (a vm.people.HumanQuestion)."""

    def human_answered(self, state: RunState, question, answer: Any) -> None:
        """`question` got `answer` (from the journal: a reply recorded by `pipe reply`)."""

    # ---- messages -----------------------------------------------------------------------------
    def message_sent(self, state: RunState, message: dict[str, Any]) -> None:
        """A message went into a mailbox (`message`: id, sender, to, topic, body encoded, sent_at)."""

    def message_received(self, state: RunState, message: dict[str, Any]) -> None:
        """A node took `message` out of its mailbox (with `receive`, or its `on message` handler)."""

    def interrupted(self, state: RunState, node: str, message: dict[str, Any], span) -> None:
        """`message` interrupted node `node` at the statement at `span`: its `on message` handler runs."""

    def receiving(self, state: RunState, task, waiting: bool) -> None:
        """`task` starts (`waiting`) or stops waiting in `receive` for a message (its innermost frame's node)."""


NO_OBSERVER = RunObserver()


class FanOut(RunObserver):
    """Several observers heard as one, in order."""

    def __init__(self, observers: list[RunObserver]) -> None:
        self.observers = list(observers)
        self.step_interval = min(o.step_interval for o in self.observers)

    def run_started(self, state, fresh, span):
        for observer in self.observers:
            observer.run_started(state, fresh, span)

    def run_stopped(self, state, error):
        for observer in self.observers:
            observer.run_stopped(state, error)

    def suspending(self, state):
        for observer in self.observers:
            observer.suspending(state)

    def waiting_long(self, state, whole):
        for observer in self.observers:
            observer.waiting_long(state, whole)

    def at_statement(self, state, frame):
        for observer in self.observers:
            observer.at_statement(state, frame)

    def pipeline_entered(self, state, frame, parent_node):
        for observer in self.observers:
            observer.pipeline_entered(state, frame, parent_node)

    def frames_attached(self, state, parent_node):
        for observer in self.observers:
            observer.frames_attached(state, parent_node)

    def pipeline_called(self, state, caller, frame):
        for observer in self.observers:
            observer.pipeline_called(state, caller, frame)

    def pipeline_returned(self, state, frame, value, finished):
        for observer in self.observers:
            observer.pipeline_returned(state, frame, value, finished)

    def frame_unwound(self, state, frame, error):
        for observer in self.observers:
            observer.frame_unwound(state, frame, error)

    def skill_called(self, state, frame, name, args, kwargs, outcome, result, failure, started, spend, where=None):
        for observer in self.observers:
            observer.skill_called(state, frame, name, args, kwargs, outcome, result, failure, started, spend,
                                  where=where)

    def printed(self, state, frame, line):
        for observer in self.observers:
            observer.printed(state, frame, line)

    def error_raised(self, state, error, caught):
        for observer in self.observers:
            observer.error_raised(state, error, caught)

    def block_started(self, state, frame, spec, inputs, node_id):
        for observer in self.observers:
            observer.block_started(state, frame, spec, inputs, node_id)

    def block_ended(self, node_id, outputs, error):
        for observer in self.observers:
            observer.block_ended(node_id, outputs, error)

    def decision_started(self, run_id, node_id, parent_id, name):
        for observer in self.observers:
            observer.decision_started(run_id, node_id, parent_id, name)

    def decision_ended(self, node_id, detail, error):
        for observer in self.observers:
            observer.decision_ended(node_id, detail, error)

    def annotate(self, node_id, **fields):
        for observer in self.observers:
            observer.annotate(node_id, **fields)

    def model_call_ended(self, spend, model, input_tokens, output_tokens, cost, started, error):
        for observer in self.observers:
            observer.model_call_ended(spend, model, input_tokens, output_tokens, cost, started, error)

    def task_started(self, state, task, frame):
        for observer in self.observers:
            observer.task_started(state, task, frame)

    def task_cancelled(self, state, task):
        for observer in self.observers:
            observer.task_cancelled(state, task)

    def task_ended(self, state, task):
        for observer in self.observers:
            observer.task_ended(state, task)

    def released(self):
        for observer in self.observers:
            observer.released()

    def human_waiting(self, state, question):
        for observer in self.observers:
            observer.human_waiting(state, question)

    def human_answered(self, state, question, answer):
        for observer in self.observers:
            observer.human_answered(state, question, answer)

    def message_sent(self, state, message):
        for observer in self.observers:
            observer.message_sent(state, message)

    def message_received(self, state, message):
        for observer in self.observers:
            observer.message_received(state, message)

    def interrupted(self, state, node, message, span):
        for observer in self.observers:
            observer.interrupted(state, node, message, span)

    def receiving(self, state, task, waiting):
        for observer in self.observers:
            observer.receiving(state, task, waiting)


def observe(observers) -> RunObserver:
    """One observer for a list of them: the no-op one for none, the observer itself for one, else a fan-out."""
    present = [o for o in observers or () if o is not None]
    if not present:
        return NO_OBSERVER
    return present[0] if len(present) == 1 else FanOut(present)


class ProgressObserver(RunObserver):
    """Calls `report(state, span)` about once a second of wall-clock time (for `pipe run`'s progress line)."""

    def __init__(self, report, clock) -> None:
        self.report = report
        self.clock = clock
        self._last = 0.0

    def at_statement(self, state: RunState, frame: Frame) -> None:
        now = self.clock()
        if now - self._last >= 1.0:
            self._last = now
            self.report(state, frame.code.span_at(frame.pc))
