"""Fork a durable run: a new run that starts from a step inside another, with some variables or inputs changed."""

from __future__ import annotations

import dataclasses
import shutil
import time
from pathlib import Path
from typing import Any

from orgtree_lang.durable.attempt import (TRACE_FILE, RunBuilder, apply_changes, attempt, begin, merged_budget,
                                          open_run, with_decomposer)
from orgtree_lang.durable.effects import EffectLog
from orgtree_lang.durable.journal import Journal, JournalError
from orgtree_lang.durable.replay import SealedRegistry
from orgtree_lang.durable.runs import RunLock, new_run_id, runs_dir
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.values import decode, encode


def fork(root: Path, ref: str, registry, options, at_step: int, changes: dict[str, str], *, build: RunBuilder):
    """A new run that starts from step `at_step` of run `ref`, with some variables or inputs changed."""
    from orgtree_lang.compile.api import compile_source

    opened = open_run(root, ref, lock=False, inline_bytes=options.settings.inline_bytes)
    try:
        meta = opened.meta
        if at_step < 0 or at_step > meta.get("steps", 0):
            raise JournalError(f"run {meta['run_id']} has {meta.get('steps', 0)} steps; --at must be 0 to that")
        source = meta["sources"][meta["source_hash"]]
        program = compile_source(source, meta.get("file", meta["program"]), registry).program
        inputs = decode(meta["inputs"])
        if at_step == 0:
            inputs = {**inputs, **_input_changes(program.entry(meta["entry"]), changes)}
            changes = {}
        new_id = options.run_id or new_run_id()
        options = dataclasses.replace(options, trace_level=options.trace_level or meta.get("trace_level"))
        new_dir = runs_dir(root) / new_id
        new_journal = Journal.create(new_dir, inline_bytes=options.settings.inline_bytes, meta={
            **{k: v for k, v in meta.items() if k not in ("status", "result", "output", "error", "finished",
                                                          "scratch")},
            "run_id": new_id, "inputs": encode(inputs), "created": time.time(), "status": "running", "attempts": 0,
            "parent_run": meta["run_id"], "fork_step": at_step, "trace_level": options.trace_level,
            # Every variable change on the way to this run's state, so that replay and resume can make it again.
            "fork_changes": [pair for pair in meta.get("fork_changes", []) if pair[0] <= at_step] +
                            ([[at_step, changes]] if changes else []),
        })
        with RunLock(new_dir):
            options = dataclasses.replace(options, budget=merged_budget(options, meta), run_id=new_id)
            options = with_decomposer(options, program, source, meta.get("file", meta["program"]))
            # Replay the parent up to the fork point (nothing outside is called), then go live on the new journal.
            replaying = EffectLog(opened.journal, meta["run_id"], "replay", source_hash=meta["source_hash"],
                                  sources=meta["sources"])
            parts = build(program, root, SealedRegistry(registry), dataclasses.replace(options, printer=None), new_id,
                          effects=replaying, trace=new_dir / TRACE_FILE, tree=False)
            machine = parts.machine
            try:
                begin(machine, meta["entry"], inputs, new_id, meta.get("fork_changes", []), until=at_step)
                if at_step > machine.state.steps:
                    machine.run(pause_after=at_step - machine.state.steps)
                if machine.state.status == "done" and changes:
                    raise JournalError(f"run {meta['run_id']} has finished by step {at_step}, so it has no "
                                       "variables left to change; use an earlier --at")
                apply_changes(machine.state, changes)
                opened.journal.copy_steps_to(new_journal, machine.state.effect_seq)
            except BaseException as exc:
                # The fork never started: leave no run folder behind.
                parts.close()
                new_journal.close()
                shutil.rmtree(new_dir, ignore_errors=True)
                if isinstance(exc, PipeRuntimeError):
                    raise JournalError(f"run {meta['run_id']} cannot be forked at step {at_step}: replaying it up "
                                       f"to there stops at step {machine.state.steps} with: {exc.message}; "
                                       "use an earlier --at") from None
                raise
            # The same state and trace go on in a machine of the new run: live skills, its printer and org tree.
            live_effects = EffectLog(new_journal, new_id, "live", source_hash=meta["source_hash"],
                                     sources=meta["sources"])
            live = build(program, root, registry, options, new_id, effects=live_effects, tracer=parts.tracer)
            live.machine.attach(machine.state)  # the calls open at the fork point are the fork's first nodes
            live_effects.checkpoint(machine.state)
            try:
                return attempt(live, new_journal, None)
            finally:
                new_journal.close()
    finally:
        opened.close()


def _input_changes(code, changes: dict[str, str]) -> dict[str, Any]:
    from orgtree_lang.runtime.inputs import InputError, parse_input

    params = {p.name: p for p in code.params}
    result = {}
    for key, text in changes.items():
        if key not in params:
            raise JournalError(f"pipeline {code.name} has no input `{key}` (inputs: {', '.join(params) or 'none'})")
        try:
            result[key] = parse_input(key, text, params[key].type)
        except InputError as err:
            raise JournalError(str(err)) from None
    return result
