"""Continue a durable run: resume it where it stopped, or retry one of its nodes, reusing its journaled steps."""

from __future__ import annotations

import dataclasses
import re
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Callable

from orgtree_lang.compile.api import program_identity
from orgtree_lang.durable.attempt import (TRACE_FILE, AssembledRun, attempt, current_program, full_disk_stops,
                                          merged_budget, open_run, program_hash)
from orgtree_lang.durable.effects import EffectLog, NonDeterminismError
from orgtree_lang.durable.inbound import pending_messages
from orgtree_lang.durable.journal import Journal, JournalError
from orgtree_lang.durable.reconcile import repair_before_resume
from orgtree_lang.runtime.values import decode
from orgtree_lang.vm.state import RunState


class Resumption:
    """A crashed, killed, stopped or failed run opened for its next attempt, which goes on without redoing its
    journaled steps: assemble a machine of `program` over `effects` (writing `trace`, with `budget` and
    `trace_level`), then `run` it. A context manager: leaving it closes the journal and the lock."""

    def __init__(self, root: Path, ref: str, registry, *, budget, trace_level: str | None, inline_bytes: int,
                 trace: Path | None = None, tree: bool = True, from_scratch: bool = False,
                 program_path: Path | None = None, notice: Callable[[str], None] | None = None) -> None:
        """`notice` hears, before the run goes on, which of a killed run's printed lines it will print again."""
        self.opened = opened = open_run(root, ref, whole=not from_scratch, inline_bytes=inline_bytes)
        try:
            self._open(root, registry, budget, trace_level, trace, tree, from_scratch, program_path, notice)
        except BaseException:
            opened.close()
            raise

    def _open(self, root, registry, budget, trace_level, trace, tree, from_scratch, program_path, notice) -> None:
        opened = self.opened
        self.meta = meta = opened.meta
        if meta.get("status") == "done" and not from_scratch:
            raise JournalError(f"run {meta['run_id']} already finished; `pipe replay {meta['run_id']}` shows it "
                               f"again, `pipe fork {meta['run_id']} --at STEP` starts a new run from inside it")
        self.run_id = meta["run_id"]
        self.program, self.source, path = current_program(opened, registry, program_path)
        self.file = meta.get("file", str(path))
        source = self.source
        digest = program_hash(source)
        sources = {**meta.get("sources", {}), digest: source}
        self.budget = merged_budget(budget, meta)
        self.trace_level = trace_level or meta.get("trace_level")
        # The limits of this attempt become the run's: a replay of the finished run must not stop where it once did.
        opened.journal.update_meta(sources=sources, source_hash=digest, program=str(path.resolve()),
                                   budget=dataclasses.asdict(self.budget))
        state = None
        scratch = meta.get("scratch", 0)
        if from_scratch:
            # Forget the steps and the checkpoints (a checkpoint would point past the empty journal), and give the
            # new steps keys of their own: under the old keys, fs.append would refuse or skip them.
            scratch += 1
            opened.journal.start_over(scratch=scratch)
            from orgtree_lang.durable.people import forget_questions

            forget_questions(root, meta["run_id"])
            mode = "live"
        else:
            mode = "resume"
            checkpoint = opened.journal.latest_checkpoint()
            if checkpoint is not None and digest == meta.get("source_hash"):
                saved = RunState.loads(checkpoint[2])
                # Same code, and the same compiler made its bytecode (a checkpoint holds instruction positions,
                # which another compiler's bytecode does not share): continue from it; else from the start.
                if saved.program_hash == program_identity(self.program):
                    state = saved
        self.state = state
        if notice is not None and mode == "resume" and meta.get("status") == "running":
            notice(_reprinted(meta["run_id"], state, opened.journal))
        if notice is not None:
            for message in pending_messages(opened.run_dir):
                if message.get("refused"):
                    notice(f"a message queued for run {meta['run_id']} cannot be taken: {message['refused']}; the "
                           f"run logs it as undelivered (`pipe messages {meta['run_id']}`) and goes on without it")
        self._writes = (root, tree, mode, digest, sources, scratch)
        self.trace = trace or opened.run_dir / TRACE_FILE

    def __enter__(self) -> Resumption:
        """Under full_disk_stops from here to the attempt's end: the org tree put right, the effects log opened."""
        root, tree, mode, digest, sources, scratch = self._writes
        opened, meta, state = self.opened, self.meta, self.state
        with ExitStack() as stack:
            stack.callback(self.close)
            stack.enter_context(full_disk_stops(opened.journal, meta["run_id"]))
            if tree:
                # What the dead process left in the org tree is put right before this attempt adds to it.
                repair_before_resume(root, meta["run_id"], opened.journal, state.effect_seq if state else 0)
            self.effects = EffectLog(opened.journal, meta["run_id"], mode, source_hash=digest, sources=sources,
                                     key_suffix=f":scratch{scratch}" if scratch else "")
            self._trace_size = self.trace.stat().st_size if self.trace.is_file() else None
            self._held = stack.pop_all()
        return self

    def __exit__(self, *exc) -> bool:
        return self._held.__exit__(*exc)

    def run(self, parts: AssembledRun):
        """The attempt, on the machine assembled for it; returns the Machine."""
        meta, machine = self.meta, parts.machine
        parts.tracer.emit("run.resume", None, None, mode="checkpoint" if self.state else "from start",
                          attempt=meta.get("attempts", 0) + 1)
        start_args = None
        if self.state is not None:
            self.state.status = "paused"
            machine.attach(self.state)
        else:
            start_args = (meta["entry"], decode(meta["inputs"]), meta["run_id"], meta.get("fork_changes", []))
        try:
            return attempt(parts, self.opened.journal, start_args)
        except NonDeterminismError:
            # Refused: the run stays as it was, still naming the code it ran (replay uses it) and its trace.
            self.opened.journal.update_meta(**{k: meta[k] for k in ("sources", "source_hash", "program", "budget")
                                               if k in meta})
            if self._trace_size is not None:
                with open(self.trace, "r+b") as handle:
                    handle.truncate(self._trace_size)
            else:
                self.trace.unlink(missing_ok=True)
            raise

    def close(self) -> None:
        self.opened.close()


def _reprinted(run_id: str, state: RunState | None, journal: Journal) -> str:
    """What a resume of a killed run tells about its printed lines. Prints are not journaled: going on from the
    checkpoint, the resume prints nothing while it takes journaled steps again, then prints as it goes, so a
    line the killed process printed after both its last checkpoint and its last journaled step comes again."""
    last = max(journal.steps(), default=0)
    if last > (state.effect_seq if state is not None else 0):
        since = f"after step {last} (its last journaled step)"
    elif state is not None:
        since = f"after its last checkpoint (statement {state.steps}, {len(state.output)} printed line(s))"
    else:
        since = "before its first checkpoint"
    return f"run {run_id} was killed: lines it printed {since} are printed again (once in its recorded output)"


class Retrial:
    """One node of a run (and what depends on it) opened to run again with the program and saved modules as they
    are now, reusing the journaled results of everything else: assemble a machine of `program` over `effects`,
    then `run` it. The journal changes in one transaction, committed when the retry finishes with its steps
    recorded: a retry that fails, stops or is killed midway (or whose machine cannot be assembled) leaves the
    run as it was. A context manager: leaving it closes the journal and the lock."""

    def __init__(self, root: Path, ref: str, registry, node: str, *, budget, trace_level: str | None,
                 inline_bytes: int, trace: Path | None = None) -> None:
        self.opened = opened = open_run(root, ref, inline_bytes=inline_bytes)
        self._held = self._done = False
        try:
            self._open(root, registry, node, budget, trace_level, trace)
        except BaseException:
            self.close()
            raise

    def _open(self, root, registry, node, budget, trace_level, trace) -> None:
        opened = self.opened
        self.meta = meta = opened.meta
        nodes = node_names(opened.journal, meta) | tree_node_names(root, meta["run_id"])
        if node not in nodes:
            from orgtree_lang.syntax.diagnostics import did_you_mean

            hint = did_you_mean(node, nodes)
            raise JournalError(f"run {meta['run_id']} has no node `{node}`" + (f"; {hint}" if hint else "") +
                               f" (its nodes: {', '.join(in_call_order(nodes))})")
        self.node, self.run_id = node, meta["run_id"]
        self.program, self.source, path = current_program(opened, registry, None)
        self.file = meta.get("file", str(path))
        digest = program_hash(self.source)
        sources = {**meta.get("sources", {}), digest: self.source}
        self.budget = merged_budget(budget, meta)
        self.trace_level = trace_level or meta.get("trace_level")
        journal = opened.journal
        journal.hold()
        self._held = True
        journal.update_meta(sources=sources, source_hash=digest, budget=dataclasses.asdict(self.budget))
        self.effects = EffectLog(journal, meta["run_id"], "retry", source_hash=digest, sources=sources,
                                 retry_node=node, attempt=meta.get("attempts", 0) + 1,
                                 key_suffix=f":scratch{meta['scratch']}" if meta.get("scratch") else "")
        # The steps are written afresh as the retry asks for them (reused ones copied), and the checkpoints
        # of the earlier attempts, which count steps the old way, go.
        journal.start_over()
        self.trace = trace or opened.run_dir / TRACE_FILE

    def run(self, parts: AssembledRun):
        """The retry, on the machine assembled for it; returns the Machine, its journal committed."""
        meta = self.meta
        parts.tracer.emit("run.retry", None, None, node=self.node)
        machine = attempt(parts, self.opened.journal, (meta["entry"], decode(meta["inputs"]), meta["run_id"],
                                                       meta.get("fork_changes", [])))
        self.opened.journal.commit()
        self._done = True
        return machine

    def close(self) -> None:
        if self._held and not self._done:
            # Only a retry that finishes replaces the run: one that fails, stops or is interrupted leaves it as it
            # was, with the steps the old path took. Run again, it is the same attempt: what it already did
            # outside runs again under the same idempotency keys.
            self.opened.journal.rollback()
        self.opened.close()

    def __enter__(self) -> Retrial:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def tree_node_names(root: Path, run_id: str) -> set[str]:
    """The pipeline and ambiguous nodes the org tree recorded for a run, as paths like the journal's."""
    from orgtree_lang.runlog.store import TreeStore
    from orgtree_lang.runtime.state_db import state_db_path

    path = state_db_path(root)
    if not path.is_file():
        return set()
    with TreeStore(path) as store:
        return {n.id[len(run_id) + 1:] for n in store.run_nodes(run_id)
                if n.kind in ("pipeline", "ambiguous") and n.id.startswith(run_id + "/") and not n.id.endswith("#more")}


def in_call_order(paths) -> list[str]:
    """Node paths as the run made them: each under its parent, calls by their number (`work#2` before
    `work#10`, which text order puts after `work#1`), blocks by their statement."""
    return sorted(paths, key=lambda path: [[int(part) if part.isdigit() else part for part in re.split(r"(\d+)", seg)]
                                           for seg in path.split("/")])


def node_names(journal: Journal, meta: dict[str, Any]) -> set[str]:
    """Every node of a run: those that journaled steps, their ancestors, and the node where it failed."""
    names = {meta.get("entry", "main")}
    for record in journal.steps().values():
        parts = record.node.split("/")
        names.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    failed = (meta.get("error") or {}).get("node")
    if failed:
        parts = failed.split("/")
        names.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    return names
