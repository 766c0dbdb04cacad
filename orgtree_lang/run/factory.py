"""MachineFactory: the parts of one run tree in, its top-level machine and each generated child's machine out.

run/assemble.py decides the parts (from a run's options and settings); this module only wires them."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any, Callable

from orgtree_lang.org.scheduler import Scheduler
from orgtree_lang.vm.budget import Budget
from orgtree_lang.vm.machine import Machine
from orgtree_lang.vm.observe import ProgressObserver
from orgtree_lang.vm.services import Services
from orgtree_lang.vm.trace import Tracer


@dataclass(frozen=True)
class MachineFactory:
    """The parts one run tree is made of; `top` builds its top-level machine and `child` each generated child.

    A child gets its parent's skills, context, printer and journal, the tree's org tree recorder, a trace file
    of its own next to its parent's, and no checkpoints or progress (its state lives inside its parent's)."""

    registry: Any
    context: Any
    budget: Budget
    resolver: Any = None
    printer: Callable[[str], None] | None = None
    effects: Any = None
    tracer: Tracer | None = None
    recorder: Any = None  # orgtree.recorder.TreeRecorder
    progress: Callable[..., None] | None = None  # (state, span), about once a second
    clock: Callable[[], float] = time.monotonic
    executor: Any = None  # vm.executor.Executor for slow skill calls; None runs them on the VM's thread
    spans: Any = None  # telemetry.otel.SpanObserver when the run is exported to OpenTelemetry (shared by children)
    remote_nodes: bool = False  # org/remote.py: `[executor] remote_nodes`
    routes: dict | None = None  # orgtree.toml's [org] routes (topic -> pipeline)
    notify: Callable[[dict, str], None] | None = None  # posts `send "human", ...` notes to the inbox
    inbound: Any = None  # durable.inbound.Inbound: the messages `pipe send` queued for the run
    agents: Any = None  # decompose.run_agents.RunAgents: the organization's agents (None: no model configured)

    def top(self, program) -> Machine:
        observers: list = [self._traced(), self._tree(), self.spans]
        if self.progress is not None:
            observers.append(ProgressObserver(self.progress, self.clock))
        if self.effects is not None:
            from orgtree_lang.durable.checkpoints import Checkpoints

            observers.append(Checkpoints(self.effects, self.recorder.flush if self.recorder is not None else None))
        return Machine(program, Services(
            registry=self.registry, context=self.context, budget=self.budget, resolver=self.resolver,
            printer=self.printer, clock=self.clock, effects=self.effects, executor=self.executor,
            observers=tuple(o for o in observers if o is not None), children=self.child, org=Scheduler,
            routes=dict(self.routes or {}), notify=self.notify, inbound=self.inbound, remote_nodes=self.remote_nodes,
            agents=self.agents))

    def child(self, parent: Machine, block, program, resolver, budget: Budget, context: Any = None) -> Machine:
        tracer = self.tracer.for_child(block.node, parent.state.run_id) if self._traced() is not None else None
        kin = dataclasses.replace(self, tracer=tracer)
        observers = tuple(o for o in (tracer, self._tree(), self.spans) if o is not None)
        services = dataclasses.replace(parent.services, budget=budget, resolver=resolver, observers=observers,
                                       children=kin.child, place=parent.place_for_child(block.node, block))
        if context is not None:
            services.context = context
        return Machine(program, services)

    def _traced(self) -> Tracer | None:
        """The tracer as an observer: none at level `off`, so an untraced run pays not even empty calls."""
        return self.tracer if self.tracer is not None and self.tracer.active else None

    def _tree(self):
        if self.recorder is None:
            return None
        from orgtree_lang.runlog.observer import TreeObserver

        return TreeObserver(self.recorder)


def plain_machine(program, registry=None, context=None, budget: Budget | None = None, **fields) -> Machine:
    """A top-level machine with no trace, org tree or journal (tests, promotion cases, benchmarks);
    `fields` are further MachineFactory fields (resolver, printer, recorder, progress, clock, executor)."""
    return MachineFactory(registry=registry, context=context, budget=budget or Budget(), **fields).top(program)
