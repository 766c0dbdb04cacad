"""Run a .pipe program end to end: compile it, set up the workspace, trace and budgets, and execute it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from orgtree_lang.durable.runs import new_run_id
from orgtree_lang.vm.budget import Budget

__all__ = ["RunOptions", "new_run_id", "run_file", "run_program", "workspace_for"]


@dataclass
class RunOptions:
    """How to run a program; every field has a sensible default for `pipe run`."""

    entry: str | None = None
    inputs: dict[str, Any] = field(default_factory=dict)
    workspace: Path | None = None  # defaults to the program's folder
    budget: Budget = field(default_factory=Budget)
    trace: Path | None = None  # defaults to <workspace>/.orgtree/runs/<id>/trace.jsonl
    trace_level: str | None = None  # off, calls or steps (vm/trace.py); None: [trace] level in orgtree.toml, or calls
    printer: Callable[[str], None] | None = None
    progress: Callable[..., None] | None = None  # (state, span), about once a second on long runs
    decomposer: Any = None
    decomposer_factory: Callable[..., Any] | None = None  # (program, source, file) -> decomposer, for resume etc.
    models: Any = None  # RunModels (models/roles.py) for skills that need a model (llm.*, insight reviews)
    registry: Any = None
    run_id: str | None = None
    use_cache: bool = True
    durable: bool = False  # journal every side-effecting step and checkpoint the state (what `pipe run` does)
    durability: str = "power"  # power: group commit, survives power loss (docs/durability.md); process: kill -9
    tree: bool = True  # record the org tree (pipeline, skill and ambiguous nodes) in the workspace's state.db
    tree_listener: Callable[..., None] | None = None  # (event, node) as pipeline and ambiguous nodes open and close
    executor: str | None = None  # where slow skill calls run (`threads`, `threads:8`; executors/table.py)
    otel: Any = None  # telemetry.otel.OtelExport: send the run's spans to an OpenTelemetry collector (docs/otel.md)
    settings: Any = None  # run.settings.RunSettings, the workspace's orgtree.toml read once; None: read at the start


def workspace_for(path: Path, explicit: Path | None) -> Path:
    return Path(explicit).resolve() if explicit is not None else Path(path).resolve().parent


def run_file(path: str | Path, options: RunOptions | None = None):
    """Compile and run the program in `path`; returns the Machine (its `.state` holds result and output).

    Raises CompileError for a program that does not compile and PipeRuntimeError when the run fails
    (the machine's state then says where)."""
    from orgtree_lang.compile.api import compile_file
    from orgtree_lang.run.registries import default_registry

    options = options or RunOptions()
    path = Path(path)
    registry = options.registry if options.registry is not None else default_registry()
    root = workspace_for(path, options.workspace)
    cache_dir = root / ".orgtree" / "cache" if options.use_cache else None
    compiled = compile_file(path, registry, cache_dir)
    return run_program(compiled.program, root, registry, options, source=compiled.source, program_path=path)


def run_program(program, root: Path, registry, options: RunOptions, source: str | None = None,
                program_path: Path | None = None):
    """Run an already compiled program in workspace `root`; returns the Machine.

    A durable run (options.durable) needs the program's source and path: its journal records them."""
    if options.durable:
        import dataclasses

        from orgtree_lang.durable.attempt import start
        from orgtree_lang.run.factory import build_run, settings_of

        if source is None or program_path is None:
            raise ValueError("a durable run needs the program's source and path")
        settings = settings_of(options, root)
        # The level is fixed for the run's life: its journal records it, and a replay traces at the same one.
        options = dataclasses.replace(options, run_id=options.run_id or new_run_id(), settings=settings,
                                      trace_level=settings.trace(options.trace_level).level)
        return start(program, Path(root), registry, options, source, Path(program_path), build=build_run)
    from orgtree_lang.run.factory import build_run
    from orgtree_lang.runtime.errors import PipeRuntimeError

    run_id = options.run_id or new_run_id()
    parts = build_run(program, Path(root), registry, options, run_id, trace=options.trace)
    machine = parts.machine
    try:
        machine.start(options.entry, options.inputs, run_id=run_id)
        machine.run()
    except PipeRuntimeError as err:
        err.state = machine.state  # where the run stopped, for reports and (later) resume
        raise
    finally:
        parts.close()
    return machine
