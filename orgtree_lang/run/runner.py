"""Run a .pipe program end to end: compile it, settle its options, assemble its machine and execute it."""

from __future__ import annotations

from pathlib import Path

from orgtree_lang.durable.runs import new_run_id
from orgtree_lang.run.assemble import assemble, decomposer_for, settle, tell_offline_models
from orgtree_lang.run.options import RunChoices, RunOptions

__all__ = ["RunChoices", "RunOptions", "new_run_id", "run_file", "run_program", "workspace_for"]


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
    from orgtree_lang.runtime.errors import PipeRuntimeError

    root = Path(root)
    if options.durable and (source is None or program_path is None):
        raise ValueError("a durable run needs the program's source and path")
    # Everything that can refuse the run (settings, models, export, decomposer) does so before anything is made.
    options = settle(options, root)
    tell_offline_models(options, program)
    if options.decomposer is None and source is not None:
        options.decomposer = decomposer_for(options, program, source, str(program_path or program.file), root,
                                            registry)
    run_id = options.run_id or new_run_id()
    if options.durable:
        return _durable(program, root, registry, options, run_id, source, Path(program_path))
    parts = assemble(program, root, registry, options, run_id, trace=options.trace)
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


def _durable(program, root: Path, registry, options: RunOptions, run_id: str, source: str, program_path: Path):
    """A new durable run: durable/ creates its journal, this assembles its machine over it, durable/ runs it."""
    from orgtree_lang.durable.attempt import NewRun

    # The level is fixed for the run's life: its journal records it, and a replay traces at the same one.
    options.run_id, options.trace_level = run_id, options.settings.trace(options.trace_level).level
    with NewRun(root, program, run_id=run_id, entry=options.entry, inputs=options.inputs, source=source,
                program_path=program_path, budget=options.budget, durability=options.durability,
                trace_level=options.trace_level, settings=options.settings, trace=options.trace) as new:
        return new.run(assemble(program, root, registry, options, run_id, effects=new.effects, trace=new.trace))
