"""Resume, retry, replay and fork durable runs, with their machines built by the run factory."""

from __future__ import annotations

from pathlib import Path

import dataclasses

from orgtree_lang.run.factory import build_run, settings_of


def resume(root: Path, ref: str, registry, options, *, from_scratch: bool = False, program_path: Path | None = None,
           notice=None):
    """Continue a crashed, killed, stopped or failed run without redoing its journaled steps; returns the Machine.
    `notice(text)` hears which lines of a killed run are printed again (durable/resume.py)."""
    from orgtree_lang.durable import resume as durable

    return durable.resume(root, ref, registry, _settled(options, root), build=build_run, from_scratch=from_scratch,
                          program_path=program_path, notice=notice)


def retry(root: Path, ref: str, registry, options, node: str):
    """Run one node (and what depends on it) again, reusing the journaled results of everything else."""
    from orgtree_lang.durable import resume as durable

    return durable.retry(root, ref, registry, _settled(options, root), node, build=build_run)


def replay(root: Path, ref: str, registry, printer=None, options=None):
    """Re-execute a run from its journal with no outside calls; a ReplayReport of what differs."""
    from orgtree_lang.durable import replay as durable
    from orgtree_lang.run.runner import RunOptions

    return durable.replay(root, ref, registry, _settled(options or RunOptions(printer=printer), root), build=build_run)


def fork(root: Path, ref: str, registry, options, at_step: int, changes: dict[str, str]):
    """A new run that starts from step `at_step` of run `ref`, with some variables or inputs changed."""
    from orgtree_lang.durable import fork as durable

    return durable.fork(root, ref, registry, _settled(options, root), at_step, changes, build=build_run)


def _settled(options, root: Path):
    """The options with the run's settings in them, read once here when the caller did not read them."""
    return dataclasses.replace(options, settings=settings_of(options, root))
