"""Execute a compiled Program: the dispatch loop over bytecode, with statement-boundary stops for budgets."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from orgtree_lang.compile.api import program_identity
from orgtree_lang.compile.code import CodeObject, Program
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.records import RecordTypes
from orgtree_lang.vm import calls, dispatch, loop
from orgtree_lang.vm.budget import ModelSpend, TreeMeter, budget_exceeded
from orgtree_lang.vm.instructions import BINARY_FUNCS
from orgtree_lang.vm.memory import guarded_operators
from orgtree_lang.vm.observe import observe
from orgtree_lang.vm.organization import NO_ORG, Org
from orgtree_lang.vm.questions import WaitingForHuman
from orgtree_lang.vm.services import Numbering, Services, TreePlace
from orgtree_lang.vm.state import Frame, RunState
from orgtree_lang.vm import events

# The instructions the dispatch loop (vm/loop.py) runs itself: the hot ones, and those that change frames.
# Every other opcode has exactly one entry in instructions.HANDLERS.
INLINE = dispatch.INLINE


class Machine:
    """Runs one program with one Services object; all mutable run state lives in `self.state` (a RunState)
    and this machine's own counters, never in module globals, so machines of one tree can run interleaved."""

    def __init__(self, program: Program, services: Services | None = None) -> None:
        services = services or Services()
        self.program = program
        self.services = services
        self.budget = services.budget
        # The skill context, with this machine's ModelSpend for the model calls skills make
        context = services.context
        if dataclasses.is_dataclass(context) and hasattr(context, "spend"):
            context = dataclasses.replace(context, spend=ModelSpend(self))
        self.context = context
        self.spend = getattr(context, "spend", None)
        self.observer = observe(services.observers)
        # The events of every call, sent as their fields to whoever hears them (None: nobody; vm/calls.py).
        self.hear_call = self.observer.receiver(events.PipelineCalled)
        self.hear_return = self.observer.receiver(events.PipelineReturned)
        self.hear_skill = self.observer.receiver(events.SkillCalled)
        place = services.place
        # The tree-wide meter: a generated child shares its parent's; a top-level run's is its state's `usage`.
        self.place = place
        self.meter = place.meter if place is not None else TreeMeter()
        self.parent_node = place.parent_node if place is not None else None  # the block a child runs for
        self.ancestors = place.ancestors if place is not None else (0, 0)
        # A child inside a concurrently resolved block numbers its journal steps in the block's own range.
        self.counter = place.counter if place is not None else None
        self.records = RecordTypes(program.records)
        self.state: RunState | None = None
        self.prepared: dict[CodeObject, list[tuple[int, Any]]] = {}  # the loop's view of each pipeline's code
        # With a memory budget, `+` and `*` check the size of what they build; without one they cost nothing more.
        self._binary = BINARY_FUNCS if self.budget.max_memory is None else \
            guarded_operators(BINARY_FUNCS, self.budget.max_memory)
        self._started = 0.0
        self.pause_at: int | None = None  # the step count at which `run(pause_after=...)` pauses
        # Tasks, messages, people (org/): called only while the run has tasks, which only an org opcode starts.
        self.org: Org = services.org(self) if services.org is not None else NO_ORG
        self.run_lock = self.org.lock  # one thread at a time in the run tree (org/runlock.py)

    # ---- starting and resuming ------------------------------------------

    def start(self, entry: str | None = None, inputs: dict[str, Any] | None = None,
              run_id: str | None = None) -> RunState:
        """Create the run state for calling `entry` with `inputs` (validated against its parameters)."""
        code = self.program.entry(entry)
        frame = Frame(code.name, 0, [], calls.bind_inputs(code, dict(inputs or {}), self.records), [], code,
                      node=code.name)
        self.state = RunState(run_id or uuid.uuid4().hex[:12], program_identity(self.program), code.name, [frame])
        self._bind_meter()
        if events.PipelineEntered in self.observer.hears:
            self.observer.on(events.PipelineEntered(state=self.state, frame=frame, parent_node=self.parent_node))
        return self.state

    def attach(self, state: RunState) -> None:
        """Continue from a state (e.g. one loaded from JSON): link its frames to this program's code."""
        for frame in state.frames:
            frame.code = self.program.pipelines[frame.pipeline]
        for task in state.tasks:
            for frame in task.frames:
                frame.code = self.program.pipelines[frame.pipeline]
        self.state = state
        self.org.attach(state)
        self._bind_meter()
        if events.FramesAttached in self.observer.hears:
            self.observer.on(events.FramesAttached(state=state, parent_node=self.parent_node))

    def _bind_meter(self) -> None:
        if self.place is None:
            self.meter = TreeMeter(self.state.usage)

    def run(self, pause_after: int | None = None) -> RunState:
        """Run until the program finishes or fails, or (if given) until `pause_after` more steps have run."""
        state = self.state
        if state is None:
            raise RuntimeError("call start() or attach() first")
        if state.status in ("done", "failed"):
            return state
        self.pause_at = None if pause_after is None else state.steps + pause_after
        self._started = self.services.clock()
        fresh = state.steps == 0 and state.status == "ready"
        state.status = "running"
        if events.RunStarted in self.observer.hears:
            self.observer.on(events.RunStarted(state=state, fresh=fresh, span=self.program.entry(state.entry).span))
        self.run_lock.acquire()
        try:
            self._loop()
            self._stretch_done()
            if events.RunStopped in self.observer.hears:
                self.observer.on(events.RunStopped(state=state, error=None))
            return state
        except PipeRuntimeError as err:
            state.status = "failed"
            state.error = {"message": err.message, "kind": err.kind, "span": str(err.span) if err.span else None}
            self._stretch_done()
            if events.RunStopped in self.observer.hears:
                self.observer.on(events.RunStopped(state=state, error=err))
            raise
        except WaitingForHuman as wait:
            if self.place is not None:
                raise  # a generated child: the whole run tree waits, and its top-level machine says so
            self._wait(wait)
            return state
        finally:
            if self.place is None and state.status in ("done", "failed", "waiting"):
                self.run_lock.close()  # a block thread left working for the run stops at its next step
            self.run_lock.release()

    def _wait(self, wait: WaitingForHuman) -> None:
        """Stop for a person's answer. Left exactly at the asking instruction, the state is saved there; a
        question asked deeper (a generated child, the decomposer) is asked again from the last checkpoint."""
        state = self.state
        state.status = "waiting"
        if not wait.exact:
            state.waiting = [wait.question.to_json()]
        if state.calls:
            self.org.settle()  # slow calls of other tasks in flight: journaled now, not lost
        if events.HumanWaiting in self.observer.hears:
            self.observer.on(events.HumanWaiting(state=state, question=wait.question))
        if wait.exact:
            self.suspend()
        else:
            self._stretch_done()
        if events.RunStopped in self.observer.hears:
            self.observer.on(events.RunStopped(state=state, error=None))

    def print_line(self, line: str) -> None:
        """A line the program prints (the `print` built-in): kept in the run's output, shown unless a resume is
        catching up."""
        state = self.state
        state.output.append(line)
        services = self.services
        if services.printer is not None and not (services.effects is not None and services.effects.catching_up):
            services.printer(line)
        if events.Printed in self.observer.hears:
            self.observer.on(events.Printed(state=state, frame=state.frames[-1], line=line))

    def release(self) -> None:
        """This machine will not run again: its observers let go of what they hold (a child's trace file)."""
        if events.Released in self.observer.hears:
            self.observer.on(events.Released())

    # ---- the run tree -------------------------------------------------------

    def _root_state(self) -> RunState:
        return self.place.root_state if self.place is not None else self.state

    def next_effect_seq(self) -> int:
        """Number the next journaled step of the run tree (a child's steps continue its parent's numbering)."""
        numbering = self.step_counter()
        numbering.effect_seq += 1
        return numbering.effect_seq

    def step_counter(self) -> Numbering:
        """What numbers this machine's journal steps: the top-level run's state, or a concurrent block's counter."""
        return self.counter if self.counter is not None else self._root_state()

    def effect_node(self, node: str) -> str:
        """A node's path in the journal: a child's nodes sit under its ambiguous node (`main/classify@7/main`)."""
        if self.place is None:
            return node
        return f"{self.state.run_id[len(self.place.root_state.run_id) + 1:]}/{node}"

    def node_id(self, node: str) -> str:
        """A frame node's id in the org tree: the run id, then the node's path."""
        return f"{self.state.run_id}/{node}"

    def place_for_child(self, block_node: str, block=None) -> TreePlace:
        """Where a generated child for block `block_node` of this machine sits in the run tree (`block`, its
        vm.blocks.BlockContext, gives the meter and numbering of a concurrently resolved block)."""
        meter = block.spend.meter if block is not None else self.meter
        counter = block.numbering if block is not None and block.concurrent else self.counter
        return TreePlace(block_node, meter, (self.ancestors[0] + self.state.steps,
                                             self.ancestors[1] + self.state.skill_calls), self._root_state(),
                         counter, self.run_lock, getattr(block, "desk", None))

    def seconds_used(self) -> float:
        """Wall-clock seconds this run has been running, over all its stretches so far."""
        clock = self.services.clock
        return self.state.elapsed + (clock() - self._started if self.state.status == "running" else 0.0)

    def _stretch_done(self) -> None:
        self.state.elapsed += self.services.clock() - self._started

    def steps_elsewhere(self) -> int:
        """Steps of the run tree not counted in this machine's state: paused ancestors and finished children."""
        return self.ancestors[0] + self.meter.steps

    # ---- the dispatch loop ------------------------------------------------

    def prepare(self, code: CodeObject) -> list[tuple[int, Any]]:
        """The code's instructions as the dispatch loop runs them (vm/dispatch.py), cached per pipeline."""
        prepared = self.prepared.get(code)
        if prepared is None:
            prepared = self.prepared[code] = dispatch.prepare(code, self._binary)
        return prepared

    def next_stop(self, steps: int) -> int:
        """The step count at which the loop must leave its fast path (budget, pause, clock check, observers,
        the end of a task's turn)."""
        stop = steps + self.observer.step_interval
        if self.state.tasks:
            stop = steps if self.org.interrupt_due else min(stop, self.state.slice_end)
        if self.budget.max_steps is not None:
            stop = min(stop, self.budget.max_steps - self.steps_elsewhere())
        if self.pause_at is not None:
            stop = min(stop, self.pause_at)
        return stop

    def _loop(self) -> None:
        """Run the tasks until the run ends or pauses; a task that fails ends alone (its parallel block sees it)."""
        if self.state.calls:
            self.org.resume()
        while True:
            try:
                loop.dispatch(self)
                return
            except PipeRuntimeError as err:
                if not self.state.tasks or not err.catchable:
                    raise
                self.org.task_failed(err)

    def suspend(self) -> None:
        """Leave at a statement boundary: bring the elapsed time up to now, and let the observers save the state."""
        now = self.services.clock()
        self.state.elapsed += now - self._started
        self._started = now
        if events.Suspending in self.observer.hears:
            self.observer.on(events.Suspending(state=self.state))

    def at_stop(self, frame: Frame) -> bool | object:
        """The loop's slow path at a statement boundary: budgets, pausing, clock, observers and the organization's
        turns. True means leave the loop; loop.SWITCH that another task (or a message handler) is current now."""
        state = self.state
        if state.tasks and self.org.turn_over(frame):
            return loop.SWITCH
        budget = self.budget
        if budget.max_steps is not None and state.steps + self.steps_elsewhere() >= budget.max_steps:
            self.suspend()
            raise budget_exceeded("steps", budget.max_steps, state.steps + self.steps_elsewhere(),
                                  frame.code.span_at(frame.pc))
        if budget.max_seconds is not None:
            used = state.elapsed + self.services.clock() - self._started
            if used > budget.max_seconds:
                self.suspend()
                raise budget_exceeded("seconds", budget.max_seconds, used, frame.code.span_at(frame.pc))
        if self.pause_at is not None and state.steps >= self.pause_at:
            state.status = "paused"
            if events.Suspending in self.observer.hears:
                self.observer.on(events.Suspending(state=state))
            return True
        if events.AtStatement in self.observer.hears:
            self.observer.on(events.AtStatement(state, frame))
        return False
