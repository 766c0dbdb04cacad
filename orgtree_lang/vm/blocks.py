"""Ambiguous blocks in the VM: the narrow BlockContext a resolver gets, and the AMBIGUOUS instruction around it."""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING, Any, Callable, Protocol

from orgtree_lang.syntax import types as t
from orgtree_lang.compile.code import AmbiguousSpec
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.records import RecordTypes
from orgtree_lang.runtime.values import conforms
from orgtree_lang.vm.budget import Budget, BudgetExceeded, NodeSpend, TreeMeter
from orgtree_lang.vm.effects import EffectStep, Effects
from orgtree_lang.vm.executor import Executor
from orgtree_lang.vm.observe import RunObserver
from orgtree_lang.vm.organization import RELOAD
from orgtree_lang.vm.questions import HumanQuestion, answer_or_wait
from orgtree_lang.vm.state import Frame
from orgtree_lang.vm import events

if TYPE_CHECKING:
    from orgtree_lang.vm.machine import Machine
    from orgtree_lang.vm.services import Numbering


class BlockResolver(Protocol):
    """Resolves an ambiguous block (the decomposer): returns a value for each of the block's outputs."""

    def __call__(self, block: BlockContext) -> dict[str, Any]: ...


class Replan(BaseException):
    """The agent of a block's node decided a message means the module must be revised (docs/org.md, decisions):
    raised out of the generated child's run (a BaseException, so no handler of the child's takes it), caught by the
    resolver, which revises the module with `evidence` and runs the block again from its inputs."""

    def __init__(self, evidence: str, why: str = "") -> None:
        super().__init__(evidence)
        self.evidence, self.why = evidence, why


@dataclasses.dataclass
class ChildOverLimit(PipeRuntimeError):
    """A generated child stopped by one of its own limits (`run_child(limits=...)`), not by the tree's budget."""

    limit: str = ""  # "steps", "seconds" or "memory"


@dataclasses.dataclass
class BlockContext:
    """What a resolver may see and do for one ambiguous block, as plain fields: it never gets the machine itself.

    `budget` is the run tree's; `spend` checks the resolver's model calls against it and charges them to the tree and
    to the block's node; `effects` is the durable run's journal door (None when not durable). The callables read
    what changes while the block is resolved (the tree's clock and step count) or build a generated child for it."""

    spec: AmbiguousSpec
    inputs: dict[str, Any]
    node: str  # the block's node id in the org tree (`<run id>/main/classify@7`)
    budget: Budget
    records: RecordTypes
    spend: NodeSpend
    effects: Effects | None
    context: Any  # the skill context the block's run hands to skills
    observer: RunObserver  # hears the block's progress notes
    journal_node: str  # the block's node in the journal, under which its steps go (`main/classify@7`)
    numbering: Numbering  # numbers the steps it journals: the run tree's, or its own range when concurrent
    statement: int  # statements the run had started when it reached the block: its steps are stamped with it
    children: Callable[..., Any] | None  # the run's ChildBuilder for this block's machine: (block, program, ...)
    seconds_used: Callable[[], float]  # wall seconds the run has run so far
    steps_used: Callable[[], int]  # steps the run tree has counted so far
    answered: Callable[[HumanQuestion, Any], None]  # tells the run's observers a person answered
    executor: Executor | None  # the run's (vm/executor.py), for a resolver with several slow calls to make at once
    # Resolved on a thread of its own while other tasks go on (org/block_calls.py): then what its child prints
    # waits in `printed` until the block's result is delivered.
    concurrent: bool = False
    printed: list[str] | None = None
    # One tree (docs/org.md, "The node of a block"): whether the pipeline the block is in reads messages itself
    # (`on message` or `receive`); the node a message from the generated child reaches (org.block_node.BlockNode,
    # set by the resolver before run_child; None: the child's `send parent` goes to the pipeline's mailbox); and the
    # messages for the pipeline's node, delivered with the block's outputs and journaled with them.
    reads_messages: bool = False
    desk: Any = None
    upward: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    def note(self, detail: str) -> None:
        """A progress note on the block's org tree node (`pipe tree` shows it)."""
        if events.NodeAnnotated in self.observer.hears:
            self.observer.on(events.NodeAnnotated(node_id=self.node, detail=detail))

    def effect_step(self, kind: str, name: str, args: list[Any], kwargs: dict[str, Any],
                    observed: bool = True) -> EffectStep:
        """A journaled step asked for by this block (a model call), numbered in the run tree's journal."""
        numbering = self.numbering
        numbering.effect_seq += 1
        return EffectStep(numbering.effect_seq, kind, name, self.journal_node, self.spec.span, args, kwargs,
                          self.statement, observed=observed)

    def ask_human(self, question: str) -> str:
        """Escalate to a person (docs/org.md, "People are nodes"): their answer to `question`, from the journal.

        Until a person answers (`pipe reply`), this does not return: the run stops as `waiting` (exit 75) and its
        question waits in `pipe inbox`; `pipe resume` runs the block again from the run's last checkpoint, taking
        every step already journaled (model answers included) from the journal, and this call then returns the
        answer. So call it the same way each time the block runs. Needs a journaled run (a PipeRuntimeError
        otherwise)."""
        return self._ask_person("ask", question)

    def approve(self, question: str) -> bool:
        """Like `ask_human`, for a yes/no decision: True or False as the person answered (yes/no/true/false)."""
        return self._ask_person("approve", question)

    def _ask_person(self, kind: str, text: str) -> Any:
        step = self.effect_step("human", f"human.{kind}", [text], {})
        question = HumanQuestion(step.seq, kind, text, step.node, self.spec.span.file, self.spec.span.line,
                                 step.statement)
        answer = answer_or_wait(self.effects, question, self.spec.span)
        self.answered(question, answer)
        return answer

    def run_child(self, program, resolver: BlockResolver | None, context: Any = None,
                  limits: Budget | None = None, inputs: dict[str, Any] | None = None, name: str = "") -> Any:
        """Run `program`'s `main` on the block's inputs as a generated child of this run; its result.

        `inputs` replaces the block's inputs and `name` (a helper child such as the decomposer's research) is
        added to the child's run id, `<block node>/<name>`.

        `context` replaces the skill context the child's skills get (default: this run's). The child shares
        the tree's budget (its wall-clock limit reduced by the time used so far), meter, journal and org tree;
        what it counted joins the tree's meter when it ends, whether it failed or not. `limits` are the
        child's own, counted from its start (its steps and those of the children it makes, its seconds): each
        set one tightens the tree's budget, and going over it raises ChildOverLimit."""
        build = self.children
        if build is None:
            raise PipeRuntimeError(f"ambiguous block `{self.spec.name}` cannot run a generated module: this "
                                   "machine was built without a way to build children", kind="ambiguous",
                                   catchable=False, hint="build machines with orgtree_lang.run.factory")
        budget = self.budget
        if budget.max_seconds is not None:
            left = max(budget.max_seconds - self.seconds_used(), 0.001)
            budget = dataclasses.replace(budget, max_seconds=left)
        own = _own_limits(budget, limits, self.steps_used())
        budget = dataclasses.replace(budget, **own)
        child = build(self, program, resolver, budget, context)
        if self.printed is not None:
            child.services.printer = self.printed.append
        # The child run is named after its org tree node, so a block reached twice makes two children.
        child.start("main", dict(self.inputs if inputs is None else inputs),
                    run_id=f"{self.node}/{name}" if name else self.node)
        try:
            child.run()
            # The child's message log joins the run's with the block's outputs (org/block_node.py).
            self.upward.extend(dict(message) for message in child.state.messages)
        except BudgetExceeded as err:
            # Where the child's own limit is tighter than the tree's, it is the one a stop of that kind hit.
            if f"max_{err.budget}" in own:
                raise ChildOverLimit(err.message, kind="budget", span=err.span, catchable=False,
                                     limit=err.budget) from err
            raise
        finally:
            child.release()
            # The child's own counters join the tree's (its children's are in the meter already).
            self.spend.meter.add({"steps": child.state.steps, "skill_calls": child.state.skill_calls})
        return child.state.result


def reads_messages(frame: Frame, pipelines: dict[str, Any] | None = None) -> bool:
    """Whether the pipeline of `frame` reads messages itself: an `on message` handler installed, or a `receive` or
    `on message` in its code or in a pipeline of `pipelines` (the program's) that it calls, directly or not. A message
    to it then goes to its mailbox, read by no agent."""
    if frame.on_message is not None:
        return True
    return code_reads(frame.code, pipelines or {})


def code_reads(code, pipelines: dict[str, Any]) -> bool:
    """Whether `code`, or a pipeline of `pipelines` it calls (directly or not), has a `receive` or `on message`."""
    found = code.__dict__.get("_reads_messages")
    if found is None:
        seen, todo = {id(code)}, [code]
        found = False
        while todo and not found:
            current = todo.pop()
            instructions = current.instructions()
            found = any(name in ("RECEIVE", "ON_MESSAGE") for _, name, _ in instructions)
            # Only pipelines it calls run in its node: one it spawns is a node of its own.
            for _, name, arg in instructions:
                callee = pipelines.get(current.calls[arg].name) if name == "CALL_PIPELINE" else None
                if callee is not None and id(callee) not in seen:
                    seen.add(id(callee))
                    todo.append(callee)
        code.__dict__["_reads_messages"] = found
    return found


def block_context(m: Machine, spec: AmbiguousSpec, inputs: dict[str, Any], node_id: str, meter: TreeMeter, *,
                  numbering: Numbering | None = None, statement: int | None = None,
                  printed: list[str] | None = None, reads: bool = False) -> BlockContext:
    """The context of block `spec`, reached by machine `m` as node `node_id`, spending on `meter`. A block resolved
    concurrently (org/block_calls.py) brings its own `numbering`, the `statement` it was reached at, and `printed`."""
    children = m.services.children
    return BlockContext(
        spec, inputs, node_id, m.budget, m.records, NodeSpend(meter, m.budget, m.observer, node_id, m.run_lock),
        m.services.effects, m.services.context, m.observer, m.effect_node(node_id[len(m.state.run_id) + 1:]),
        numbering if numbering is not None else m.step_counter(), m.state.steps if statement is None else statement,
        functools.partial(children, m) if children is not None else None, m.seconds_used,
        lambda: m.state.steps + m.steps_elsewhere(),
        lambda question, answer: m.observer.on(events.HumanAnswered(m.state, question, answer)), m.services.executor,
        concurrent=numbering is not None, printed=printed, reads_messages=reads)


def _own_limits(budget: Budget, limits: Budget | None, steps_before: int) -> dict[str, Any]:
    """The budget fields a child's own `limits` tighten (steps counted on from the tree's `steps_before`)."""
    own: dict[str, Any] = {}
    if limits is None:
        return own
    if limits.max_steps is not None:
        steps = steps_before + limits.max_steps
        if budget.max_steps is None or steps < budget.max_steps:
            own["max_steps"] = steps
    for name in ("max_seconds", "max_memory"):
        mine, tree = getattr(limits, name), getattr(budget, name)
        if mine is not None and (tree is None or mine < tree):
            own[name] = mine
    return own


def resolve_block(m: Machine, frame: Frame, stack: list, arg: int) -> int:
    """AMBIGUOUS: check the block's inputs, get its outputs from the resolver (or the journal), push them."""
    spec = frame.code.ambiguous[arg]
    count = len(spec.inputs)
    values = stack[len(stack) - count:] if count else []
    if count:
        del stack[-count:]
    inputs = {name: value for (name, _), value in zip(spec.inputs, values)}
    for (name, ptype), value in zip(spec.inputs, values):
        if not conforms(value, ptype):
            raise PipeRuntimeError(f"input `{name}` of ambiguous block {spec.name} expected {ptype}, got "
                                   f"{t.type_of_value(value)}", kind="type")
    effects = m.services.effects
    if m.services.resolver is None and (effects is None or effects.mode != "replay"):
        raise PipeRuntimeError(
            f"ambiguous block `{spec.name}` cannot run: no decomposer is configured", kind="ambiguous",
            hint="configure a model for the decomposer with `--model NAME` or the PIPE_MODEL environment variable "
                 "(or replace the block with skill calls)",
            catchable=False,
        )
    node_id = m.node_id(f"{frame.node}/{spec.name}@{m.state.steps}")
    if events.BlockStarted in m.observer.hears:
        m.observer.on(events.BlockStarted(state=m.state, frame=frame, spec=spec, inputs=inputs, node_id=node_id))
    if m.state.tasks and m.place is None:
        # One of several tasks: the organization resolves it beside the others (org/block_calls.py).
        return m.org.issue_block(frame, arg, values, node_id)
    try:
        outputs = _outputs(m, spec, inputs, values, frame, node_id)
    except PipeRuntimeError as err:
        if events.BlockEnded in m.observer.hears:
            m.observer.on(events.BlockEnded(node_id=node_id, outputs=None, error=err))
        raise
    if events.BlockEnded in m.observer.hears:
        m.observer.on(events.BlockEnded(node_id=node_id, outputs=outputs, error=None))
    push_outputs(spec, outputs, stack)
    return RELOAD  # the tree meter moved: the loop recomputes where its budgets stop it


def push_outputs(spec: AmbiguousSpec, outputs: dict[str, Any], stack: list) -> None:
    """Check the block's outputs against their declared types and push them, last first."""
    for name, ptype in reversed(spec.outputs):
        if name not in outputs:
            raise PipeRuntimeError(f"the decomposer gave no output `{name}` for ambiguous block {spec.name}",
                                   kind="ambiguous")
        if not conforms(outputs[name], ptype):
            raise PipeRuntimeError(f"output `{name}` of ambiguous block {spec.name} expected {ptype}, got "
                                   f"{t.type_of_value(outputs[name])}", kind="ambiguous")
        stack.append(outputs[name])


def _outputs(m: Machine, spec: AmbiguousSpec, inputs: dict[str, Any], values: list, frame: Frame,
             node_id: str) -> dict[str, Any]:
    """The block's outputs from the resolver, or from the journal; what the child tree spent is metered.

    The journaled result carries that spending, so a resumed or replayed run that takes the outputs from
    the journal counts it again, just as the original run did. It also says how many step numbers the
    block used inside (model answers, the child's effects), which such a run skips over."""
    ran = []
    root = m.place.root_state if m.place is not None else m.state
    numbering = m.step_counter()
    seq = numbering.effect_seq
    effects = m.services.effects

    def decompose(_key: str | None = None) -> dict[str, Any]:
        ran.append(True)
        before = m.meter.snapshot()
        block = block_context(m, spec, inputs, node_id, m.meter, reads=reads_messages(frame, m.program.pipelines))
        outputs = m.services.resolver(block)
        # The keys end in `:`, which no output name can, so results journaled by earlier versions (the
        # outputs alone) are told apart.
        result = {"outputs:": outputs, "spent:": m.meter.since(before), "effects:": numbering.effect_seq - seq}
        if block.upward:
            result["messages:"] = block.upward
        return result

    if effects is None:
        result = decompose()
        deliver_upward(m, frame, node_id, result)
        return result["outputs:"]
    seq = m.next_effect_seq()
    # Unobserved: the block's outputs are made from its inner steps (model answers, the child's effects), each
    # journaled, and fsynced before anyone outside sees it, in its own right; lost with a power loss, the block
    # runs again on resume and takes those from the journal. An fsync per reach cost a reused block milliseconds.
    step = EffectStep(seq, "ambiguous", spec.name, m.effect_node(frame.node), spec.span, values, {}, m.state.steps,
                      inner=node_id[len(root.run_id) + 1:], observed=False)
    result = effects.perform(step, decompose)
    if "outputs:" not in result:
        return result
    if not ran:
        m.meter.add(result["spent:"])
        # The steps journaled inside the block (model answers, the child's effects) keep their numbers.
        numbering.effect_seq = max(numbering.effect_seq, seq + result.get("effects:", 0))
    deliver_upward(m, frame, node_id, result)
    return result["outputs:"]


def deliver_upward(m: Machine, frame: Frame, node_id: str, result: dict[str, Any]) -> None:
    """The messages of a block's generated child that reach the pipeline the block is in (or go on up from it), with
    the rest of the child's message log, now in this machine's: when the block's outputs are delivered, from its
    journaled result when a resume or replay takes it from there (docs/org.md, "The node of a block")."""
    entries = result.get("messages:") if isinstance(result, dict) else None
    if entries:
        m.org.block_messages(frame, node_id[len(m.state.run_id) + 1:], entries)
