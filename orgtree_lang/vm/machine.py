"""Execute a compiled Program: the dispatch loop over bytecode, frames, budgets, skills and the decomposer hook."""

from __future__ import annotations

import dataclasses
import time
import uuid
from typing import Any, Callable, Protocol

from orgtree_lang.compile.code import AmbiguousSpec, CodeObject, Program
from orgtree_lang.compile.opcodes import BY_NAME
from orgtree_lang.runtime.builtins import BUILTINS, error_value
from orgtree_lang.runtime.errors import PipeRuntimeError, SkillError, StackEntry
from orgtree_lang.runtime.records import RecordTypes
from orgtree_lang.runtime.values import UNBOUND, conforms
from orgtree_lang.syntax import types as t
from orgtree_lang.syntax.spans import Span
from orgtree_lang.durable.effects import EffectLog, EffectStep
from orgtree_lang.vm.budget import Budget, ModelSpend, TreeMeter, budget_exceeded
from orgtree_lang.vm.instructions import BINARY_FUNCS, COMPARE_FUNCS, SLOW_HANDLERS, UNARY_FUNCS
from orgtree_lang.vm.state import Frame, RunState
from orgtree_lang.vm.trace import SUMMARY_CHARS, Tracer, summarize

MAX_FRAMES = 200
RELOAD = -1  # returned by an instruction handler: leave the inner loop and reload the frame and budget stops
_TIME_CHECK_EVERY = 4096  # steps between wall-clock checks


class Decomposer(Protocol):
    """Resolves an ambiguous block: given its spec and input values, returns a value for each output."""

    def __call__(self, spec: AmbiguousSpec, inputs: dict[str, Any], machine: Machine) -> dict[str, Any]: ...


_OPERAND_FUNCS = {"binop": BINARY_FUNCS, "compare": COMPARE_FUNCS, "unary": UNARY_FUNCS}

# Integer opcodes, bound once so the dispatch loop compares plain ints.
_OP = {name: spec.code for name, spec in BY_NAME.items()}
_NAMES = {code: name for name, code in _OP.items()}


class Machine:
    """Runs one program; all mutable run state lives in `self.state` (a RunState) between steps."""

    def __init__(
        self,
        program: Program,
        *,
        registry=None,
        context=None,
        budget: Budget | None = None,
        decomposer: Decomposer | None = None,
        tracer: Tracer | None = None,
        printer: Callable[[str], None] | None = None,
        progress: Callable[[RunState, Span], None] | None = None,
        effects: EffectLog | None = None,
        clock: Callable[[], float] = time.monotonic,
        recorder=None,
        meter: TreeMeter | None = None,
        parent_node: str | None = None,
        ancestors: tuple[int, int] = (0, 0),
        parent: Machine | None = None,
    ) -> None:
        self.program = program
        self.registry = registry
        # runtime.skills.SkillContext handed to skills, with this machine's ModelSpend for their model calls
        if dataclasses.is_dataclass(context) and hasattr(context, "spend"):
            context = dataclasses.replace(context, spend=ModelSpend(self))
        self.context = context
        self.budget = budget or Budget()
        self.decomposer = decomposer
        self.tracer = tracer
        self.printer = printer
        self.clock = clock
        self.progress = progress  # called about once a second on long runs, with the state and location
        self.effects = effects  # the journal's door: side-effecting steps go through it in a durable run
        self.recorder = recorder  # orgtree.recorder.TreeRecorder: the run's nodes for `pipe tree` and call history
        # The tree-wide meter: a generated child shares its parent's; a top-level run's is its state's `usage`.
        self._own_meter = meter is None
        self.meter = meter if meter is not None else TreeMeter()
        self.parent_node = parent_node  # the ambiguous node a generated child runs for
        self.ancestors = ancestors  # steps and skill calls of the paused machines above a generated child
        self.block_node: str | None = None  # the ambiguous node being resolved now (the decomposer reads it)
        # A generated child shares its parent's journal: its effects take the top-level run's step numbers,
        # and only the top-level run's state is checkpointed.
        self._root: Machine = parent._root if parent is not None else self
        self._last_progress = 0.0
        self.records = RecordTypes(program.records)
        self.state: RunState | None = None
        self._prepared: dict[str, list[Any]] = {}
        self._started = 0.0
        self._pause_at: int | None = None

    # ---- starting and resuming ------------------------------------------

    def start(self, entry: str | None = None, inputs: dict[str, Any] | None = None, run_id: str | None = None) -> RunState:
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
        self.state = RunState(run_id or uuid.uuid4().hex[:12], self.program.source_hash, code.name, [frame])
        self._bind_meter()
        if self.recorder is not None:
            self.recorder.open(self._node_id(frame.node), self.state.run_id, self.parent_node, code.name, "pipeline",
                               inputs=_summarize_inputs(code.params, frame.locals))
        return self.state

    def attach(self, state: RunState) -> None:
        """Continue from a state (e.g. one loaded from JSON): link its frames to this program's code."""
        for frame in state.frames:
            frame.code = self.program.pipelines[frame.pipeline]
        self.state = state
        self._bind_meter()
        if self.recorder is not None:  # the nodes still open when the state was saved are running again
            parent = self.parent_node
            for frame in state.frames:
                node_id = self._node_id(frame.node)
                before = self.recorder.recorded(node_id)  # keep the caller and inputs of the first opening
                self.recorder.open(node_id, state.run_id, parent, frame.pipeline, "pipeline",
                                   caller=before.caller if before else "", inputs=before.inputs if before else "")
                parent = node_id

    def _bind_meter(self) -> None:
        if self._own_meter:
            self.meter = TreeMeter(self.state.usage)

    def _node_id(self, node: str) -> str:
        return f"{self.state.run_id}/{node}"

    def run(self, pause_after: int | None = None) -> RunState:
        """Run until the program finishes or fails, or (if given) until `pause_after` more steps have run."""
        state = self.state
        if state is None:
            raise RuntimeError("call start() or attach() first")
        if state.status in ("done", "failed"):
            return state
        self._pause_at = None if pause_after is None else state.steps + pause_after
        self._started = self.clock()
        if self.tracer and state.steps == 0 and state.status == "ready":
            self.tracer.emit("run.start", self.program.entry(state.entry).span, state.entry, entry=state.entry)
        state.status = "running"
        if self._checkpoints() and state.steps == 0:
            self.effects.checkpoint(state)
        try:
            self._loop()
        except PipeRuntimeError as err:
            state.status = "failed"
            state.error = {"message": err.message, "kind": err.kind, "span": str(err.span) if err.span else None}
            self._stretch_done()
            if self.recorder is not None:
                for frame in reversed(state.frames):
                    self.recorder.close(self._node_id(frame.node), "error", error=err.message)
                self.recorder.flush()
            if self.tracer:
                self.tracer.emit("run.end", err.span, None, outcome="error", error=err.message, steps=state.steps)
            raise
        self._stretch_done()
        if self.recorder is not None:
            self.recorder.flush()
        if state.status == "done" and self.tracer:
            self.tracer.emit("run.end", None, None, outcome="ok", result=summarize(state.result), steps=state.steps,
                             skill_calls=state.skill_calls)
        return state

    def _checkpoints(self) -> bool:
        return self.effects is not None and self._root is self

    def next_effect_seq(self) -> int:
        """Number the next journaled step of the run tree (a child's steps continue its parent's numbering)."""
        root = self._root.state
        root.effect_seq += 1
        return root.effect_seq

    def effect_node(self, node: str) -> str:
        """A node's path in the journal: a child's nodes sit under its ambiguous node (`main/classify@7/main`)."""
        if self._root is self:
            return node
        return f"{self.state.run_id[len(self._root.state.run_id) + 1:]}/{node}"

    def seconds_used(self) -> float:
        """Wall-clock seconds this run has been running, over all its stretches so far."""
        return self.state.elapsed + (self.clock() - self._started if self.state.status == "running" else 0.0)

    def _stretch_done(self) -> None:
        self.state.elapsed += self.clock() - self._started

    # ---- the dispatch loop ------------------------------------------------

    def _prepare(self, code: CodeObject) -> list[Any]:
        """Instruction arguments with operator names replaced by their functions (cached per pipeline)."""
        prepared = self._prepared.get(code.name)
        if prepared is None:
            from orgtree_lang.compile.opcodes import OPCODES

            prepared = []
            for op, arg in zip(code.ops, code.args):
                operand = OPCODES[op].operand
                if operand in _OPERAND_FUNCS:
                    arg = _OPERAND_FUNCS[operand][arg]
                elif operand == "binop_const":
                    arg = (code.consts[arg[0]], BINARY_FUNCS[arg[1]])
                elif operand == "locals":
                    arg = tuple(arg)
                elif operand == "compare_jump":
                    arg = (COMPARE_FUNCS[arg[0]], arg[1])
                prepared.append(arg)
            self._prepared[code.name] = prepared
        return prepared

    def _next_stop(self, steps: int) -> int:
        """The step count at which the loop must leave its fast path (budget, pause, clock check, trace)."""
        stops = [steps + (_TIME_CHECK_EVERY if self.effects is None else 256)]
        if self.budget.max_steps is not None:
            stops.append(self.budget.max_steps - self._steps_elsewhere())
        if self._pause_at is not None:
            stops.append(self._pause_at)
        if self.tracer is not None and self.tracer.steps:
            stops.append(steps)
        return min(stops)

    def _loop(self) -> None:  # noqa: C901 - one flat loop is the fast shape for a dispatch loop
        state = self.state
        right = None  # the right operand of the last BINARY/COMPARE, for error messages
        LOAD_LOCAL2, BINARY_CONST = _OP["LOAD_LOCAL2"], _OP["BINARY_CONST"]
        COMPARE_JUMP_IF_FALSE, FOR_ITER_STORE = _OP["COMPARE_JUMP_IF_FALSE"], _OP["FOR_ITER_STORE"]
        left = None
        STMT, LOAD_LOCAL, LOAD_CONST, STORE_LOCAL = _OP["STMT"], _OP["LOAD_LOCAL"], _OP["LOAD_CONST"], _OP["STORE_LOCAL"]
        BINARY, COMPARE, JUMP, JUMP_IF_FALSE = _OP["BINARY"], _OP["COMPARE"], _OP["JUMP"], _OP["JUMP_IF_FALSE"]
        FOR_ITER, POP, CALL_BUILTIN = _OP["FOR_ITER"], _OP["POP"], _OP["CALL_BUILTIN"]
        CALL_PIPELINE, RETURN = _OP["CALL_PIPELINE"], _OP["RETURN"]
        slow = self._slow_ops()
        while True:
            frame = state.frames[-1]
            code = frame.code
            ops, args, consts = code.ops, self._prepare(code), code.consts
            stack, locals_, pc = frame.stack, frame.locals, frame.pc
            push, pop = stack.append, stack.pop
            steps = state.steps
            stop_at = self._next_stop(steps)
            try:
                while True:
                    op = ops[pc]
                    arg = args[pc]
                    pc += 1
                    if op == STMT:
                        if steps >= stop_at:
                            frame.pc = pc - 1
                            state.steps = steps
                            if self._at_stop(frame):
                                return
                            stop_at = self._next_stop(steps)
                        steps += 1
                    elif op == LOAD_LOCAL2:
                        first, second = locals_[arg[0]], locals_[arg[1]]
                        if first is UNBOUND or second is UNBOUND:
                            name = code.varnames[arg[0] if first is UNBOUND else arg[1]]
                            raise PipeRuntimeError(f"variable `{name}` is used before it is assigned",
                                                   kind="name", hint="assign it on every path before this line")
                        push(first)
                        push(second)
                    elif op == BINARY_CONST:
                        right = arg[0]
                        stack[-1] = arg[1](stack[-1], right)
                    elif op == STORE_LOCAL:
                        locals_[arg] = pop()
                    elif op == LOAD_LOCAL:
                        value = locals_[arg]
                        if value is UNBOUND:
                            raise PipeRuntimeError(f"variable `{code.varnames[arg]}` is used before it is assigned",
                                                   kind="name", hint="assign it on every path before this line")
                        push(value)
                    elif op == LOAD_CONST:
                        push(consts[arg])
                    elif op == BINARY:
                        right = pop()
                        stack[-1] = arg(stack[-1], right)
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
                    elif op == COMPARE:
                        right = pop()
                        stack[-1] = arg(stack[-1], right)
                    elif op == JUMP_IF_FALSE:
                        if not pop():
                            pc = arg
                    elif op == JUMP:
                        pc = arg
                    elif op == FOR_ITER:
                        items, i = stack[-2], stack[-1]
                        if i < len(items):
                            stack[-1] = i + 1
                            push(items[i])
                        else:
                            del stack[-2:]
                            pc = arg
                    elif op == POP:
                        pop()
                    elif op == CALL_BUILTIN:
                        self._call_builtin(code.calls[arg], stack, frame)
                    elif op == CALL_PIPELINE or op == RETURN:
                        frame.pc = pc
                        state.steps = steps
                        if op == RETURN:
                            if self._return(frame, stack.pop()):
                                return
                        else:
                            self._call_pipeline(code.calls[arg], stack)
                        break  # reload the new top frame
                    else:
                        # The slow instructions may read the run state (a skill's node, a block's step).
                        frame.pc = pc
                        state.steps = steps
                        new_pc = slow[op](self, frame, stack, arg)
                        if new_pc is not None:
                            if new_pc == RELOAD:
                                frame.pc = pc
                                break
                            pc = new_pc
            except PipeRuntimeError as err:
                frame.pc = pc
                state.steps = steps
                self._handle_error(err)
            except Exception as exc:  # a Python error inside an instruction becomes a located .pipe error
                frame.pc = pc
                state.steps = steps
                self._handle_error(self._translate(exc, code, pc - 1, stack, left, right))

    def _steps_elsewhere(self) -> int:
        """Steps of the run tree not counted in this machine's state: paused ancestors and finished children."""
        return self.ancestors[0] + self.meter.steps

    def _checkpoint_before_stop(self) -> None:
        """A budget stop happens at a statement boundary: save the state there so resume starts right here."""
        if self._checkpoints():
            self.state.elapsed += self.clock() - self._started
            self._started = self.clock()
            self.effects.checkpoint(self.state)

    def _at_stop(self, frame: Frame) -> bool:
        """Slow path at a statement boundary: budgets, pausing, clock and tracing. True means leave the loop."""
        state = self.state
        budget = self.budget
        if budget.max_steps is not None and state.steps + self._steps_elsewhere() >= budget.max_steps:
            self._checkpoint_before_stop()
            raise budget_exceeded("steps", budget.max_steps, state.steps + self._steps_elsewhere(),
                                  frame.code.span_at(frame.pc))
        if budget.max_seconds is not None:
            used = state.elapsed + self.clock() - self._started
            if used > budget.max_seconds:
                self._checkpoint_before_stop()
                raise budget_exceeded("seconds", budget.max_seconds, used, frame.code.span_at(frame.pc))
        if self._pause_at is not None and state.steps >= self._pause_at:
            state.status = "paused"
            if self._checkpoints():
                self.effects.checkpoint(state)
            return True
        if self._checkpoints() and self.effects.checkpoint_due(state.steps, state.effect_seq):
            self.effects.checkpoint(state)
        if self.progress is not None:
            now = self.clock()
            if now - self._last_progress >= 1.0:
                self._last_progress = now
                self.progress(state, frame.code.span_at(frame.pc))
        if self.tracer is not None and self.tracer.steps:
            self.tracer.emit("step", frame.code.span_at(frame.pc), frame.pipeline, step=state.steps + 1)
        return False

    # ---- errors -----------------------------------------------------------

    def _translate(self, exc: Exception, code: CodeObject, pc: int, stack: list, left: Any,
                   right: Any) -> PipeRuntimeError:
        """Turn a Python exception raised by an instruction into a .pipe error at that instruction."""
        opname = _NAMES[code.ops[pc]]
        if isinstance(exc, ZeroDivisionError):
            message = "division by zero"
        elif isinstance(exc, TypeError) and opname == "COMPARE_JUMP_IF_FALSE":
            symbol = code.args[pc][0]
            message = f"cannot apply `{symbol}` to {t.type_of_value(left)} and {t.type_of_value(right)}"
        elif isinstance(exc, TypeError) and opname in ("BINARY", "COMPARE", "BINARY_CONST") and stack:
            symbol = code.args[pc][1] if opname == "BINARY_CONST" else code.args[pc]
            left_type, right_type = t.type_of_value(stack[-1]), t.type_of_value(right)
            message = f"cannot apply `{symbol}` to {left_type} and {right_type}"
        elif isinstance(exc, TypeError) and opname == "UNARY" and stack:
            message = f"cannot apply unary `{code.args[pc]}` to {t.type_of_value(stack[-1])}"
        elif isinstance(exc, RecursionError):
            message = "value nested too deeply"
        elif isinstance(exc, MemoryError):
            message = "out of memory"
        elif isinstance(exc, OverflowError):
            message = _overflow_message(str(exc))
        elif isinstance(exc, (TypeError, ValueError)):
            message = _python_types_to_pipe(str(exc))
        else:
            raise exc
        kind = "arithmetic" if isinstance(exc, (ZeroDivisionError, OverflowError)) else "type"
        err = PipeRuntimeError(message, kind=kind, span=code.span_at(pc))
        err.__cause__ = exc
        return err

    def _handle_error(self, err: PipeRuntimeError) -> None:
        """Locate the error, record the .pipe call stack, and jump to the innermost handler or re-raise."""
        state = self.state
        if err.span is None:
            top = state.frames[-1]
            err.span = top.code.span_at(max(top.pc - 1, 0))
        if not err.stack:
            err.stack = [StackEntry(f.code.span_at(max(f.pc - 1, 0)), f.pipeline) for f in reversed(state.frames)]
        if self.tracer:
            self.tracer.emit("error", err.span, state.frames[-1].pipeline, kind=err.kind, error=err.message,
                             outcome="caught" if err.catchable and any(f.handlers for f in state.frames) else "raised")
        if not err.catchable:
            raise err
        # Find the innermost open try; if there is none, the frames stay as they are (for resume and reports).
        for index in range(len(state.frames) - 1, -1, -1):
            if state.frames[index].handlers:
                break
        else:
            raise err
        if self.recorder is not None:
            for unwound in state.frames[index + 1:]:
                self.recorder.close(self._node_id(unwound.node), "error", error=err.message)
        del state.frames[index + 1:]
        frame = state.frames[index]
        handler_pc, depth = frame.handlers.pop()
        del frame.stack[depth:]
        frame.stack.append(error_value(err))
        frame.pc = handler_pc

    # ---- calls ------------------------------------------------------------

    def _call_args(self, site, stack: list) -> tuple[list, dict]:
        count = site.nargs + len(site.kwnames)
        values = stack[len(stack) - count:] if count else []
        if count:
            del stack[-count:]
        args = values[: site.nargs]
        kwargs = dict(zip(site.kwnames, values[site.nargs:]))
        return args, kwargs

    def _call_builtin(self, site, stack: list, frame: Frame) -> None:
        args, kwargs = self._call_args(site, stack)
        stack.append(BUILTINS[site.name].impl(args, kwargs, self._print))

    def _print(self, line: str) -> None:
        self.state.output.append(line)
        if self.printer is not None and not (self.effects is not None and self.effects.catching_up):
            self.printer(line)
        if self.tracer:
            frame = self.state.frames[-1]
            self.tracer.emit("print", frame.code.span_at(frame.pc - 1), frame.pipeline, text=line[:SUMMARY_CHARS])

    def _call_pipeline(self, site, stack: list) -> None:
        state = self.state
        args, kwargs = self._call_args(site, stack)
        code = self.program.pipelines[site.name]
        if len(state.frames) >= MAX_FRAMES:
            raise PipeRuntimeError(f"pipeline calls nested more than {MAX_FRAMES} deep", kind="recursion",
                                   hint="check for a pipeline that calls itself without stopping")
        local_values = [UNBOUND] * len(code.varnames)
        for i, param in enumerate(code.params):
            if i < len(args):
                value = args[i]
            elif param.name in kwargs:
                value = kwargs[param.name]
            elif param.has_default:
                value = param.default
            else:
                raise PipeRuntimeError(f"pipeline {code.name} is missing argument `{param.name}`", kind="type")
            if not conforms(value, param.type):
                raise PipeRuntimeError(f"argument `{param.name}` of pipeline {code.name} expected {param.type}, got "
                                       f"{t.type_of_value(value)} {summarize(value, 60)}", kind="type")
            local_values[i] = value
        if self.tracer:
            caller = state.frames[-1]
            self.tracer.emit("pipeline.call", caller.code.span_at(caller.pc - 1), caller.pipeline, pipeline=code.name)
        caller = state.frames[-1]
        caller.calls += 1
        node = f"{caller.node}/{code.name}#{caller.calls}"
        state.frames.append(Frame(code.name, 0, [], local_values, [], code, node=node))
        if self.recorder is not None:
            self.recorder.open(self._node_id(node), state.run_id, self._node_id(caller.node), code.name, "pipeline",
                               caller=caller.pipeline, inputs=_summarize_inputs(code.params, local_values))

    def _return(self, frame: Frame, value: Any) -> bool:
        """Pop the frame, checking the value against its declared type; True when the run is finished."""
        state = self.state
        code = frame.code
        if not conforms(value, code.returns):
            ended = code.ops[frame.pc - 1] == _OP["RETURN"] and frame.pc == len(code.ops)
            what = "ended without a return" if ended and value is None else f"returned {t.type_of_value(value)}"
            raise PipeRuntimeError(f"pipeline {code.name} {what}, but declares -> {code.returns}", kind="type",
                                   span=code.span_at(frame.pc - 1))
        state.frames.pop()
        if self.recorder is not None:
            self.recorder.close(self._node_id(frame.node), "ok", output=summarize(value))
        if not state.frames:
            state.result = value
            state.status = "done"
            return True
        state.frames[-1].stack.append(value)
        if self.tracer:
            self.tracer.emit("pipeline.return", None, code.name, result=summarize(value))
        return False

    def _call_skill(self, frame: Frame, stack: list, arg: int) -> None:
        state = self.state
        site = frame.code.calls[arg]
        args, kwargs = self._call_args(site, stack)
        budget = self.budget
        if budget.max_skill_calls is not None:
            used = state.skill_calls + self.ancestors[1] + self.meter.skill_calls
            if used >= budget.max_skill_calls:
                raise budget_exceeded("skill_calls", budget.max_skill_calls, used, frame.code.span_at(frame.pc - 1))
        state.skill_calls += 1
        skill = self.registry.get(site.name) if self.registry is not None else None
        if skill is None:
            raise PipeRuntimeError(f"skill {site.name} is not installed", kind="skill",
                                   hint="`pipe skills` lists the installed skills")
        started = time.perf_counter()
        outcome, result, failure = "ok", None, None
        try:
            if skill.pure or self.effects is None:
                result = skill.invoke(args, kwargs, self.context)
            else:
                step = EffectStep(self.next_effect_seq(), "skill", site.name, self.effect_node(frame.node),
                                  frame.code.span_at(frame.pc - 1), args, kwargs)
                result = self.effects.perform(
                    step, lambda key: skill.invoke(args, kwargs, _with_idempotency_key(self.context, key)))
        except SkillError as err:
            outcome, failure = "error", err.message
            raise PipeRuntimeError(err.message if err.message.startswith(site.name) else f"{site.name}: {err.message}",
                                   kind="skill", hint=err.hint) from err
        except PipeRuntimeError as err:
            outcome, failure = "error", err.message
            raise
        except Exception as exc:
            outcome, failure = "error", f"{type(exc).__name__}: {exc}"
            error = PipeRuntimeError(f"skill {site.name} crashed: {type(exc).__name__}: {exc}", kind="skill",
                                     hint="this is a bug in the skill; run with --debug to see the Python traceback")
            raise error from exc
        finally:
            if self.recorder is not None:
                self._record_skill(frame, site.name, args, kwargs, started, outcome, result, failure)
            if self.tracer:
                self.tracer.emit(
                    "skill", frame.code.span_at(frame.pc - 1), frame.pipeline, skill=site.name,
                    args=[summarize(a, 80) for a in args], kwargs={k: summarize(v, 80) for k, v in kwargs.items()},
                    result=summarize(result) if outcome == "ok" else None,
                    duration_ms=round((time.perf_counter() - started) * 1000, 3), outcome=outcome,
                )
        stack.append(result)

    def _record_skill(self, frame: Frame, name: str, args: list, kwargs: dict, started: float, outcome: str,
                      result: Any, failure: str | None) -> None:
        duration_ms = round((time.perf_counter() - started) * 1000, 3)
        spend = getattr(self.context, "spend", None)
        tokens, cost = spend.take() if spend is not None else (0, 0.0)
        inputs = ", ".join([summarize(a, 80) for a in args] + [f"{k}={summarize(v, 80)}" for k, v in kwargs.items()])
        self.recorder.skill_call(
            self._node_id(f"{frame.node}/{name}#s{self.state.skill_calls}"), self.state.run_id,
            self._node_id(frame.node), name, frame.pipeline, inputs, time.time() - duration_ms / 1000, duration_ms,
            outcome, summarize(result) if outcome == "ok" else "", failure, tokens, cost)

    def _ambiguous(self, frame: Frame, stack: list, arg: int) -> int | None:
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
        if self.decomposer is None and (self.effects is None or self.effects.mode != "replay"):
            raise PipeRuntimeError(
                f"ambiguous block `{spec.name}` cannot run: no decomposer is configured", kind="ambiguous",
                hint="configure a model for the decomposer with `--model NAME` or the PIPE_MODEL environment variable "
                     "(or replace the block with skill calls)",
                catchable=False,
            )
        if self.tracer:
            self.tracer.emit("ambiguous", spec.span, frame.pipeline, block=spec.name,
                             inputs={k: summarize(v, 80) for k, v in inputs.items()})
        node_id = self._node_id(f"{frame.node}/{spec.name}@{self.state.steps}")
        if self.recorder is not None:
            self.recorder.open(node_id, self.state.run_id, self._node_id(frame.node), spec.name, "ambiguous",
                               caller=frame.pipeline, inputs=", ".join(f"{k}={summarize(v, 80)}"
                                                                        for k, v in inputs.items()))
        try:
            outputs = self._resolve(spec, inputs, values, frame, node_id)
        except PipeRuntimeError as err:
            if self.recorder is not None:
                self.recorder.close(node_id, "error", error=err.message)
            raise
        if self.recorder is not None:
            self.recorder.close(node_id, "ok", output=", ".join(f"{k}={summarize(v, 80)}" for k, v in outputs.items()))
        for name, ptype in reversed(spec.outputs):
            if name not in outputs:
                raise PipeRuntimeError(f"the decomposer gave no output `{name}` for ambiguous block {spec.name}",
                                       kind="ambiguous")
            if not conforms(outputs[name], ptype):
                raise PipeRuntimeError(f"output `{name}` of ambiguous block {spec.name} expected {ptype}, got "
                                       f"{t.type_of_value(outputs[name])}", kind="ambiguous")
            stack.append(outputs[name])
        return RELOAD  # the tree meter moved: the loop recomputes where its budgets stop it

    def _resolve(self, spec: AmbiguousSpec, inputs: dict[str, Any], values: list, frame: Frame,
                 node_id: str) -> dict[str, Any]:
        """The block's outputs from the decomposer, or from the journal; what the child tree spent is metered.

        The journaled result carries that spending, so a resumed or replayed run that takes the outputs from
        the journal counts it again, just as the original run did. It also says how many step numbers the
        block used inside (model answers, the child's effects), which such a run skips over."""
        ran = []
        seq = self._root.state.effect_seq

        def decompose(_key: str | None = None) -> dict[str, Any]:
            ran.append(True)
            before = self.meter.snapshot()
            self.block_node = node_id
            try:
                outputs = self.decomposer(spec, inputs, self)
            finally:
                self.block_node = None
            # The keys end in `:`, which no output name can, so results journaled by earlier versions (the
            # outputs alone) are told apart.
            return {"outputs:": outputs, "spent:": self.meter.since(before),
                    "effects:": self._root.state.effect_seq - seq}

        if self.effects is None:
            return decompose()["outputs:"]
        seq = self.next_effect_seq()
        step = EffectStep(seq, "ambiguous", spec.name, self.effect_node(frame.node), spec.span, values, {})
        result = self.effects.perform(step, decompose)
        if "outputs:" not in result:
            return result
        if not ran:
            self.meter.add(result["spent:"])
            # The steps journaled inside the block (model answers, the child's effects) keep their numbers.
            root = self._root.state
            root.effect_seq = max(root.effect_seq, seq + result.get("effects:", 0))
        return result["outputs:"]

    # ---- the less frequent instructions ---------------------------------

    def _slow_ops(self) -> dict[int, Callable]:
        return {_OP[name]: handler for name, handler in SLOW_HANDLERS.items()}


def _summarize_inputs(params, values: list) -> str:
    return ", ".join(f"{p.name}={summarize(v, 80)}" for p, v in zip(params, values))


def _overflow_message(message: str) -> str:
    """Python's overflow messages, without the C-level wording some of them use."""
    if message.startswith("(34,"):  # errno ERANGE from float arithmetic, e.g. 2.0 ** 10000
        return "number too large for a float"
    if "C ssize_t" in message or "index-sized" in message:  # e.g. range(10 ** 30)
        return "int too large to use as a size or an index"
    return message


def _python_types_to_pipe(message: str) -> str:
    for py, pipe in (("'str'", "str"), ("'int'", "int"), ("'float'", "float"), ("'list'", "list"),
                     ("'dict'", "dict"), ("'bool'", "bool"), ("'NoneType'", "none"), ("'RecordValue'", "record")):
        message = message.replace(py, pipe)
    return message


def _with_idempotency_key(context, key: str):
    """The skill context for one side-effecting call, carrying its idempotency key (run id + step)."""
    if context is None or not hasattr(context, "idempotency_key"):
        return context
    return dataclasses.replace(context, idempotency_key=key)
