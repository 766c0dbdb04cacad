"""The organization of one run: a typed Scheduler owns its tasks, their turns, the calls in flight, cancels and interrupts.

What a program observes never depends on thread timing: tasks take turns in a fixed order (round-robin by task id,
QUANTUM statements each), a slow call is numbered when its task asks for it, and when no task can run the scheduler
waits for the earliest-issued call, not whichever finishes first. So a run, its resume and its replay see the same
interleaving, and worker delays cannot change the output.

The Scheduler is the machine's Org (vm/organization.py), built by the run factory for each machine (a generated
child's shares its parent's run lock). It is the only writer of the scheduling state: the run state's tasks, current
task, turn end and outstanding calls, and its own calls in flight and pending cancels and interrupts
(tests/test_architecture.py checks it). The parts of the organization — parallel blocks, handles, delivery, block
calls, mailboxes, routes, outside messages, remote nodes, the human node — each hold the scheduler and change a task
through it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from orgtree_lang.org.block_calls import BlockCalls
from orgtree_lang.org.block_node import ChildMessages
from orgtree_lang.org.delivery import Delivery
from orgtree_lang.org.handles import Handles
from orgtree_lang.org.human import HumanNode
from orgtree_lang.org.mailboxes import Mailboxes
from orgtree_lang.org.node_agents import NodeAgents
from orgtree_lang.org.outside import OutsideMessages
from orgtree_lang.org.parallel import ParallelBlocks
from orgtree_lang.org.remote import RemoteNodes
from orgtree_lang.org.routing import Routing
from orgtree_lang.org.runlock import RunLock
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.syntax.spans import Span
from orgtree_lang.vm.state import LIVE, Call, Frame, RunState, Task
from orgtree_lang.vm import events

if TYPE_CHECKING:
    from orgtree_lang.vm.machine import Machine

QUANTUM = 64  # statements a task runs before the next ready task gets its turn


class Scheduler:
    """The organization of one machine's run (vm.organization.Org): its tasks and everything they wait on."""

    def __init__(self, machine: Machine) -> None:
        self.machine = machine
        place = machine.place
        self.lock = place.run_lock if place is not None and place.run_lock is not None else RunLock()
        # Calls of this run's tasks in flight, by issue order: (pending, journal step, its model spend or node call).
        self.in_flight: dict[int, tuple] = {}
        self.cancels_pending = False  # some task has a cancel it has not seen yet
        self.interrupts_pending = False  # some task has a message its `on message` handler has not taken yet
        self.parallel = ParallelBlocks(self)
        self.handles = Handles(self)
        self.delivery = Delivery(self)
        self.blocks = BlockCalls(self)
        self.mail = Mailboxes(self)
        self.routing = Routing(self)
        self.outside = OutsideMessages(self)
        self.remote = RemoteNodes(self)
        self.human = HumanNode(self)
        self.child_messages = ChildMessages(self)
        self.node_agents = NodeAgents(self)
        # What `execute` runs for each org opcode (vm.organization.ORG_OPCODES): each part names its own.
        self.opcodes = {name: getattr(part, method) for part in (self.parallel, self.handles, self.mail, self.human)
                        for name, method in part.OPCODES.items()}

    @property
    def state(self) -> RunState:
        return self.machine.state

    # ---- the machine's calls (vm.organization.Org) ----------------------------------------------------------

    def attach(self, state: RunState) -> None:
        self.cancels_pending = any(task.cancel for task in state.tasks)
        self.interrupts_pending = any(self.mail.interrupt_due(task) for task in state.tasks)

    def resume(self) -> None:
        self.delivery.reissue()

    def settle(self) -> None:
        self.delivery.settle()

    def issue_call(self, frame: Frame, skill: Any, site: Any, args: list, kwargs: dict) -> int:
        return self.delivery.issue(frame, skill, site, args, kwargs)

    def issue_block(self, frame: Frame, index: int, values: list, node_id: str) -> int:
        return self.blocks.issue(frame, index, values, node_id)

    def execute(self, name: str, frame: Frame, stack: list, arg: Any) -> int | None:
        return self.opcodes[name](frame, stack, arg)

    def block_messages(self, frame: Frame, block_path: str, entries: list[dict[str, Any]]) -> None:
        self.child_messages.deliver(frame, block_path, entries)

    @property
    def interrupt_due(self) -> bool:
        return self.cancels_pending or self.interrupts_pending

    def turn_over(self, frame: Frame) -> bool:
        if not (self.cancels_pending or self.interrupts_pending):  # the common stop: only the turn may be over
            state = self.machine.state
            return state.steps >= state.slice_end and self._next_turn()
        state = self.state
        task = self.current_task()
        if task.cancel:
            self.cancels_pending = any(t.cancel for t in state.tasks if t is not task)
            raise self.cancelled_error(task)
        if self.interrupts_pending:
            entered = self.mail.interrupt(task, frame)
            self.interrupts_pending = any(self.mail.interrupt_due(other) for other in state.tasks)
            if entered:
                return True
        return state.steps >= state.slice_end and self._next_turn()

    def pick(self) -> bool:
        state = self.state
        for task in state.tasks:  # one pass, at every frame load: the current task can go on
            if task.id == state.current:
                if task.status == "ready" and task.join is None:
                    return False
                break
        while True:
            task = self._next_ready()
            if task is not None:
                if task.id != state.current or state.frames is not task.frames:
                    self.switch(task)
                if task.join is not None:
                    self.parallel.joined(task)
                return False
            if state.calls:
                self.delivery.deliver_next()
                if self._must_pick():  # the delivery ended its task (a remote node): another one goes on
                    continue
                return False
            main = next((t for t in state.tasks if t.kind == "main"), None)
            idle = [t for t in state.tasks if t.status in LIVE and not t.cancel] if main is not None else []
            if main is not None and main.status == "done" and idle:
                # Only the nodes of routes are left, each waiting with nothing left to handle: they stop now.
                for task in idle:
                    self.cancel(task)
                continue
            if main is not None and main.status == "done":
                # The run's main task returned and every task it left running has ended.
                state.result, state.status = main.result, "done"
                state.tasks, state.frames, state.current = [], main.frames, 0
                return True
            if self.outside.take() or self.mail.fire_timeout():
                continue
            raise PipeRuntimeError("every task of the run is waiting and nothing can wake any of them (a deadlock): "
                                   + self.mail.blocked_at(), kind="deadlock", catchable=False,
                                   hint="a node waiting in receive() needs another node that sends to it; "
                                        "give receive a timeout to go on without one")

    def task_returned(self, value: Any) -> bool:
        """The current task's last frame returned `value`. A spawned task ends with it; the main task ends the run
        once the tasks it spawned and left running have seen a cancel and ended, and the nodes of routes have
        handled what was sent to them. True when the run is over."""
        state = self.state
        task = self.current_task()
        task.result = value
        task.status = "done"
        if task.kind != "main":
            self.ended(task)
            return False
        running = [other for other in state.tasks if other is not task and other.status in LIVE]
        for other in running:
            if other.route is None:  # a route's node first handles the messages sent to it (pick)
                self.cancel(other)
        if running:
            return False
        state.result, state.status = value, "done"
        state.tasks, state.current = [], 0
        return True

    def task_failed(self, err: PipeRuntimeError) -> None:
        """An error no try block of the current task caught: the task ends with it (its parallel block, or
        whoever awaits it, sees it). The run's main task failing fails the run."""
        task = self.current_task()
        if task.kind == "main":
            raise err
        error = {"message": err.message, "kind": err.kind, "line": err.span.line if err.span else None}
        self.finish(task, "cancelled" if err.kind == "cancelled" else "failed", error=error)

    # ---- tasks ------------------------------------------------------------------------------------------

    def current_task(self) -> Task:
        return self.task_by_id(self.state.current)

    def task_by_id(self, task_id: int) -> Task:
        for task in self.state.tasks:
            if task.id == task_id:
                return task
        raise KeyError(task_id)

    def enter_tasks(self) -> Task:
        """The run gets a second task: the frames running until now become task 0."""
        state = self.state
        if not state.tasks:
            state.tasks = [Task(0, state.frames[0].node, state.frames, kind="main")]
            state.current = 0
            state.slice_end = state.steps + QUANTUM
        return self.current_task()

    def leave_tasks(self) -> None:
        """Back to one task: the run costs what a run without tasks costs."""
        state = self.state
        if len(state.tasks) == 1 and state.tasks[0].id == 0 and not state.calls:
            if self.mail.interrupt_due(state.tasks[0]):
                # A message waits for its `on message` handler (one a block's child sent): it fires first.
                self.expect_interrupt()
                return
            state.tasks = []
            state.current = 0

    def new_task(self, node: str, frames: list[Frame], **fields: Any) -> Task:
        """A new task, ready to run `frames` as node `node` (its id the next one)."""
        state = self.state
        task = Task(state.next_task, node, frames, **fields)
        state.next_task += 1
        state.tasks.append(task)
        return task

    def switch(self, task: Task) -> None:
        state = self.state
        state.current = task.id
        state.frames = task.frames
        state.slice_end = state.steps + QUANTUM

    def wait(self, task: Task, status: str, on: int | None = None) -> None:
        """`task` waits: blocked, joining, awaiting (task `on`) or receiving (vm/state.py's LIVE)."""
        task.status = status
        if on is not None:
            task.waiting = on

    def wake(self, task: Task) -> None:
        task.status, task.waiting = "ready", None

    def remove(self, task: Task) -> None:
        """An ended task leaves the run (a spawned one once it was awaited)."""
        self.state.tasks.remove(task)

    def finish(self, task: Task, status: str, result: Any = None, error: dict[str, Any] | None = None) -> None:
        """`task` ended (done, failed or cancelled), with its result or error."""
        task.status = status
        if result is not None:
            task.result = result
        if error is not None:
            task.error = error
        self.ended(task)

    def ended(self, task: Task) -> None:
        state = self.state
        if events.TaskEnded in self.machine.observer.hears:
            self.machine.observer.on(events.TaskEnded(state=state, task=task))
        for other in state.tasks:
            if other.status == "awaiting" and other.waiting == task.id:
                self.wake(other)
        if task.kind == "spawn":
            task.frames = []  # kept, ended, until it is awaited
            if task.route is not None:  # no handle reaches a route's node: nothing will await it
                state.tasks.remove(task)
                self.routing.node_ended(task)
            return
        state.tasks.remove(task)
        self.parallel.branch_ended(task)

    def cancel(self, task: Task) -> None:
        """Ask `task` to stop: it sees a `cancelled` error at its next statement boundary (a call in flight
        finishes first, and its result is delivered and journaled as usual). A task awaiting another stops
        waiting; a task joining its parallel block cancels the block's branches too."""
        if task.cancel or task.cancelled:
            return
        task.cancel = True
        self.cancels_pending = True
        if events.TaskCancelled in self.machine.observer.hears:
            self.machine.observer.on(events.TaskCancelled(state=self.state, task=task))
        if task.status == "blocked" and task.kind == "spawn":
            self.remote.stop_node(task)  # a remote node has no statement boundary here to see the cancel at
        if task.status in ("awaiting", "receiving"):  # it sees the cancel where it waits
            self.wake(task)
        if task.join is not None:
            for tid in task.join["members"]:
                member = next((t for t in self.state.tasks if t.id == tid), None)
                if member is not None and member.status in LIVE:
                    self.cancel(member)

    @staticmethod
    def cancelled_error(task: Task) -> PipeRuntimeError:
        task.cancel = False
        task.cancelled = True
        return PipeRuntimeError(f"{task.label or task.node} was cancelled", kind="cancelled",
                                hint="catch it with try/except to clean up; the task ends after its handler")

    def _must_pick(self) -> bool:
        """Whether the current task cannot go on: it ended, waits, or its parallel block just finished."""
        state = self.state
        for task in state.tasks:
            if task.id == state.current:
                return task.status != "ready" or task.join is not None
        return True

    def _next_ready(self) -> Task | None:
        """The first ready task (in task order) with an id after the current one's, else the first ready one."""
        current = self.machine.state.current
        first = None
        for task in self.state.tasks:  # one pass: this runs at the end of every turn
            if task.status == "ready":
                if task.id > current:
                    return task
                if first is None:
                    first = task
        return first

    def _next_turn(self) -> bool:
        """The current task's quantum is spent: give the next ready task its turn. True when the task changed."""
        state = self.machine.state
        state.slice_end = state.steps + QUANTUM
        task = self._next_ready()
        if task is None or task.id == state.current:
            return False
        self.switch(task)
        return True

    # ---- calls in flight ------------------------------------------------------------------------------------

    def new_call(self, task: int, name: str, args: list, kwargs: dict, seq: int | None, node: str, span: Span,
                 **fields: Any) -> Call:
        """A call issued now by task `task`, outstanding until it is delivered (numbered in issue order)."""
        state = self.state
        call = Call(state.next_call, task, name, args, kwargs, seq, node,
                    (span.file, span.line, span.col, span.end_line, span.end_col), state.steps, time.perf_counter(),
                    **fields)
        state.next_call += 1
        state.calls.append(call)
        return call

    def drop_call(self, call: Call) -> None:
        """`call` was delivered: it is no longer outstanding."""
        self.state.calls.remove(call)

    def put_back(self, call: Call) -> None:
        """A delivered call that must run again (a lost executor): outstanding again, in its issue order."""
        calls = self.state.calls
        calls.insert(next((i for i, c in enumerate(calls) if c.order > call.order), len(calls)), call)

    def track(self, call: Call, pending: Any, step: Any = None, extra: Any = None) -> None:
        """`call` is in flight: `pending` will give its result; `step` is its journal step, `extra` its model
        spend (a skill call) or its vm.executor.NodeCall (a remote node)."""
        self.in_flight[call.order] = (pending, step, extra)

    def untrack(self, call: Call) -> tuple | None:
        """`call` is no longer in flight: what `track` was given (None if it was not in flight)."""
        return self.in_flight.pop(call.order, None)

    def expect_interrupt(self) -> None:
        """A message waits for an `on message` handler: the loop stops at every statement boundary until it runs."""
        self.interrupts_pending = True
