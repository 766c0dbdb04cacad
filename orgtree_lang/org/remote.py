"""Remote spawned nodes: a `spawn` whose pipeline can run anywhere runs whole on the executor, as one journaled step.

When the run has `[executor] remote_nodes = true` (docs/ray.md) and the spawned
pipeline (with every pipeline it calls or spawns) calls only pure or remote skills and asks nothing of the
driver (no ambiguous block, no person, no message), the spawn becomes a slow call of kind `node`: numbered
when it is spawned, handed to the executor, delivered in issue order like any slow call. Its task has no code
to run here; at delivery its printed lines, its skill calls and its steps join the run, and it ends with the
pipeline's value or error. Anything else is spawned here as before.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from orgtree_lang.compile.opcodes import CODE
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.syntax.spans import Span
from orgtree_lang.vm.budget import Budget, budget_exceeded
from orgtree_lang.vm.effects import EffectStep
from orgtree_lang.vm.executor import Finished, NodeCall
from orgtree_lang.vm.state import Call, Frame, Task
from orgtree_lang.vm import events

if TYPE_CHECKING:
    from orgtree_lang.org.scheduler import Scheduler

# What only the driver can do: resolve a block (models, the decomposer), ask a person, exchange messages.
_DRIVER_ONLY = frozenset(CODE[name] for name in
                         ("AMBIGUOUS", "ASK_HUMAN", "SEND", "SEND_PARENT", "RECEIVE", "ON_MESSAGE"))


class RemoteNodes:
    """The spawned nodes of a run that run whole on the executor (`[executor] remote_nodes`)."""

    def __init__(self, org: Scheduler) -> None:
        self.org = org

    def node_skills(self, pipeline: str) -> list | None:
        """The skills `pipeline` and the pipelines it reaches call, or None when it cannot leave the driver."""
        machine = self.org.machine
        registry = machine.services.registry
        skills: dict[str, Any] = {}
        seen, todo = set(), [pipeline]
        while todo:
            code = machine.program.pipelines[todo.pop()]
            if code.name in seen:
                continue
            seen.add(code.name)
            if any(op in _DRIVER_ONLY for op in code.ops):
                return None
            for site in code.calls:  # every call the pipeline makes, whatever instruction makes it
                if site.kind == "skill":
                    skill = registry.get(site.name) if registry is not None else None
                    if skill is None or not (skill.pure or skill.remote):
                        return None
                    skills[site.name] = skill
                elif site.kind == "pipeline":
                    todo.append(site.name)
                elif site.kind not in ("builtin", "record"):  # a person, a message: the driver's
                    return None
        return list(skills.values())

    def runs_remote(self, pipeline: str) -> bool:
        """Whether a spawn of `pipeline` runs whole on the executor."""
        services = self.org.machine.services
        return services.remote_nodes and services.executor is not None and self.node_skills(pipeline) is not None

    def issue_node(self, task: Task, child: Frame, span: Span) -> None:
        """SPAWN of a remote node: its task waits on one slow call that runs the whole pipeline elsewhere."""
        org = self.org
        machine = org.machine
        code = child.code
        inputs = {param.name: child.locals[i] for i, param in enumerate(code.params)}
        seq = None if machine.services.effects is None else machine.next_effect_seq()
        call = org.new_call(task.id, code.name, [], inputs, seq, machine.effect_node(child.node), span,
                            pipeline=code.name)
        org.wait(task, "blocked")
        self.submit_node(call)

    def submit_node(self, call: Call) -> None:
        """Hand a node call to the executor (at its spawn, or again after a resume), or take it from the journal."""
        org = self.org
        machine = org.machine
        effects = machine.services.effects
        step, key, given, report = None, None, [], None
        if call.seq is not None:
            step = EffectStep(call.seq, "node", call.name, call.node, Span(*call.span), call.args, call.kwargs,
                              call.statement)
            try:
                reused, found = effects.begin(step)
            except Exception as exc:  # a recorded failure, or a replay past the journal's end
                org.track(call, Finished(error=exc))
                return
            if reused:
                org.track(call, Finished(found))
                return
            key = found
            given = effects.node_steps(call.seq)
            seq = call.seq

            def report(record: dict) -> None:
                effects.record_node_step(seq, record)

        skills = self.node_skills(call.name)
        if skills is None:
            raise PipeRuntimeError(f"spawned node {call.node} ran remotely, but its pipeline {call.name} now calls a "
                                   "skill that cannot run away from the driver", kind="executor", catchable=False,
                                   hint="resume with the program the run started with")

        def ended() -> None:
            call.finished = time.perf_counter()

        # A node that only waits (its skills ask for a fraction of a CPU) asks for as much; any other a whole CPU.
        cpu = max((skill.cpu for skill in skills if not skill.pure), default=1.0)
        node = NodeCall(machine.program.dumps(), call.name, call.kwargs, skills, machine.context, self.budget_left(),
                        key, given, report, cpu=cpu, done=ended)
        org.track(call, machine.services.executor.submit(node), step, node)

    def budget_left(self) -> Budget:
        """What a node that starts now may spend of the run's budget (it is counted in the run when it ends)."""
        machine = self.org.machine
        budget = machine.budget
        steps = machine.state.steps + machine.steps_elsewhere()
        calls = machine.state.skill_calls + machine.ancestors[1] + machine.meter.skill_calls
        return Budget(
            max_steps=None if budget.max_steps is None else max(budget.max_steps - steps, 0),
            max_seconds=None if budget.max_seconds is None else max(budget.max_seconds - machine.seconds_used(), 0.0),
            max_skill_calls=None if budget.max_skill_calls is None else max(budget.max_skill_calls - calls, 0),
            max_memory=budget.max_memory)

    def stop_node(self, task: Task) -> None:
        """`cancel` of a remote node: ask whoever runs it to stop it (its result then says it was cancelled)."""
        org = self.org
        for call in org.state.calls:
            if call.task == task.id and call.pipeline:
                pending, _, node = org.in_flight.get(call.order, (None, None, None))
                if node is not None:
                    node.cancelled.set()
                stop = getattr(pending, "stop", None)
                if stop is not None:
                    stop()

    def deliver_node(self, call: Call, pending, step, value: Any, error: Exception | None) -> None:
        """The node's call was delivered: its lines, calls and steps join the run, and its task ends."""
        org = self.org
        machine = org.machine
        state = org.state
        lost = isinstance(error, PipeRuntimeError) and not error.catchable
        budget = None if error is not None else (value["error"] or {}).get("budget")
        if lost or budget:
            # A lost cluster or a budget is no outcome of the node: nothing is journaled, the run stops saved with
            # the node still to run, and a resume (on a cluster that is up, with more budget) runs it again.
            org.put_back(call)
            machine.suspend()
            if lost:
                raise error
            used = {"steps": state.steps + machine.steps_elsewhere() + value["steps"],
                    "seconds": machine.seconds_used(),
                    "skill_calls": state.skill_calls + machine.ancestors[1] + machine.meter.skill_calls
                    + len(value["calls"])}
            raise budget_exceeded(budget, getattr(machine.budget, f"max_{budget}"), used.get(budget, 0),
                                  Span(*call.span), where=f"in remote node {call.node} (spawned at line {call.span[1]})")
        if step is not None:
            machine.services.effects.end(step, value, error)
        task = org.task_by_id(call.task)
        org.switch(task)
        child = task.frames[-1]
        observer = machine.observer
        where = getattr(pending, "where", None)
        if where:
            if events.NodeAnnotated in observer.hears:
                observer.on(events.NodeAnnotated(node_id=machine.node_id(child.node), detail=where))
        if error is not None:
            failure = {"message": getattr(error, "message", f"{type(error).__name__}: {error}"),
                       "kind": getattr(error, "kind", "executor")}
        else:
            for line in value["output"]:
                machine.print_line(line)
            now = time.perf_counter()
            for made in value["calls"]:
                state.skill_calls += 1
                if events.SkillCalled in observer.hears:
                    observer.on(events.SkillCalled(state=state, frame=child, name=made["name"], args=made["args"],
                                                   kwargs=made["kwargs"], outcome=made["outcome"],
                                                   result=made["result"], failure=made["failure"],
                                                   started=now - made["ms"] / 1000, spend=None, where=where))
            machine.meter.add({"steps": value["steps"]})
            failure = value["error"]
        if failure is None:
            if events.PipelineReturned in observer.hears:
                observer.on(events.PipelineReturned(state=state, frame=child, value=value["value"], finished=False))
            org.finish(task, "done", result=value["value"])
        else:
            org.finish(task, "cancelled" if failure["kind"] == "cancelled" else "failed",
                       error={"message": failure["message"], "kind": failure["kind"], "line": failure.get("line")})
