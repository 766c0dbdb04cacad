"""Fork a durable run: a new run that starts from a step inside another, with some variables or inputs changed."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from orgtree_lang.durable.attempt import (TRACE_FILE, AssembledRun, apply_changes, attempt, begin, merged_budget,
                                          open_run)
from orgtree_lang.durable.effects import EffectLog
from orgtree_lang.durable.journal import Journal, JournalError
from orgtree_lang.durable.replay import SealedRegistry
from orgtree_lang.durable.runs import RunLock, runs_dir
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.values import decode, encode


class Fork:
    """A new run that starts from step `at_step` of run `ref`, with some variables or inputs changed, made in
    three moves: assemble a machine of `program` over `replaying` and the sealed `registry` (no printer, no org
    tree, writing `trace`) and hand it to `reach`, which replays the parent up to the fork point with nothing
    outside called; then assemble the machine that goes on live over `effects` (continuing the same tracer) and
    hand it to `run`. A context manager: leaving it closes both journals and the new run's lock; a fork that
    never started leaves no run folder behind."""

    def __init__(self, root: Path, ref: str, registry, at_step: int, changes: dict[str, str], *, run_id: str,
                 budget, trace_level: str | None, inline_bytes: int) -> None:
        from orgtree_lang.compile.api import compile_source

        self.opened = opened = open_run(root, ref, lock=False, inline_bytes=inline_bytes)
        self.journal = self.lock = self._state = None
        try:
            self.meta = meta = opened.meta
            if at_step < 0 or at_step > meta.get("steps", 0):
                raise JournalError(f"run {meta['run_id']} has {meta.get('steps', 0)} steps; --at must be 0 to that")
            self.source = meta["sources"][meta["source_hash"]]
            self.file = meta.get("file", meta["program"])
            self.program = compile_source(self.source, self.file, registry).program
            inputs = decode(meta["inputs"])
            if at_step == 0:
                inputs = {**inputs, **_input_changes(self.program.entry(meta["entry"]), changes)}
                changes = {}
            self.at_step, self.changes, self.inputs, self.run_id = at_step, changes, inputs, run_id
            self.trace_level = trace_level or meta.get("trace_level")
            self.budget = merged_budget(budget, meta)
            self.run_dir = runs_dir(root) / run_id
            self.trace = self.run_dir / TRACE_FILE
            self.journal = Journal.create(self.run_dir, inline_bytes=inline_bytes, meta={
                **{k: v for k, v in meta.items() if k not in ("status", "result", "output", "error", "finished",
                                                              "scratch")},
                "run_id": run_id, "inputs": encode(inputs), "created": time.time(), "status": "running",
                "attempts": 0, "parent_run": meta["run_id"], "fork_step": at_step, "trace_level": self.trace_level,
                # Every variable change on the way to this run's state, so that replay and resume can make it again.
                "fork_changes": [pair for pair in meta.get("fork_changes", []) if pair[0] <= at_step] +
                                ([[at_step, changes]] if changes else []),
            })
            self.lock = RunLock(self.run_dir).acquire()
            # The parent is replayed up to the fork point (nothing outside is called), then goes live on the new
            # journal.
            self.registry = SealedRegistry(registry)
            self.replaying = EffectLog(opened.journal, meta["run_id"], "replay", source_hash=meta["source_hash"],
                                       sources=meta["sources"])
            self.effects = EffectLog(self.journal, run_id, "live", source_hash=meta["source_hash"],
                                     sources=meta["sources"])
        except BaseException:
            self.close()
            raise

    def reach(self, parts: AssembledRun) -> None:
        """Replay the parent on the replaying machine up to the fork point, change the variables there, and copy
        the journaled steps so far into the new run."""
        meta, machine, at_step, changes = self.meta, parts.machine, self.at_step, self.changes
        try:
            begin(machine, meta["entry"], self.inputs, self.run_id, meta.get("fork_changes", []), until=at_step)
            if at_step > machine.state.steps:
                machine.run(pause_after=at_step - machine.state.steps)
            if machine.state.status == "done" and changes:
                raise JournalError(f"run {meta['run_id']} has finished by step {at_step}, so it has no "
                                   "variables left to change; use an earlier --at")
            apply_changes(machine.state, changes)
            self.opened.journal.copy_steps_to(self.journal, machine.state.effect_seq)
        except BaseException as exc:
            # The fork never started: leave no run folder behind.
            parts.close()
            self._discard()
            if isinstance(exc, PipeRuntimeError):
                raise JournalError(f"run {meta['run_id']} cannot be forked at step {at_step}: replaying it up "
                                   f"to there stops at step {machine.state.steps} with: {exc.message}; "
                                   "use an earlier --at") from None
            raise
        self._state = machine.state

    def run(self, live: AssembledRun):
        """The new run's first attempt: the same state and trace go on in `live`, a machine of the new run with
        live skills, its printer and org tree. Returns the Machine."""
        if self._state is None:
            raise JournalError("a fork runs after it has reached its step (Fork.reach)")
        live.machine.attach(self._state)  # the calls open at the fork point are the fork's first nodes
        self.effects.checkpoint(self._state)
        return attempt(live, self.journal, None)

    def _discard(self) -> None:
        self.journal.close()
        if self.lock is not None:
            self.lock.release()
        self.journal = self.lock = None
        shutil.rmtree(self.run_dir, ignore_errors=True)

    def close(self) -> None:
        if self.journal is not None:
            self.journal.close()
        if self.lock is not None:
            self.lock.release()
        self.opened.close()

    def __enter__(self) -> Fork:
        return self

    def __exit__(self, kind, *exc) -> None:
        if kind is not None and self._state is None and self.journal is not None:
            self._discard()  # its machines could not be assembled: the fork never started
        self.close()


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
