"""Slow calls of tasks: numbered and handed to the executor when a task asks, delivered in issue order."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import time
from typing import TYPE_CHECKING

from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.syntax.spans import Span
from orgtree_lang.vm.budget import ModelSpend, budget_exceeded
from orgtree_lang.vm.calls import await_call, failure_text, skill_failure
from orgtree_lang.vm.effects import EffectStep
from orgtree_lang.vm.executor import Finished, SkillCall
from orgtree_lang.vm.memory import check_value
from orgtree_lang.vm.organization import RELOAD
from orgtree_lang.vm.questions import WaitingForHuman
from orgtree_lang.vm.state import Call, Frame, RunState
from orgtree_lang.vm import events

if TYPE_CHECKING:
    from orgtree_lang.org.scheduler import Scheduler


class Delivery:
    """The slow calls of a run's tasks, from issue to delivery (blocks and remote nodes hand theirs in here too)."""

    def __init__(self, org: Scheduler) -> None:
        self.org = org

    def issue(self, frame: Frame, skill, site, args: list, kwargs: dict) -> int:
        """A slow skill call of a task: numbered now, run on the executor; the task waits for its delivery."""
        org = self.org
        machine = org.machine
        seq = None if skill.pure or machine.services.effects is None else machine.next_effect_seq()
        call = org.new_call(org.state.current, site.name, args, kwargs, seq, machine.effect_node(frame.node),
                            frame.code.span_at(frame.pc - 1))
        self._submit(skill, call)
        org.wait(org.current_task(), "blocked")
        return RELOAD

    def reissue(self) -> None:
        """After a resume: issue again the calls the saved state was waiting on (same steps, same keys)."""
        org = self.org
        for call in org.state.calls:
            if call.order not in org.in_flight:
                call.started = time.perf_counter()
                if call.block is not None:
                    org.blocks.submit(call)
                elif call.pipeline:
                    org.remote.submit_node(call)
                else:
                    self._submit(self._skill(call.name), call)

    def _skill(self, name: str):
        registry = self.org.machine.services.registry
        skill = registry.get(name) if registry is not None else None
        if skill is None:
            raise PipeRuntimeError(f"skill {name} is not installed", kind="skill",
                                   hint="`pipe skills` lists the installed skills")
        return skill

    def _submit(self, skill, call: Call) -> None:
        org = self.org
        machine = org.machine
        context = machine.context
        spend = None
        if dataclasses.is_dataclass(context) and hasattr(context, "spend"):
            spend = ModelSpend(machine)  # its own, so what its model calls spend is this call's
            context = dataclasses.replace(context, spend=spend)
        step = None
        if call.seq is not None:
            step = EffectStep(call.seq, "skill", call.name, call.node, Span(*call.span), call.args, call.kwargs,
                              call.statement, observed=not skill.unobserved)
            try:
                reused, found = machine.services.effects.begin(step)
            except Exception as exc:  # a recorded failure, or a replay past the journal's end
                org.track(call, Finished(error=exc), None, spend)
                return
            if reused:
                org.track(call, Finished(found), None, spend)
                return
            if context is not None and hasattr(context, "idempotency_key"):
                context = dataclasses.replace(context, idempotency_key=found)

        def ended() -> None:
            call.finished = time.perf_counter()  # its node's duration ends here, not when it is delivered

        run = SkillCall(skill, call.args, call.kwargs, context, done=ended)
        executor = machine.services.executor
        if executor is None:
            try:
                pending = Finished(run())
            except Exception as exc:
                pending = Finished(error=exc)
        else:
            pending = executor.submit(run)
        org.track(call, pending, step, spend)

    def deliver_next(self) -> None:
        """Wait for the earliest-issued call and hand its result to its task (which becomes the current one)."""
        org = self.org
        machine = org.machine
        state = org.state
        call = _next_delivery(state)
        if call.order not in org.in_flight:
            self.reissue()
        pending, step, spend = org.in_flight[call.order]
        error = None
        value = None
        try:
            value = await_call(machine, pending, self._seconds_left, whole=True)
        except concurrent.futures.TimeoutError:
            machine.suspend()  # saved as it is, with the call in flight: a resume with more time issues it again
            raise budget_exceeded("seconds", machine.budget.max_seconds, machine.seconds_used(),
                                  Span(*call.span)) from None
        except Exception as exc:
            error = exc
        org.untrack(call)
        org.drop_call(call)
        if call.pipeline:
            return org.remote.deliver_node(call, pending, step, value, error)
        if step is not None:
            machine.services.effects.end(step, value, error)
        task = org.task_by_id(call.task)
        org.wake(task)
        org.switch(task)
        frame = task.frames[-1]
        if call.block is not None:  # an ambiguous block (org/block_calls.py)
            if error is not None:
                raise error
            org.blocks.deliver(call, pending, value, frame)
            return
        failure = None if error is None else skill_failure(call.name, error)
        # Observers time a call from `started` to now: shift it so that they see how long the call really took.
        ran = (call.finished or time.perf_counter()) - call.started
        if events.SkillCalled in machine.observer.hears:
            machine.observer.on(events.SkillCalled(state=state, frame=frame, name=call.name, args=call.args,
                                                   kwargs=call.kwargs, outcome="ok" if failure is None else "error",
                                                   result=value,
                                                   failure=None if error is None else failure_text(error),
                                                   started=time.perf_counter() - ran, spend=spend,
                                                   where=getattr(pending, "where", None)))
        if failure is not None:
            raise failure
        if machine.budget.max_memory is not None:
            check_value(value, machine.budget.max_memory, f"the result of {call.name}")
        frame.stack.append(value)

    def settle(self) -> None:
        """Before the process lets go of a run that waits (for a person): wait for the slow calls in flight and
        journal their results, so that the resumed run takes them from the journal instead of calling again.
        They stay in the outstanding-call table: the resumed run issues them again and delivers them in order."""
        org = self.org
        effects = org.machine.services.effects
        for call in org.state.calls:
            entry = org.untrack(call)
            if entry is None:
                continue
            pending, step, _ = entry
            if call.block is not None:  # a block journals its own result: wait for it to be known
                try:
                    with org.lock.released():
                        pending.result(timeout=self._seconds_left())
                except (Exception, WaitingForHuman):  # noqa: BLE001 - journaled, or asked again on resume, by the block
                    pass
                continue
            if step is None or effects is None:
                continue
            try:
                with org.lock.released():
                    value, error = pending.result(timeout=self._seconds_left()), None
            except concurrent.futures.TimeoutError:
                continue  # over the seconds budget: it runs again, with the same key, on resume
            except Exception as exc:
                value, error = None, exc
            effects.end(step, value, error)

    def _seconds_left(self) -> float | None:
        machine = self.org.machine
        seconds = machine.budget.max_seconds
        if seconds is None:
            return None
        return max(seconds - machine.seconds_used(), 0.0)


def _next_delivery(state: RunState) -> Call:
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
