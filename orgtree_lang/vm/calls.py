"""Calls and returns in the VM: pipeline frames, built-ins, prints and skill calls (through a durable run's journal)."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import time
from typing import TYPE_CHECKING, Any, Callable

from orgtree_lang.syntax import types as t
from orgtree_lang.compile.opcodes import CODE
from orgtree_lang.runtime.builtins import BUILTINS
from orgtree_lang.runtime.errors import PipeRuntimeError, SkillError, disk_full
from orgtree_lang.runtime.values import UNBOUND, conforms
from orgtree_lang.vm.budget import budget_exceeded
from orgtree_lang.vm.effects import EffectStep
from orgtree_lang.vm.executor import SkillCall
from orgtree_lang.vm.memory import check_value
from orgtree_lang.vm.state import Frame
from orgtree_lang.vm.trace import summarize
from orgtree_lang.vm import events

if TYPE_CHECKING:
    from orgtree_lang.vm.machine import Machine

MAX_FRAMES = 200
# Seconds a slow call may keep the run waiting before the observers hear of it (`await_call`): a crash during a
# long call is then at most this far behind the work done before it.
WAIT_NOTICE = 0.5
_RETURN = CODE["RETURN"]


def call_args(site, stack: list) -> tuple[list, dict]:
    """Pop a call site's arguments: positional ones, then keyword ones in the site's order."""
    count = site.nargs + len(site.kwnames)
    values = stack[len(stack) - count:] if count else []
    if count:
        del stack[-count:]
    args = values[: site.nargs]
    kwargs = dict(zip(site.kwnames, values[site.nargs:]))
    return args, kwargs


def call_builtin(m: Machine, site, stack: list) -> None:
    args, kwargs = call_args(site, stack)
    stack.append(BUILTINS[site.name].impl(args, kwargs, m.print_line))


def call_pipeline(m: Machine, site, stack: list) -> None:
    state = m.state
    code = m.program.pipelines[site.name]
    if len(state.frames) >= MAX_FRAMES:
        raise PipeRuntimeError(f"pipeline calls nested more than {MAX_FRAMES} deep", kind="recursion",
                               hint="check for a pipeline that calls itself without stopping")
    params = code.params
    count = site.nargs
    if not site.kwnames and count == len(params) and count:
        # Every parameter given by position, the usual call: bound without building args and kwargs.
        local_values = stack[-count:]
        del stack[-count:]
        for value, param in zip(local_values, params):
            if not conforms(value, param.type):
                bind_arguments(code, local_values, {})  # raises the error that names the argument
        local_values += [UNBOUND] * (len(code.varnames) - count)
    else:
        args, kwargs = call_args(site, stack)
        local_values = bind_arguments(code, args, kwargs)
    caller = state.frames[-1]
    caller.calls += 1
    frame = Frame(code.name, 0, [], local_values, [], code, node=f"{caller.node}/{code.name}#{caller.calls}")
    state.frames.append(frame)
    if m.hear_call is not None:
        m.hear_call(state, caller, frame)


def bind_inputs(code, inputs: dict[str, Any], records) -> list:
    """The locals of a run's entry frame, its parameters bound to the run's `inputs` (plain values, converted by
    `records` and checked against the parameters' types)."""
    local_values = [UNBOUND] * len(code.varnames)
    for i, param in enumerate(code.params):
        if param.name in inputs:
            try:
                value = records.from_plain(inputs.pop(param.name), param.type)
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
        local_values[i] = value
    if inputs:
        names = ", ".join(sorted(inputs))
        raise PipeRuntimeError(f"pipeline {code.name} has no parameter{'s' if len(inputs) > 1 else ''} {names}",
                               kind="input", span=code.span,
                               hint=f"its parameters are: {', '.join(p.name for p in code.params) or '(none)'}")
    return local_values


def bind_arguments(code, args: list, kwargs: dict) -> list:
    """The locals of a new frame of `code` with its parameters bound to the call's arguments (checked)."""
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
    return local_values


def return_from(m: Machine, frame: Frame, value: Any) -> bool:
    """Pop the frame, checking the value against its declared type; True when the run is finished."""
    state = m.state
    code = frame.code
    if not conforms(value, code.returns):
        ended = code.ops[frame.pc - 1] == _RETURN and frame.pc == len(code.ops)
        what = "ended without a return" if ended and value is None else f"returned {t.type_of_value(value)}"
        raise PipeRuntimeError(f"pipeline {code.name} {what}, but declares -> {code.returns}", kind="type",
                               span=code.span_at(frame.pc - 1))
    state.frames.pop()
    finished = not state.frames
    if finished and state.tasks:
        finished = m.org.task_returned(value)
        if m.hear_return is not None:
            m.hear_return(state, frame, value, finished)
        return finished
    if finished:
        state.result = value
        state.status = "done"
    else:
        state.frames[-1].stack.append(value)
    if m.hear_return is not None:
        m.hear_return(state, frame, value, finished)
    return finished


def call_skill(m: Machine, frame: Frame, stack: list, arg: int) -> int | None:
    """CALL_SKILL: check the skill-call budget, invoke the skill (journaled unless it is pure), push its result."""
    state = m.state
    site = frame.code.calls[arg]
    args, kwargs = call_args(site, stack)
    budget = m.budget
    if budget.max_skill_calls is not None:
        used = state.skill_calls + m.ancestors[1] + m.meter.skill_calls
        if used >= budget.max_skill_calls:
            raise budget_exceeded("skill_calls", budget.max_skill_calls, used, frame.code.span_at(frame.pc - 1))
    state.skill_calls += 1
    registry = m.services.registry
    skill = registry.get(site.name) if registry is not None else None
    if skill is None:
        raise PipeRuntimeError(f"skill {site.name} is not installed", kind="skill",
                               hint="`pipe skills` lists the installed skills")
    if skill.slow and state.tasks:  # one of several tasks: it waits for the call's delivery (org/delivery.py)
        return m.org.issue_call(frame, skill, site, args, kwargs)
    started = time.perf_counter()
    outcome, result, failure = "ok", None, None
    effects = m.services.effects
    span = frame.code.span_at(frame.pc - 1)
    placed: list[str] = []
    try:
        if skill.pure or effects is None:
            result = _invoke(m, skill, args, kwargs, m.context, span, placed)
        else:
            step = EffectStep(m.next_effect_seq(), "skill", site.name, m.effect_node(frame.node),
                              span, args, kwargs, m.state.steps, observed=not skill.unobserved)
            result = effects.perform(step, lambda key: _invoke(
                m, skill, args, kwargs, _with_idempotency_key(m.context, key), span, placed))
    except Exception as exc:
        outcome, failure = "error", failure_text(exc)
        error = skill_failure(site.name, exc)
        if error is exc:
            raise
        raise error from exc
    finally:
        if m.hear_skill is not None:  # the fields of events.SkillCalled, in order
            m.hear_skill(state, frame, site.name, args, kwargs, outcome, result, failure, started, m.spend,
                         placed[0] if placed else None)
    if m.budget.max_memory is not None:
        check_value(result, m.budget.max_memory, f"the result of {site.name}")
    stack.append(result)
    return None


def failure_text(exc: BaseException) -> str:
    """How a failed skill call's node records the failure."""
    if isinstance(exc, (SkillError, PipeRuntimeError)):
        return exc.message
    return f"{type(exc).__name__}: {exc}"


def skill_failure(name: str, exc: BaseException) -> PipeRuntimeError:
    """What a skill's exception is in .pipe: a SkillError becomes a `skill` error naming the skill; a .pipe
    error stays itself; no room to write (a full disk, under the skill or under the journal) is no failure of the
    skill nor of the program: it goes up as it is, past every `try`, and stops the run (durable/attempt.py); any
    other exception is a crash of the skill."""
    if disk_full(exc) is not None:
        return exc
    if isinstance(exc, SkillError):
        error = PipeRuntimeError(exc.message if exc.message.startswith(name) else f"{name}: {exc.message}",
                                 kind="skill", hint=exc.hint)
    elif isinstance(exc, PipeRuntimeError):
        return exc
    else:
        error = PipeRuntimeError(f"skill {name} crashed: {type(exc).__name__}: {exc}", kind="skill",
                                 hint="this is a bug in the skill; run with --debug to see the Python traceback")
    error.__cause__ = exc
    return error


def _invoke(m: Machine, skill, args: list, kwargs: dict, context, span, placed: list[str]) -> Any:
    """Call the skill: a slow one on the run's executor (if it has one), every other on this thread.

    The wait for a slow call ends when the run's seconds budget does, wherever the call runs (the executor
    abandons it when the run ends); `placed` gets where it ran when the executor says (a Ray node)."""
    executor = m.services.executor
    if not (skill.slow and executor is not None):
        return skill.invoke(args, kwargs, context)
    pending = executor.submit(SkillCall(skill, args, kwargs, context))
    budget = m.budget
    try:
        return await_call(m, pending, lambda: None if budget.max_seconds is None else
                          max(0.0, budget.max_seconds - m.seconds_used()), whole=False)
    except concurrent.futures.TimeoutError:
        raise budget_exceeded("seconds", budget.max_seconds, m.seconds_used(), span) from None
    finally:
        where = getattr(pending, "where", None)
        if where:
            placed.append(where)


def await_call(m: Machine, pending, seconds_left: Callable[[], float | None], whole: bool) -> Any:
    """A slow call's value, waited for with the run lock let go (blocks resolved concurrently, org/block_calls.py,
    go on meanwhile) until `seconds_left()` runs out (TimeoutError). A call that has not answered after
    WAIT_NOTICE seconds is told to the observers first (`whole`: the state may be saved as it is), so that a
    crash during a long call (a model, a sandbox) shows, and keeps, what the run did before it."""
    left = seconds_left()
    if left is None or left > WAIT_NOTICE:
        try:
            with m.run_lock.released():
                return pending.result(timeout=WAIT_NOTICE)
        except concurrent.futures.TimeoutError:
            # The run lock is held again: the state stays as it is.
            if events.WaitingLong in m.observer.hears:
                m.observer.on(events.WaitingLong(state=m.state, whole=whole))
    with m.run_lock.released():
        return pending.result(timeout=seconds_left())


def _with_idempotency_key(context, key: str):
    """The skill context for one side-effecting call, carrying its idempotency key (run id + step)."""
    if context is None or not hasattr(context, "idempotency_key"):
        return context
    return dataclasses.replace(context, idempotency_key=key)
