"""Slow calls of tasks: numbered and handed to the executor when a task asks, delivered in issue order."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import time

from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.syntax.spans import Span
from orgtree_lang.vm.blocks import RELOAD
from orgtree_lang.vm.budget import ModelSpend, budget_exceeded
from orgtree_lang.vm.calls import await_call, failure_text, skill_failure
from orgtree_lang.vm.effects import EffectStep
from orgtree_lang.vm.executor import Finished, SkillCall
from orgtree_lang.vm.memory import check_value
from orgtree_lang.vm.people import WaitingForHuman
from orgtree_lang.vm.scheduler import current_task, switch, task_by_id
from orgtree_lang.vm.state import Frame
from orgtree_lang.vm.tasks import Call


# ---- slow calls --------------------------------------------------------------------------------------------


def issue(m, frame: Frame, skill, site, args: list, kwargs: dict) -> int:
    """A slow skill call of a task: numbered now, run on the executor; the task waits for its delivery."""
    state = m.state
    effects = m.services.effects
    seq = None if skill.pure or effects is None else m.next_effect_seq()
    span = frame.code.span_at(frame.pc - 1)
    call = Call(state.next_call, state.current, site.name, args, kwargs, seq, m.effect_node(frame.node),
                (span.file, span.line, span.col, span.end_line, span.end_col), state.steps, time.perf_counter())
    state.next_call += 1
    state.calls.append(call)
    _submit(m, skill, call)
    current_task(state).status = "blocked"
    return RELOAD


def reissue(m) -> None:
    """After a resume: issue again the calls the saved state was waiting on (same steps, same keys)."""
    for call in m.state.calls:
        if call.order not in m.in_flight:
            call.started = time.perf_counter()
            if call.block is not None:
                from orgtree_lang.vm.block_calls import submit

                submit(m, call)
            elif call.pipeline:
                from orgtree_lang.vm.remote import submit_node

                submit_node(m, call)
            else:
                _submit(m, _skill(m, call.name), call)


def _skill(m, name: str):
    registry = m.services.registry
    skill = registry.get(name) if registry is not None else None
    if skill is None:
        raise PipeRuntimeError(f"skill {name} is not installed", kind="skill",
                               hint="`pipe skills` lists the installed skills")
    return skill


def _submit(m, skill, call: Call) -> None:
    context = m.context
    spend = None
    if dataclasses.is_dataclass(context) and hasattr(context, "spend"):
        spend = ModelSpend(m)  # its own, so what its model calls spend is this call's
        context = dataclasses.replace(context, spend=spend)
    step = None
    if call.seq is not None:
        step = EffectStep(call.seq, "skill", call.name, call.node, Span(*call.span), call.args, call.kwargs,
                          call.statement, observed=not skill.unobserved)
        try:
            reused, found = m.services.effects.begin(step)
        except Exception as exc:  # a recorded failure, or a replay past the journal's end
            m.in_flight[call.order] = (Finished(error=exc), None, spend)
            return
        if reused:
            m.in_flight[call.order] = (Finished(found), None, spend)
            return
        if context is not None and hasattr(context, "idempotency_key"):
            context = dataclasses.replace(context, idempotency_key=found)
    def ended() -> None:
        call.finished = time.perf_counter()  # its node's duration ends here, not when it is delivered

    run = SkillCall(skill, call.args, call.kwargs, context, done=ended)
    executor = m.services.executor
    if executor is None:
        try:
            pending = Finished(run())
        except Exception as exc:
            pending = Finished(error=exc)
    else:
        pending = executor.submit(run)
    m.in_flight[call.order] = (pending, step, spend)


def deliver_next(m) -> None:
    """Wait for the earliest-issued call and hand its result to its task (which becomes the current one)."""
    state = m.state
    call = _next_delivery(state)
    if call.order not in m.in_flight:
        reissue(m)
    pending, step, spend = m.in_flight[call.order]
    error = None
    value = None
    try:
        value = await_call(m, pending, lambda: _seconds_left(m), whole=True)
    except concurrent.futures.TimeoutError:
        m._suspend()  # saved as it is, with the call in flight: a resume with more time issues it again
        raise budget_exceeded("seconds", m.budget.max_seconds, m.seconds_used(), Span(*call.span)) from None
    except Exception as exc:
        error = exc
    del m.in_flight[call.order]
    state.calls.remove(call)
    if call.pipeline:
        from orgtree_lang.vm.remote import deliver_node

        return deliver_node(m, call, pending, step, value, error)
    if step is not None:
        m.services.effects.end(step, value, error)
    task = task_by_id(state, call.task)
    task.status = "ready"
    switch(m, task)
    frame = task.frames[-1]
    if call.block is not None:  # an ambiguous block (vm/block_calls.py)
        if error is not None:
            raise error
        from orgtree_lang.vm.block_calls import deliver

        deliver(m, call, pending, value, frame)
        return
    failure = None if error is None else skill_failure(call.name, error)
    # Observers time a call from `started` to now: shift it so that they see how long the call really took.
    ran = (call.finished or time.perf_counter()) - call.started
    m.observer.skill_called(state, frame, call.name, call.args, call.kwargs,
                            "ok" if failure is None else "error", value,
                            None if error is None else failure_text(error), time.perf_counter() - ran, spend,
                            where=getattr(pending, "where", None))
    if failure is not None:
        raise failure
    if m.budget.max_memory is not None:
        check_value(value, m.budget.max_memory, f"the result of {call.name}")
    frame.stack.append(value)


def _next_delivery(state):
    """The call to wait for: the earliest-issued skill call; with only remote nodes left, the earliest one a
    task awaits or has cancelled, else the earliest. A remote node may run for long (a watcher waiting for
    its cancel): the calls issued after it do not wait for it, and the program sees it end only at an
    `await`, which is a point of the program, so the order stays the same in a run, its resume and replay."""
    for call in state.calls:
        if not call.pipeline:
            return call
    wanted = {task.waiting for task in state.tasks if task.status == "awaiting"} | \
        {task.id for task in state.tasks if task.cancel}
    return next((call for call in state.calls if call.task in wanted), state.calls[0])


def settle(m) -> None:
    """Before the process lets go of a run that waits (for a person): wait for the slow calls in flight and
    journal their results, so that the resumed run takes them from the journal instead of calling again.
    They stay in the outstanding-call table: the resumed run issues them again and delivers them in order."""
    effects = m.services.effects
    for call in m.state.calls:
        entry = m.in_flight.pop(call.order, None)
        if entry is None:
            continue
        pending, step, _ = entry
        if call.block is not None:  # a block journals its own result: wait for it to be known
            try:
                with m.run_lock.released():
                    pending.result(timeout=_seconds_left(m))
            except (Exception, WaitingForHuman):  # noqa: BLE001 - journaled, or asked again on resume, by the block
                pass
            continue
        if step is None or effects is None:
            continue
        try:
            with m.run_lock.released():
                value, error = pending.result(timeout=_seconds_left(m)), None
        except concurrent.futures.TimeoutError:
            continue  # over the seconds budget: it runs again, with the same key, on resume
        except Exception as exc:
            value, error = None, exc
        effects.end(step, value, error)


def _seconds_left(m) -> float | None:
    seconds = m.budget.max_seconds
    if seconds is None:
        return None
    return max(seconds - m.seconds_used(), 0.0)
