"""Resume, retry, replay and fork durable runs, with their machines built by the run factory."""

from __future__ import annotations

from pathlib import Path

from orgtree_lang.run.factory import build_run


def resume(root: Path, ref: str, registry, options, *, from_scratch: bool = False, program_path: Path | None = None):
    """Continue a crashed, killed, stopped or failed run without redoing its journaled steps; returns the Machine."""
    from orgtree_lang.durable import resume as durable

    return durable.resume(root, ref, registry, options, build=build_run, from_scratch=from_scratch,
                          program_path=program_path)


def retry(root: Path, ref: str, registry, options, node: str):
    """Run one node (and what depends on it) again, reusing the journaled results of everything else."""
    from orgtree_lang.durable import resume as durable

    return durable.retry(root, ref, registry, options, node, build=build_run)


def replay(root: Path, ref: str, registry, printer=None, options=None):
    """Re-execute a run from its journal with no outside calls; a ReplayReport of what differs."""
    from orgtree_lang.durable import replay as durable
    from orgtree_lang.run.runner import RunOptions

    return durable.replay(root, ref, registry, options or RunOptions(printer=printer), build=build_run)


def fork(root: Path, ref: str, registry, options, at_step: int, changes: dict[str, str]):
    """A new run that starts from step `at_step` of run `ref`, with some variables or inputs changed."""
    from orgtree_lang.durable import fork as durable

    return durable.fork(root, ref, registry, options, at_step, changes, build=build_run)
