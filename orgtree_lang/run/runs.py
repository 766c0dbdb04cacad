"""Resume, retry, replay and fork durable runs: durable/ opens the run, assemble() builds its machine, durable/ runs it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from orgtree_lang.durable.fork import Fork
from orgtree_lang.durable.replay import Replay, ReplayReport
from orgtree_lang.durable.resume import Resumption, Retrial
from orgtree_lang.durable.runs import new_run_id
from orgtree_lang.run.assemble import assemble, decomposer_for, settle
from orgtree_lang.run.options import RunOptions


def resume(root: Path, ref: str, registry, options: RunOptions, *, from_scratch: bool = False,
           program_path: Path | None = None):
    """Continue a crashed, killed, stopped or failed run without redoing its journaled steps; returns the Machine.
    `options.tell` hears which lines of a killed run are printed again (durable/resume.py)."""
    options = settle(options, root)
    with Resumption(root, ref, registry, budget=options.budget, trace_level=options.trace_level,
                    inline_bytes=options.settings.inline_bytes, trace=options.trace, tree=options.tree,
                    from_scratch=from_scratch, program_path=program_path, notice=options.tell) as opened:
        return opened.run(_assembled(opened, root, registry, options, effects=opened.effects, trace=opened.trace))


def retry(root: Path, ref: str, registry, options: RunOptions, node: str):
    """Run one node (and what depends on it) again, reusing the journaled results of everything else."""
    options = settle(options, root)
    with Retrial(root, ref, registry, node, budget=options.budget, trace_level=options.trace_level,
                 inline_bytes=options.settings.inline_bytes, trace=options.trace) as opened:
        return opened.run(_assembled(opened, root, registry, options, effects=opened.effects, trace=opened.trace))


def replay(root: Path, ref: str, registry, printer=None, options: RunOptions | None = None) -> ReplayReport:
    """Re-execute a run from its journal with no outside calls; a ReplayReport of what differs."""
    options = settle(options or RunOptions(printer=printer), root)
    with Replay(root, ref, registry, budget=options.budget, inline_bytes=options.settings.inline_bytes) as opened:
        # The sealed registry: a side-effecting skill refuses (and is counted) instead of running.
        return opened.run(_assembled(opened, root, opened.registry, options, effects=opened.effects,
                                     trace=opened.trace, tree=False))


def fork(root: Path, ref: str, registry, options: RunOptions, at_step: int, changes: dict[str, str]):
    """A new run that starts from step `at_step` of run `ref`, with some variables or inputs changed."""
    options = settle(options, root)
    with Fork(root, ref, registry, at_step, changes, run_id=options.run_id or new_run_id(), budget=options.budget,
              trace_level=options.trace_level, inline_bytes=options.settings.inline_bytes) as opened:
        options = _for(opened, options)
        # One decomposer for both machines: the replay's up to the fork point and the live one after it.
        if options.decomposer is None:
            options.decomposer = decomposer_for(options, opened.program, opened.source, opened.file, root, registry)
        replayed = assemble(opened.program, root, opened.registry, dataclasses.replace(options, printer=None),
                            opened.run_id, effects=opened.replaying, trace=opened.trace, tree=False)
        opened.reach(replayed)
        return opened.run(assemble(opened.program, root, registry, options, opened.run_id, effects=opened.effects,
                                   tracer=replayed.tracer))


def _for(opened, options: RunOptions) -> RunOptions:
    """The options of the attempt durable/ opened: its run id, merged budget and trace level."""
    return dataclasses.replace(options, run_id=opened.run_id, budget=opened.budget, trace_level=opened.trace_level)


def _assembled(opened, root: Path, registry, options: RunOptions, **where):
    """The machine of the attempt durable/ opened, with a decomposer made for its program as it is now."""
    return assemble(opened.program, root, registry, _for(opened, options), opened.run_id, source=opened.source,
                    file=opened.file, **where)
