"""Build every machine of a run: the top-level one (run, resume, replay, retry, fork) and each generated child."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from orgtree_lang.org.scheduler import Scheduler
from orgtree_lang.vm.budget import Budget
from orgtree_lang.vm.machine import Machine
from orgtree_lang.vm.observe import ProgressObserver
from orgtree_lang.vm.services import Services
from orgtree_lang.vm.trace import Tracer, TraceSettings


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


@dataclass
class RunParts:
    """A run's top-level machine and what was opened for it (its trace, its org tree recorder)."""

    machine: Machine
    tracer: Tracer
    recorder: Any = None
    spans: Any = None  # telemetry.otel.SpanObserver

    def close(self) -> None:
        executor = self.machine.services.executor
        if executor is not None:
            executor.close()
        self.tracer.close()
        if self.recorder is not None:
            self.recorder.finish()
        if self.spans is not None:
            self.spans.close()


def build_run(program, root: Path, registry, options, run_id: str, *, effects=None, trace: Path | None = None,
              tree: bool = True, tracer: Tracer | None = None) -> RunParts:
    """The machine for one attempt of a run in workspace `root`, wired as `options` (run.runner.RunOptions) say.

    `trace` is the trace file (default: the run's folder); `tree=False` records no org tree (a replay
    re-executes a run whose tree is already recorded); `tracer` continues an open trace instead (a fork)."""
    from orgtree_lang.runtime.skills import SkillContext
    from orgtree_lang.runtime.workspace import Workspace

    settings = settings_of(options, root)
    if tracer is None:
        trace = trace or Path(root) / ".orgtree" / "runs" / run_id / "trace.jsonl"
        tracer = Tracer(trace, run_id, settings.trace(options.trace_level))
    recorder = None
    if tree and options.tree:
        from orgtree_lang.runlog.recorder import recorder_for

        recorder = recorder_for(root, options.tree_listener)
    from orgtree_lang.executors.table import make_executor

    spans = options.otel.observer(run_id) if getattr(options, "otel", None) is not None else None
    routes = settings.routes
    executor = make_executor(options.executor, settings.executor)
    context = SkillContext(Workspace.for_run(root, settings.file), run_id=run_id, models=options.models,
                           config=settings.file)
    factory = MachineFactory(
        registry=registry, context=context,
        budget=options.budget, resolver=options.decomposer, printer=_synced(options.printer, effects), effects=effects,
        tracer=tracer, recorder=recorder, progress=options.progress, executor=executor, spans=spans, routes=routes,
        notify=_note_poster(root, run_id), inbound=_inbound(effects), remote_nodes=bool(settings.executor.get("remote_nodes")),
        agents=_agents(options, settings, root))
    return RunParts(factory.top(program), tracer, recorder, spans)


def _agents(options, settings, root: Path):
    """The organization's agents (they route by meaning and read messages for nodes that read none), or None when no
    model is configured. Nothing is built or imported until one is asked."""
    models = getattr(options, "models", None)
    if models is None or not models.configured:
        if "message_agent" not in settings.table("org"):
            return None
    from orgtree_lang.decompose.run_agents import RunAgents

    return RunAgents.for_run(models, settings.file, Path(root))


def _inbound(effects):
    """A durable run's queue of messages from outside (none for a replay: it reads every decision back)."""
    if effects is None or effects.mode == "replay":
        return None
    from orgtree_lang.durable.inbound import Inbound

    return Inbound(effects.journal.path.parent, effects.journal)


def _note_poster(root: Path, run_id: str) -> Callable[[dict, str], None]:
    """How the run's `send "human", value` notes reach the workspace's inbox (once per key)."""

    def post(note: dict, key: str) -> None:
        from orgtree_lang.runlog.inbox import Inbox

        with Inbox.for_workspace(root) as inbox:
            inbox.note(key, note["text"], run_id=run_id, node=note["node"], topic=note["topic"], file=note["file"],
                       line=note["line"])

    return post


def settings_of(options, root: Path):
    """The run's RunSettings: those the options carry (read once by whoever started the run), else read now."""
    if getattr(options, "settings", None) is not None:
        return options.settings
    from orgtree_lang.run.settings import RunSettings

    return RunSettings.load(root)


def trace_settings(root: Path, level: str | None = None) -> TraceSettings:
    """The trace settings of a run in workspace `root`: its orgtree.toml's `[trace]`, with `level` (the
    --trace-level flag) winning over the file's."""
    from orgtree_lang.run.settings import RunSettings

    return RunSettings.load(root).trace(level)


def _synced(printer, effects):
    """The printer of a durable run: the journal is made durable before a line reaches the user (group commit)."""
    sync = getattr(effects, "sync", None)
    if printer is None or sync is None:
        return printer

    def show(line: str) -> None:
        sync()
        printer(line)

    return show


def plain_machine(program, registry=None, context=None, budget: Budget | None = None, **fields) -> Machine:
    """A top-level machine with no trace, org tree or journal (tests, promotion cases, benchmarks);
    `fields` are further MachineFactory fields (resolver, printer, recorder, progress, clock, executor)."""
    return MachineFactory(registry=registry, context=context, budget=budget or Budget(), **fields).top(program)
