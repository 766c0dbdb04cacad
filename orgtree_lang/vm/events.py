"""The events a run tells its observers, each a small dataclass: the one place an event is declared.

Events are data observers read and never change. They are not frozen: building a frozen dataclass sets each
field through object.__setattr__, about three times the cost of a plain one (1.4 against 0.5 us for eleven
fields), and every skill call and pipeline call builds one when the org tree is recorded
(benchmarks/orgtree_overhead.py). eq=False: an event is itself, not its fields.

A new event is a class here. The code where it happens sends it (`if Event in observer.hears:
observer.on(Event(...))`: nothing is built for an event no observer hears), and the observers that care list it
with `@hearing` (vm/observe.py); nothing forwards it by hand."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orgtree_lang.vm.state import Frame, RunState


@dataclass(slots=True, eq=False)
class Event:
    """Something a run did, as data."""


# ---- the run -------------------------------------------------------------------------------------------------

@dataclass(slots=True, eq=False)
class RunStarted(Event):
    """A stretch of the run begins (`fresh`: its very first, at step 0); `span` is the entry pipeline's."""

    state: RunState
    fresh: bool
    span: Any


@dataclass(slots=True, eq=False)
class RunStopped(Event):
    """The loop returned (done or paused) or raised `error`; the state says which."""

    state: RunState
    error: Exception | None


@dataclass(slots=True, eq=False)
class Suspending(Event):
    """The loop is about to leave at a statement boundary (a pause, or a budget stop): the state is whole."""

    state: RunState


@dataclass(slots=True, eq=False)
class WaitingLong(Event):
    """The run has waited WAIT_NOTICE seconds (vm/calls.py) for a slow call and waits on; nothing changes until
    it answers. `whole`: the state can be saved and resumed as it is (a task's call, issued again on resume);
    else the call is inside its instruction, and only the run's figures (steps, time, printed lines) stand."""

    state: RunState
    whole: bool


@dataclass(slots=True, eq=False)
class AtStatement(Event):
    """A statement boundary, at most `step_interval` statements after the last one reported."""

    state: RunState
    frame: Frame


# ---- pipeline calls ------------------------------------------------------------------------------------------

@dataclass(slots=True, eq=False)
class PipelineEntered(Event):
    """The entry pipeline's frame was created (`parent_node`: the ambiguous node a child runs for)."""

    state: RunState
    frame: Frame
    parent_node: str | None


@dataclass(slots=True, eq=False)
class FramesAttached(Event):
    """A saved state's frames run again (resume): their nodes are open once more."""

    state: RunState
    parent_node: str | None


@dataclass(slots=True, eq=False)
class PipelineCalled(Event):
    """`caller` called the pipeline whose new frame is `frame` (already on the stack)."""

    state: RunState
    caller: Frame
    frame: Frame


@dataclass(slots=True, eq=False)
class PipelineReturned(Event):
    """`frame` returned `value` and was popped; `finished` when it was the last frame."""

    state: RunState
    frame: Frame
    value: Any
    finished: bool


@dataclass(slots=True, eq=False)
class FrameUnwound(Event):
    """`frame` was left by an error caught in a frame below it."""

    state: RunState
    frame: Frame
    error: Exception


# ---- skills, prints, errors, blocks --------------------------------------------------------------------------

@dataclass(slots=True, eq=False)
class SkillCalled(Event):
    """A skill call ended (`outcome` ok or error); `started` is its perf_counter start; `spend.take()`
    (when `spend` is not None) gives the tokens and cost of the model calls made inside it; `where` says
    where it ran when that was not this process (`ray node 5d332ad0`)."""

    state: RunState
    frame: Frame
    name: str
    args: list
    kwargs: dict
    outcome: str
    result: Any
    failure: str | None
    started: float
    spend: Any
    where: str | None = None


def skill_node(frame_node: str, name: str, skill_calls: int) -> str:
    """The org tree path of the node a SkillCalled reports: the calling frame's node, the skill, the run's count
    of skill calls (`state.skill_calls`), as the org tree (runlog/observer.py) and the trace (vm/trace.py) name it."""
    return f"{frame_node}/{name}#s{skill_calls}"


@dataclass(slots=True, eq=False)
class Printed(Event):
    """The program printed `line`."""

    state: RunState
    frame: Frame
    line: str


@dataclass(slots=True, eq=False)
class ErrorRaised(Event):
    """A runtime error was raised (`caught`: a try block in the run will handle it)."""

    state: RunState
    error: Exception
    caught: bool


@dataclass(slots=True, eq=False)
class BlockStarted(Event):
    """Ambiguous block `spec` is being resolved as node `node_id`."""

    state: RunState
    frame: Frame
    spec: Any
    inputs: dict[str, Any]
    node_id: str


@dataclass(slots=True, eq=False)
class BlockEnded(Event):
    """The block's outputs, or the error that ended it."""

    node_id: str
    outputs: dict[str, Any] | None
    error: Exception | None


@dataclass(slots=True, eq=False)
class DecisionStarted(Event):
    """The agent of a block's node starts deciding what a message means (a node of kind `decision`)."""

    run_id: str
    node_id: str
    parent_id: str
    name: str


@dataclass(slots=True, eq=False)
class DecisionEnded(Event):
    """The decision `node_id` was taken (`detail` says which) or failed."""

    node_id: str
    detail: str
    error: Exception | None


@dataclass(slots=True, eq=False)
class NodeAnnotated(Event):
    """Model spending or a progress note for node `node_id` (the decomposer's)."""

    node_id: str
    tokens: int = 0
    cost: float = 0.0
    detail: str | None = None


@dataclass(slots=True, eq=False)
class ModelCallEnded(Event):
    """A model call charged to `spend` ended: a skill's vm.budget.ModelSpend (the same object reaches
    `SkillCalled` when the skill ends) or an ambiguous block's NodeSpend (`spend.node`). `started` is its
    time.time() start, `error` what it raised (its usage then 0)."""

    spend: Any
    model: str
    input_tokens: int
    output_tokens: int
    cost: float
    started: float
    error: Exception | None


# ---- tasks (org/scheduler.py) --------------------------------------------------------------------------------

@dataclass(slots=True, eq=False)
class TaskStarted(Event):
    """`task` (a branch of a parallel block) was started by the task running `frame`."""

    state: RunState
    task: Any
    frame: Frame


@dataclass(slots=True, eq=False)
class TaskCancelled(Event):
    """`task` was asked to stop (it sees a `cancelled` error at its next statement boundary)."""

    state: RunState
    task: Any


@dataclass(slots=True, eq=False)
class TaskEnded(Event):
    """`task` ended: its status is done, failed (its `error` says how) or cancelled."""

    state: RunState
    task: Any


@dataclass(slots=True, eq=False)
class Released(Event):
    """The machine will not run again: let go of what it holds (a generated child's trace file)."""


# ---- the human node ------------------------------------------------------------------------------------------

@dataclass(slots=True, eq=False)
class HumanWaiting(Event):
    """The run stops to wait for a person's answer to `question` (a vm.people.HumanQuestion)."""

    state: RunState
    question: Any


@dataclass(slots=True, eq=False)
class HumanAnswered(Event):
    """`question` got `answer` (from the journal: a reply recorded by `pipe reply`)."""

    state: RunState
    question: Any
    answer: Any


# ---- messages ------------------------------------------------------------------------------------------------

@dataclass(slots=True, eq=False)
class MessageSent(Event):
    """A message went into a mailbox (`message`: id, sender, to, topic, body encoded, sent_at)."""

    state: RunState
    message: dict[str, Any]


@dataclass(slots=True, eq=False)
class MessageReceived(Event):
    """A node took `message` out of its mailbox (with `receive`, or its `on message` handler)."""

    state: RunState
    message: dict[str, Any]


@dataclass(slots=True, eq=False)
class Interrupted(Event):
    """`message` interrupted node `node` at the statement at `span`: its `on message` handler runs."""

    state: RunState
    node: str
    message: dict[str, Any]
    span: Any


@dataclass(slots=True, eq=False)
class Receiving(Event):
    """`task` starts (`waiting`) or stops waiting in `receive` for a message (its innermost frame's node)."""

    state: RunState
    task: Any
    waiting: bool
