"""assemble(): one program, its workspace and its RunOptions in, the machine of one attempt and what it opened out.

The one place a run is put together, for run, resume, retry, replay, fork, `pipe test` and `pipe mcp serve`:
the workspace's settings (read once, `settle`), the models and decomposer the command line chose, the trace,
the org tree recorder, the executor, the organization's scheduler and the OpenTelemetry export. `durable/` is
handed what this builds; it never builds a machine itself."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from orgtree_lang.run.factory import MachineFactory
from orgtree_lang.run.options import RunChoices, RunOptions
from orgtree_lang.runtime.errors import UsageError
from orgtree_lang.vm.machine import Machine
from orgtree_lang.vm.trace import Tracer


@dataclass
class AssembledRun:
    """A run's top-level machine and what was opened for it (its trace, its org tree recorder, its span export);
    `close` closes them all and the executor. durable/attempt.py's AssembledRun protocol is this shape."""

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


def settle(options: RunOptions, root: Path) -> RunOptions:
    """The options with what they leave to the workspace settled: its orgtree.toml read (once: settings already
    carried are kept), and the models and OpenTelemetry export its `choices` ask for. Every entry of run/ settles
    first, so a bad model name or a missing extra is a usage error before any run folder exists."""
    from orgtree_lang.run.settings import RunSettings

    settings = options.settings if options.settings is not None else RunSettings.load(root)
    changes: dict[str, Any] = {"settings": settings}
    choices = options.choices
    if choices is not None:
        if options.models is None:
            changes["models"] = _models(choices, settings, options.tell)
        if options.otel is None:
            changes["otel"] = _otel_export(choices, settings)
    return dataclasses.replace(options, **changes)


def assemble(program, root: Path, registry, options: RunOptions, run_id: str, *, effects=None,
             trace: Path | None = None, tree: bool = True, tracer: Tracer | None = None, source: str | None = None,
             file: str | None = None) -> AssembledRun:
    """The machine of one attempt of `program` in workspace `root`, wired as `options` say.

    `effects` is the durable layer's EffectLog (none: an unjournaled run); `trace` the trace file (default: the
    run's folder); `tree=False` records no org tree (a replay re-executes a run whose tree is already recorded);
    `tracer` continues an open trace instead (a fork); `source` and `file` are the program's text and name, for
    the decomposer its ambiguous blocks get when the options carry a command line's choices."""
    from orgtree_lang.executors.table import make_executor
    from orgtree_lang.runtime.skills import SkillContext
    from orgtree_lang.runtime.workspace import Workspace

    options = settle(options, root)
    settings = options.settings
    root = Path(root)
    if tracer is None:
        trace = trace or root / ".orgtree" / "runs" / run_id / "trace.jsonl"
        tracer = Tracer(trace, run_id, settings.trace(options.trace_level))
    recorder = None
    if tree and options.tree:
        from orgtree_lang.runlog.recorder import recorder_for

        recorder = recorder_for(root, options.tree_listener)
    spans = options.otel.observer(run_id) if options.otel is not None else None
    decomposer = options.decomposer
    if decomposer is None and source is not None:
        decomposer = decomposer_for(options, program, source, file or program.file, root, registry)
    context = SkillContext(Workspace.for_run(root, settings.file), run_id=run_id, models=options.models,
                           config=settings.file)
    factory = MachineFactory(
        registry=registry, context=context, budget=options.budget, resolver=decomposer,
        printer=_synced(options.printer, effects), effects=effects, tracer=tracer, recorder=recorder,
        progress=options.progress, executor=make_executor(options.executor, settings.executor), spans=spans,
        routes=settings.routes, notify=_note_poster(root, run_id), inbound=_inbound(effects),
        remote_nodes=bool(settings.executor.get("remote_nodes")), agents=_agents(options, settings, root))
    return AssembledRun(factory.top(program), tracer, recorder, spans)


def decomposer_for(options: RunOptions, program, source: str, file: str, root: Path, registry):
    """The decomposer a program's ambiguous blocks get when the options carry a command line's choices (with no
    model configured it only reuses saved modules); None for a program with no ambiguous block, or no choices."""
    if options.choices is None or not any(code.ambiguous for code in program.pipelines.values()):
        return None
    from orgtree_lang.decompose.decomposer import Decomposer

    settings = options.settings
    try:
        section = settings.decompose
    except TypeError as err:
        raise UsageError(str(err)) from None
    models = options.models if options.models is not None else _models(options.choices, settings, options.tell)
    parts = dict(registry=registry, workspace=Path(root).resolve(), parent_file=file, parent_source=source, settings=section,
                 config=settings.file)
    if not models.configured:
        # Saved modules are still reused (no model is needed for that); a block with none says how to add one.
        return Decomposer(author=None, reviewer=None, **parts)
    from orgtree_lang.models.base import ModelError

    try:
        author, reviewer = models.author(), models.reviewer()
    except ModelError as err:
        raise UsageError(str(err)) from None
    return Decomposer(author=author, reviewer=reviewer, **parts)


def tell_offline_models(options: RunOptions, program) -> None:
    """A notice (kind "offline models") for each model whose answers come from a file, when the program uses one."""
    models = options.models
    if models is None or options.choices is None:
        return
    uses = any(u.split(".")[0] == "llm" for u in program.uses) or \
        any(code.ambiguous for code in program.pipelines.values())
    if not uses:
        return
    from orgtree_lang.models.backends import is_offline

    for spec in dict.fromkeys(s for s in (models.author_spec, models.review_spec) if s):
        if is_offline(spec):
            options.tell(f"model answers come from {spec}, not from a live model", "offline models")


def _models(choices: RunChoices, settings, tell: Callable[..., None]):
    """The run's models from the choices (else PIPE_MODEL, `[model]` of orgtree.toml); made lazily. `tell` hears,
    once per model, when its context window is only a guess."""
    from orgtree_lang.models.base import ModelError
    from orgtree_lang.models.roles import RunModels

    try:
        return RunModels.from_config(choices.model, choices.review_model, api_base=choices.api_base,
                                     record=choices.record, timeout=choices.model_timeout,
                                     context_window=choices.context_window,
                                     review_context_window=choices.review_context_window,
                                     notice=lambda text: tell(text, "context window"), config_path=settings.file)
    except ModelError as err:
        raise UsageError(str(err)) from None


def _otel_export(choices: RunChoices, settings):
    """The OpenTelemetry export asked for (telemetry.otel.OtelExport), or None; a usage error when it is asked for
    and the `otel` extra is missing. Nothing of OpenTelemetry is imported otherwise."""
    from orgtree_lang.runtime.config import ConfigError
    from orgtree_lang.telemetry.otel import MISSING_EXTRA

    try:
        export = settings.otel(choices.otel, choices.otel_endpoint)
    except ConfigError as err:
        raise UsageError(str(err)) from None
    if export is not None:
        import importlib.util

        try:
            found = all(importlib.util.find_spec(name) is not None for name in
                        ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http"))
        except ModuleNotFoundError:  # no `opentelemetry` package at all
            found = False
        if not found:
            raise UsageError(MISSING_EXTRA)
    return export


def _agents(options: RunOptions, settings, root: Path):
    """The organization's agents (they route by meaning and read messages for nodes that read none), or None when no
    model is configured. No model is built until one is asked."""
    models = options.models
    if models is None or not models.configured:
        if "message_agent" not in settings.table("org"):
            return None  # off: a send to an unknown topic says so in its error's hint
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


def _synced(printer, effects):
    """The printer of a durable run: the journal is made durable before a line reaches the user (group commit)."""
    sync = getattr(effects, "sync", None)
    if printer is None or sync is None:
        return printer

    def show(line: str) -> None:
        sync()
        printer(line)

    return show
