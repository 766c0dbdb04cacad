"""Execute a compiled Program: the dispatch loop over bytecode, with statement-boundary stops for budgets."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from orgtree_lang.compile.api import program_identity
from orgtree_lang.compile.code import CodeObject, Program
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.records import RecordTypes
from orgtree_lang.runtime.values import UNBOUND, conforms
from orgtree_lang.syntax import types as t
from orgtree_lang.vm import calls, delivery, dispatch, messages, scheduler
from orgtree_lang.vm.blocks import MOVED, RELOAD
from orgtree_lang.vm.budget import ModelSpend, TreeMeter, budget_exceeded
from orgtree_lang.vm.errors import handle_error, translate, unbound_error as _unbound
from orgtree_lang.vm.dispatch import HANDLED, HANDLERS_BY_LOOP_CODE, LOCALS, LOOP_CODE, OTHER
from orgtree_lang.vm.instructions import BINARY_FUNCS
from orgtree_lang.vm.memory import guarded_operators
from orgtree_lang.vm.observe import observe
from orgtree_lang.vm.people import WaitingForHuman
from orgtree_lang.vm.runlock import RunLock
from orgtree_lang.vm.services import Services, TreePlace
from orgtree_lang.vm.state import Frame, RunState
from orgtree_lang.vm.trace import summarize

# The instructions the dispatch loop runs itself (vm/dispatch.py): the hot ones, and those that change frames.
# Every other opcode has exactly one entry in instructions.HANDLERS.
INLINE = dispatch.INLINE
_SWITCH = object()  # _at_stop: the current task's turn is over and another task is current now


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
        place = services.place
        # The tree-wide meter: a generated child shares its parent's; a top-level run's is its state's `usage`.
        self.place = place
        self.meter = place.meter if place is not None else TreeMeter()
        self.parent_node = place.parent_node if place is not None else None  # the block a child runs for
        self.ancestors = place.ancestors if place is not None else (0, 0)
        # One lock for the run tree (vm/runlock.py); a child inside a concurrently resolved block numbers its
        # journal steps in the block's own range (vm/block_calls.py).
        self.run_lock = place.run_lock if place is not None and place.run_lock is not None else RunLock()
        self.counter = place.counter if place is not None else None
        self.records = RecordTypes(program.records)
        self.state: RunState | None = None
        self._prepared: dict[CodeObject, list[tuple[int, Any]]] = {}
        # With a memory budget, `+` and `*` check the size of what they build; without one they cost nothing more.
        self._binary = BINARY_FUNCS if self.budget.max_memory is None else \
            guarded_operators(BINARY_FUNCS, self.budget.max_memory)
        self._started = 0.0
        self._pause_at: int | None = None
        # Slow calls of this machine's tasks in flight, by issue order: (pending, journal step, model spend).
        self.in_flight: dict[int, tuple] = {}
        self.cancels_pending = False  # some task has a cancel it has not seen yet
        self.interrupts_pending = False  # some task has a message its `on message` handler has not taken yet

    # ---- starting and resuming ------------------------------------------

    def start(self, entry: str | None = None, inputs: dict[str, Any] | None = None,
              run_id: str | None = None) -> RunState:
        """Create the run state for calling `entry` with `inputs` (validated against its parameters)."""
        code = self.program.entry(entry)
        frame = Frame(code.name, 0, [], [UNBOUND] * len(code.varnames), [], code, node=code.name)
        inputs = dict(inputs or {})
        for i, param in enumerate(code.params):
            if param.name in inputs:
                try:
                    value = self.records.from_plain(inputs.pop(param.name), param.type)
                except PipeRuntimeError as err:
                    raise PipeRuntimeError(f"input `{param.name}` of pipeline {code.name}: {err.message}",
                                           kind="input", span=code.span) from None
                if not conforms(value, param.type):
                    raise PipeRuntimeError(
                        f"input `{param.name}` of pipeline {code.name} expected {param.type}, got "
                        f"{t.type_of_value(value)} {summarize(value, 60)}", kind="input", span=code.span)
            elif param.has_default:
                value = param.default
            else:
                raise PipeRuntimeError(f"pipeline {code.name} needs input `{param.name}` ({param.type})",
                                       kind="input", span=code.span, hint=f"pass it with -i {param.name}=VALUE")
            frame.locals[i] = value
        if inputs:
            names = ", ".join(sorted(inputs))
            raise PipeRuntimeError(f"pipeline {code.name} has no parameter{'s' if len(inputs) > 1 else ''} {names}",
                                   kind="input", span=code.span,
                                   hint=f"its parameters are: {', '.join(p.name for p in code.params) or '(none)'}")
        self.state = RunState(run_id or uuid.uuid4().hex[:12], program_identity(self.program), code.name, [frame])
        self._bind_meter()
        self.observer.pipeline_entered(self.state, frame, self.parent_node)
        return self.state

    def attach(self, state: RunState) -> None:
        """Continue from a state (e.g. one loaded from JSON): link its frames to this program's code."""
        for frame in state.frames:
            frame.code = self.program.pipelines[frame.pipeline]
        for task in state.tasks:
            for frame in task.frames:
                frame.code = self.program.pipelines[frame.pipeline]
        self.cancels_pending = any(task.cancel for task in state.tasks)
        self.interrupts_pending = any(messages.interrupt_due(state, task) for task in state.tasks)
        self.state = state
        self._bind_meter()
        self.observer.frames_attached(state, self.parent_node)

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
        self._pause_at = None if pause_after is None else state.steps + pause_after
        self._started = self.services.clock()
        fresh = state.steps == 0 and state.status == "ready"
        state.status = "running"
        self.observer.run_started(state, fresh, self.program.entry(state.entry).span)
        self.run_lock.acquire()
        try:
            self._loop()
            self._stretch_done()
            self.observer.run_stopped(state, None)
            return state
        except PipeRuntimeError as err:
            state.status = "failed"
            state.error = {"message": err.message, "kind": err.kind, "span": str(err.span) if err.span else None}
            self._stretch_done()
            self.observer.run_stopped(state, err)
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
            delivery.settle(self)  # slow calls of other tasks in flight: journaled now, not lost
        self.observer.human_waiting(state, wait.question)
        if wait.exact:
            self._suspend()
        else:
            self._stretch_done()
        self.observer.run_stopped(state, None)

    def print_line(self, line: str) -> None:
        """Print for the program (the `print` built-in)."""
        calls.print_line(self, line)

    def release(self) -> None:
        """This machine will not run again: its observers let go of what they hold (a child's trace file)."""
        self.observer.released()

    # ---- the run tree -------------------------------------------------------

    def _root_state(self) -> RunState:
        return self.place.root_state if self.place is not None else self.state

    def next_effect_seq(self) -> int:
        """Number the next journaled step of the run tree (a child's steps continue its parent's numbering)."""
        numbering = self.step_counter()
        numbering.effect_seq += 1
        return numbering.effect_seq

    def step_counter(self):
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
        numbering = block.numbering() if block is not None else None
        counter = numbering if numbering is not None else self.counter
        return TreePlace(block_node, meter, (self.ancestors[0] + self.state.steps,
                                             self.ancestors[1] + self.state.skill_calls), self._root_state(),
                         counter, self.run_lock)

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

    def _prepare(self, code: CodeObject) -> list[tuple[int, Any]]:
        """The code's instructions as the dispatch loop runs them (vm/dispatch.py), cached per pipeline."""
        prepared = self._prepared.get(code)
        if prepared is None:
            prepared = self._prepared[code] = dispatch.prepare(code, self._binary)
        return prepared

    def _next_stop(self, steps: int) -> int:
        """The step count at which the loop must leave its fast path (budget, pause, clock check, observers,
        the end of a task's turn)."""
        stop = steps + self.observer.step_interval
        if self.state.tasks:
            stop = steps if self.cancels_pending or self.interrupts_pending else min(stop, self.state.slice_end)
        if self.budget.max_steps is not None:
            stop = min(stop, self.budget.max_steps - self.steps_elsewhere())
        if self._pause_at is not None:
            stop = min(stop, self._pause_at)
        return stop

    def _loop(self) -> None:
        """Run the tasks until the run ends or pauses; a task that fails ends alone (its parallel block sees it)."""
        if self.state.calls:
            delivery.reissue(self)
        while True:
            try:
                self._dispatch()
                return
            except PipeRuntimeError as err:
                if not self.state.tasks or not err.catchable:
                    raise
                scheduler.task_failed(self, err)

    def _dispatch(self) -> None:  # noqa: C901 - one flat loop is the fast shape for a dispatch loop
        state = self.state
        right = None  # the operands of the last operator, for error messages (vm/errors.translate)
        left = None
        unbound = UNBOUND
        # The loop's own instruction codes (vm/dispatch.py), bound to locals once so the loop compares plain ints.
        c = LOOP_CODE
        STMT, JUMP_STMT, JUMP_FOR_ITER_STORE, FOR_ITER_STORE = (
            c["STMT"], c["JUMP_STMT"], c["JUMP_FOR_ITER_STORE"], c["FOR_ITER_STORE"])
        COMPARE_LOCALS_JUMP_IF_FALSE, COMPARE_LOCAL_CONST_JUMP_IF_FALSE = (
            c["COMPARE_LOCALS_JUMP_IF_FALSE"], c["COMPARE_LOCAL_CONST_JUMP_IF_FALSE"])
        COMPARE_CONST_JUMP_IF_FALSE, COMPARE_JUMP_IF_FALSE = c["COMPARE_CONST_JUMP_IF_FALSE"], c["COMPARE_JUMP_IF_FALSE"]
        BINARY_LOCAL_CONST_STORE, LOAD_LOCAL2, BINARY_CONST, BINARY_STORE = (
            c["BINARY_LOCAL_CONST_STORE"], c["LOAD_LOCAL2"], c["BINARY_CONST"], c["BINARY_STORE"])
        LOAD_LOCAL, LOAD_CONST, STORE_LOCAL, BINARY_LOCALS_STORE = (
            c["LOAD_LOCAL"], c["LOAD_CONST"], c["STORE_LOCAL"], c["BINARY_LOCALS_STORE"])
        BINARY_LOCAL_CONST, BINARY_LOCALS, BINARY_CONST_STORE, BINARY, COMPARE = (
            c["BINARY_LOCAL_CONST"], c["BINARY_LOCALS"], c["BINARY_CONST_STORE"], c["BINARY"], c["COMPARE"])
        JUMP_IF_FALSE, JUMP, POP, FOR_ITER, CALL_BUILTIN = (
            c["JUMP_IF_FALSE"], c["JUMP"], c["POP"], c["FOR_ITER"], c["CALL_BUILTIN"])
        CALL_PIPELINE, RETURN = c["CALL_PIPELINE"], c["RETURN"]
        handlers = HANDLERS_BY_LOOP_CODE
        call_builtin = calls.call_builtin
        prepared = self._prepared
        while True:
            if state.tasks and scheduler.must_pick(state):
                try:
                    if scheduler.pick(self):
                        return
                except PipeRuntimeError as err:
                    handle_error(self, err)
                    continue
            frame = state.frames[-1]
            code = frame.code
            instructions, consts = self._prepare(code), code.consts
            stack, locals_, pc = frame.stack, frame.locals, frame.pc
            push, pop = stack.append, stack.pop
            steps = state.steps
            stop_at = self._next_stop(steps)
            try:
                while True:
                    op, arg = instructions[pc]
                    pc += 1
                    if op < LOCALS:  # statement boundaries, loops, compare-and-jump
                        if op == STMT:
                            if steps >= stop_at:
                                frame.pc = pc - 1
                                state.steps = steps
                                stop = self._at_stop(frame)
                                if stop:
                                    if stop is _SWITCH:
                                        break
                                    return
                                stop_at = self._next_stop(steps)
                            steps += 1
                        elif op == JUMP_STMT:
                            # JUMP and the STMT at its target in one: a stop leaves the frame at that STMT.
                            pc = arg + 1
                            if steps >= stop_at:
                                frame.pc = arg
                                state.steps = steps
                                stop = self._at_stop(frame)
                                if stop:
                                    if stop is _SWITCH:
                                        break
                                    return
                                stop_at = self._next_stop(steps)
                            steps += 1
                        elif op == COMPARE_LOCALS_JUMP_IF_FALSE:
                            left, right = locals_[arg[0]], locals_[arg[1]]
                            if left is unbound or right is unbound:
                                raise _unbound(code, arg[0] if left is unbound else arg[1])
                            if not arg[2](left, right):
                                pc = arg[3]
                        elif op == COMPARE_LOCAL_CONST_JUMP_IF_FALSE:
                            left = locals_[arg[0]]
                            if left is unbound:
                                raise _unbound(code, arg[0])
                            right = arg[1]
                            if not arg[2](left, right):
                                pc = arg[3]
                        elif op == COMPARE_CONST_JUMP_IF_FALSE:
                            left = pop()
                            right = arg[0]
                            if not arg[1](left, right):
                                pc = arg[2]
                        elif op == JUMP_FOR_ITER_STORE:
                            # JUMP and the FOR_ITER_STORE at its target in one.
                            items, i = stack[-2], stack[-1]
                            if i < len(items):
                                stack[-1] = i + 1
                                locals_[instructions[arg][1][0]] = items[i]
                                pc = arg + 1
                            else:
                                del stack[-2:]
                                pc = instructions[arg][1][1]
                        elif op == FOR_ITER_STORE:
                            items, i = stack[-2], stack[-1]
                            if i < len(items):
                                stack[-1] = i + 1
                                locals_[arg[0]] = items[i]
                            else:
                                del stack[-2:]
                                pc = arg[1]
                        elif op == COMPARE_JUMP_IF_FALSE:
                            right = pop()
                            left = pop()
                            if not arg[0](left, right):
                                pc = arg[1]
                        else:
                            raise AssertionError(f"loop code {op} is not in dispatch.FLOW")
                    elif op < OTHER:  # locals, constants, arithmetic into a local
                        if op == BINARY_LOCAL_CONST_STORE:
                            # An unbound local makes every operator raise TypeError: translate names the local.
                            left = locals_[arg[0]]
                            right = arg[1]
                            locals_[arg[3]] = arg[2](left, right)
                        elif op == LOAD_LOCAL2:
                            left, right = locals_[arg[0]], locals_[arg[1]]
                            if left is unbound or right is unbound:
                                raise _unbound(code, arg[0] if left is unbound else arg[1])
                            push(left)
                            push(right)
                        elif op == BINARY_CONST:
                            left = stack[-1]
                            right = arg[0]
                            stack[-1] = arg[1](left, right)
                        elif op == BINARY_STORE:
                            right = pop()
                            left = pop()
                            locals_[arg[1]] = arg[0](left, right)
                        elif op == LOAD_LOCAL:
                            value = locals_[arg]
                            if value is unbound:
                                raise _unbound(code, arg)
                            push(value)
                        elif op == LOAD_CONST:
                            push(consts[arg])
                        elif op == STORE_LOCAL:
                            locals_[arg] = pop()
                        elif op == BINARY_LOCALS_STORE:
                            left, right = locals_[arg[0]], locals_[arg[1]]
                            if left is unbound or right is unbound:
                                raise _unbound(code, arg[0] if left is unbound else arg[1])
                            locals_[arg[3]] = arg[2](left, right)
                        else:
                            raise AssertionError(f"loop code {op} is not in dispatch.LOCALS_GROUP")
                    elif op < HANDLED:
                        if op == BINARY_LOCAL_CONST:
                            left = locals_[arg[0]]
                            right = arg[1]
                            push(arg[2](left, right))
                        elif op == BINARY_LOCALS:
                            left, right = locals_[arg[0]], locals_[arg[1]]
                            if left is unbound or right is unbound:
                                raise _unbound(code, arg[0] if left is unbound else arg[1])
                            push(arg[2](left, right))
                        elif op == BINARY_CONST_STORE:
                            left = pop()
                            right = arg[0]
                            locals_[arg[2]] = arg[1](left, right)
                        elif op == BINARY or op == COMPARE:
                            right = pop()
                            left = stack[-1]
                            stack[-1] = arg(left, right)
                        elif op == JUMP_IF_FALSE:
                            if not pop():
                                pc = arg
                        elif op == JUMP:
                            pc = arg
                        elif op == POP:
                            pop()
                        elif op == FOR_ITER:
                            items, i = stack[-2], stack[-1]
                            if i < len(items):
                                stack[-1] = i + 1
                                push(items[i])
                            else:
                                del stack[-2:]
                                pc = arg
                        elif op == CALL_BUILTIN:
                            call_builtin(self, code.calls[arg], stack)
                        elif op == CALL_PIPELINE or op == RETURN:
                            frame.pc = pc
                            state.steps = steps
                            if op == RETURN:
                                if calls.return_from(self, frame, stack.pop()):
                                    return
                            else:
                                calls.call_pipeline(self, code.calls[arg], stack)
                            if state.tasks:
                                break  # the scheduler may pick another task: reload from the top
                            # Only the frame changed: the step count and where the loop must stop are the same.
                            frame = state.frames[-1]
                            code = frame.code
                            instructions, consts = prepared.get(code) or self._prepare(code), code.consts
                            stack, locals_, pc = frame.stack, frame.locals, frame.pc
                            push, pop = stack.append, stack.pop
                        else:
                            raise AssertionError(f"loop code {op} is not in dispatch.OTHERS")
                    else:
                        # The handled instructions may read the run state (a skill's node, a block's step).
                        frame.pc = pc
                        state.steps = steps
                        new_pc = handlers[op](self, frame, stack, arg)
                        if new_pc is not None:
                            if new_pc < 0:  # RELOAD, WAIT (run this instruction again) or MOVED (frame.pc set)
                                if new_pc != MOVED:
                                    frame.pc = pc if new_pc == RELOAD else pc - 1
                                break
                            pc = new_pc
            except PipeRuntimeError as err:
                frame.pc = pc
                state.steps = steps
                handle_error(self, err)
            except Exception as exc:  # a Python error inside an instruction becomes a located .pipe error
                frame.pc = pc
                state.steps = steps
                handle_error(self, translate(exc, code, pc - 1, stack, left, right))

    def _suspend(self) -> None:
        """Leave at a statement boundary: bring the elapsed time up to now, and let the observers save the state."""
        now = self.services.clock()
        self.state.elapsed += now - self._started
        self._started = now
        self.observer.suspending(self.state)

    def _at_stop(self, frame: Frame) -> bool | object:
        """Slow path at a statement boundary: budgets, pausing, clock, observers and the scheduler's turns.
        True means leave the loop; _SWITCH that another task's turn has come."""
        state = self.state
        if state.tasks:
            task = scheduler.current_task(state)
            if task.cancel:
                self.cancels_pending = any(t.cancel for t in state.tasks if t is not task)
                raise scheduler.cancelled_error(task)
            if self.interrupts_pending and messages.interrupt(self, task, frame):
                return _SWITCH
            if state.steps >= state.slice_end and scheduler.turn_over(self):
                return _SWITCH
        budget = self.budget
        if budget.max_steps is not None and state.steps + self.steps_elsewhere() >= budget.max_steps:
            self._suspend()
            raise budget_exceeded("steps", budget.max_steps, state.steps + self.steps_elsewhere(),
                                  frame.code.span_at(frame.pc))
        if budget.max_seconds is not None:
            used = state.elapsed + self.services.clock() - self._started
            if used > budget.max_seconds:
                self._suspend()
                raise budget_exceeded("seconds", budget.max_seconds, used, frame.code.span_at(frame.pc))
        if self._pause_at is not None and state.steps >= self._pause_at:
            state.status = "paused"
            self.observer.suspending(state)
            return True
        self.observer.at_statement(state, frame)
        return False
