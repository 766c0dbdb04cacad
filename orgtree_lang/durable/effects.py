"""Decide for each side-effecting step whether to run it or take its result from the journal, and commit it."""

from __future__ import annotations

import json
import time
from typing import Any, Callable

from orgtree_lang.durable.inputs import differences, input_hash, step_inputs
from orgtree_lang.durable.journal import Journal, StepRecord
from orgtree_lang.runtime.errors import PipeRuntimeError, SkillError, disk_full
from orgtree_lang.runtime.values import EncodingMemo, decode, encode
from orgtree_lang.vm.effects import EffectStep

# Steps journaled after the steps inside them: an ambiguous block, and the finding or writing of its module
# (decompose/decomposer.py). A failed one runs again on resume, whatever comes after it in the journal.
INNER = ("ambiguous", "module")
# Modes: live (a new run records every step), resume (journaled steps are reused; a divergence is an error),
# replay (every step must come from the journal; nothing runs), retry (steps of one node run again; other
# steps are reused where the run asks for exactly the same thing at the same position).
MODES = ("live", "resume", "replay", "retry")

CHECKPOINT_SECONDS = 0.5  # at most this much work is redone after a crash (plus the step in flight)
CHECKPOINT_STEPS = 50_000


class NonDeterminismError(PipeRuntimeError):
    """The program asks for something other than what its journal recorded at the same step."""


class EffectLog:
    """The VM's door to the outside world: every side-effecting call of a durable run passes through here."""

    def __init__(self, journal: Journal, run_id: str, mode: str = "live", *, source_hash: str = "",
                 sources: dict[str, str] | None = None, retry_node: str | None = None, attempt: int = 1,
                 key_suffix: str = "", clock: Callable[[], float] = time.monotonic) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}")
        self.journal = journal
        self.run_id = run_id
        self.mode = mode
        self.source_hash = source_hash
        self.sources = sources or {}
        self.retry_node = retry_node
        self.attempt = attempt
        self.key_suffix = key_suffix  # `:scratch<n>` once a run was started over: its steps are new ones
        self._encoding_memo = EncodingMemo()  # the big values of the last checkpoint's state, encoded
        self.recorded: dict[int, StepRecord] = journal.steps() if mode != "live" else {}
        self.last_seq = max(self.recorded, default=0)
        # A retry matches steps by node and place within the node, not by number: the retried work may ask for
        # more or fewer steps (a fixed module, a saved module reused where a model wrote one) and the numbers of
        # everything after it move. It writes the run's steps afresh, in the transaction the retry holds.
        self._places: dict[tuple[str, int], StepRecord] = {}
        self._asked: dict[str, int] = {}
        if mode == "retry":
            for record in self.recorded.values():
                self._places[(record.node, self._asked.get(record.node, 0))] = record
                self._asked[record.node] = self._asked.get(record.node, 0) + 1
            self._asked.clear()
        self.outside_calls = 0  # steps actually executed (zero for a replay)
        self.reused = 0
        self.clock = clock
        self._checkpoint_time = clock()
        self._checkpoint_steps = -1
        self._checkpoint_effects = -1
        self._current_seq = 0
        self._attempts: dict[int, int] = {}  # a retried step's attempt number, from `begin` to its `end`
        self._nodes = None  # durable.node_steps.NodeSteps, opened on a remote node's first step

    @property
    def catching_up(self) -> bool:
        """True while a resume is re-doing work whose effects are already journaled (output is not shown again).

        Never during a replay: showing the run's output again is what `pipe replay` is asked for."""
        return self.mode == "resume" and self._current_seq < self.last_seq

    # ---- steps ------------------------------------------------------------

    def perform(self, step: EffectStep, execute: Callable[[str], Any]) -> Any:
        """The step's result: from the journal when it may be reused, else by `execute(idempotency_key)`."""
        return perform_step(self, step, execute)

    def begin(self, step: EffectStep) -> tuple[bool, Any]:
        """Start a step: `(True, result)` when the journal's result is reused (a recorded failure is raised
        again), else `(False, idempotency_key)`: the caller executes the step with that key, then calls `end`.

        The two halves let a slow call run on an executor while the VM goes on: the step is numbered and
        checked against the journal when it is asked for, and recorded when its result is delivered."""
        self._current_seq = step.seq
        digest = input_hash(step.args, step.kwargs)
        if self.mode == "retry":
            return self._retry(step, digest)
        record = self.recorded.get(step.seq)
        if record is not None and self.mode != "live":
            same = (record.kind, record.name, record.input_hash) == (step.kind, step.name, digest)
            if not same and step.kind == "model" and self.mode == "resume":
                # Only a block that crashed before its step was committed is run again, so every later
                # step is that block's unfinished work; its prompts may differ now (e.g. a new review).
                self._forget_from(step.seq)
                return False, self._key(step)
            if not same:
                raise self._divergence(step, record)
            # A failed step that ended the run runs again on resume: its cause may have been fixed. So does a
            # failed ambiguous block (or module writing), whose own steps (model answers, the child's effects) come after it.
            # Nor is a call whose executor was lost (a Ray cluster gone): that says nothing about the step, and
            # another branch's later step may be in the journal too.
            reuse = self.mode == "replay" or record.ok or (step.seq != self.last_seq and record.kind not in INNER
                                                           and not _executor_lost(record))
            if reuse:
                self.reused += 1
                return True, self._recorded_result(record)
        elif self.mode == "replay":
            raise PipeRuntimeError(
                f"the journal of run {self.run_id} ends at step {self.last_seq}, but the replay asks for step "
                f"{step.seq}: {step.kind} {step.name}", kind="replay", span=step.span, catchable=False,
                hint="the run stopped before this point; `pipe resume` continues it")
        return False, self._key(step)

    def end(self, step: EffectStep, value: Any, error: Exception | None) -> None:
        """Record the outcome of a step `begin` said to execute: its value, or the exception it raised."""
        inputs = step_inputs(step.args, step.kwargs)
        attempts = self._attempts.pop(step.seq, None)
        if error is not None and disk_full(error) is not None:
            return  # no room to write says nothing of the step: it runs again when the run is resumed
        if error is not None:
            self._record(step, inputs.digest, False, None, _error_record(error), attempts, inputs.shown)
        else:
            self._record(step, inputs.digest, True, json.dumps(encode(value), ensure_ascii=False), None, attempts,
                         inputs.shown)

    def answer(self, step: EffectStep) -> tuple[bool, Any]:
        """A person's journaled reply for `step` ((True, value)), or (False, None) while there is none.

        The reply is a journaled input like any step result (written by `pipe reply`), so a resume or a replay
        takes it from the journal; a step that has none is never executed here: the run waits for it. A retry
        keeps the answers to the questions it asks again (same node, place and text): they are inputs."""
        self._current_seq = step.seq
        digest = input_hash(step.args, step.kwargs)
        if self.mode == "retry":
            place = self._asked.get(step.node, 0)
            self._asked[step.node] = place + 1
            record = self._places.get((step.node, place))
            if record is None or (record.kind, record.name, record.input_hash) != (step.kind, step.name, digest):
                return False, None
            self._copy(record, step.seq, step.node, step.statement)
        else:
            record = self.recorded.get(step.seq)
            if record is None:
                return False, None
            if (record.kind, record.name, record.input_hash) != (step.kind, step.name, digest):
                raise self._divergence(step, record)
        self.reused += 1
        return True, self._recorded_result(record)

    def _retry(self, step: EffectStep, digest: str) -> tuple[bool, Any]:
        place = self._asked.get(step.node, 0)
        self._asked[step.node] = place + 1
        record = self._places.get((step.node, place))
        if record is not None and (record.kind, record.name) != (step.kind, step.name):
            record = None
        redo = self._in_retried_node(step.node) or (step.kind == "ambiguous" and self._retried_within(step.inner))
        if record is not None and record.input_hash == digest and not redo:
            self.reused += 1
            self._copy(record, step.seq, step.node, step.statement)
            if record.kind == "ambiguous" and record.ok:
                self._copy_inner(record, step)
            return True, self._recorded_result(record)
        if record is not None:
            self._attempts[step.seq] = record.attempts + 1
        return False, self._key(step)

    def _retried_within(self, block: str) -> bool:
        """True if the retried node is block node `block` or inside it: the block is resolved again to reach it."""
        return bool(block) and self.retry_node is not None and (self.retry_node == block or
                                                                 self.retry_node.startswith(block + "/"))

    def _copy(self, record: StepRecord, seq: int, node: str, statement: int | None) -> None:
        self.journal.record(seq, node, record.file, record.line, record.kind, record.name, record.input_hash,
                            record.source_hash, record.ok, record.result, record.error, statement,
                            attempts=record.attempts, finished=record.finished, observed=False, inputs=record.inputs)

    def _copy_inner(self, record: StepRecord, step: EffectStep) -> None:
        """The steps a reused block journaled inside it (model answers, its child's steps), which the VM skips
        over: copied after the block's new number, under its new node if its place in the run moved."""
        count = json.loads(record.result).get("effects:", 0) if record.result else 0
        old_inner = f"{record.node}/{record.name}@{record.statement}" if record.statement is not None else step.inner
        for offset in range(1, count + 1):
            inner = self.recorded.get(record.seq + offset)
            if inner is None:
                continue
            node = inner.node
            if step.inner and (node == old_inner or node.startswith(old_inner + "/")):
                node = step.inner + node[len(old_inner):]
            self._copy(inner, step.seq + offset, node, inner.statement)

    def _forget_from(self, seq: int) -> None:
        self.recorded = {s: r for s, r in self.recorded.items() if s < seq}
        self.last_seq = seq - 1
        self.journal.forget_steps_from(seq)

    def _key(self, step: EffectStep) -> str:
        self.outside_calls += 1
        # A repeat of the same step (after a crash, or a resume) keeps its key so the skill can make it harmless;
        # a retry asks for the step to happen again, so it gets a key of its own.
        if step.observed:
            # What the step may be given (earlier draws, clock reads) is made durable before anyone outside sees
            # it: after a power loss, a resume must not hand the same step other values.
            self.journal.sync()
        return f"{self.run_id}:{step.seq}{self.key_suffix}" + (f":retry{self.attempt}" if self.mode == "retry" else "")

    def _record(self, step: EffectStep, digest: str, ok: bool, result: str | None, error: dict | None,
                attempts: int | None = None, inputs: str | None = None) -> None:
        self.journal.record(step.seq, step.node, step.span.file, step.span.line, step.kind, step.name, digest,
                            self.source_hash, ok, result, error, step.statement, attempts=attempts,
                            observed=step.observed, inputs=inputs)

    def _in_retried_node(self, node: str) -> bool:
        return self.retry_node is not None and (node == self.retry_node or node.startswith(self.retry_node + "/"))

    @staticmethod
    def _recorded_result(record: StepRecord) -> Any:
        if record.ok:
            return decode(json.loads(record.result)) if record.result is not None else None
        error = record.error or {}
        if error.get("type") == "crash":
            # Re-raise an exception that reads like the original, so messages and traces match the first run.
            raise type(error.get("exception", "Exception"), (Exception,), {})(error.get("message", ""))
        if error.get("type") == "skill":
            raise SkillError(error.get("message", "failed"), error.get("hint"))
        if error.get("type") == "model":
            from orgtree_lang.models.base import ModelError

            raise ModelError(error.get("message", "failed"), error.get("kind", "server"), error.get("hint"))
        raise PipeRuntimeError(error.get("message", "failed"), kind=error.get("kind", "error"), hint=error.get("hint"))

    def _divergence(self, step: EffectStep, record: StepRecord) -> NonDeterminismError:
        old_line = _source_line(self.sources.get(record.source_hash), record.line)
        new_line = _source_line(self.sources.get(self.source_hash), step.span.line)
        same_step = (record.kind, record.name) == (step.kind, step.name)
        what = "its inputs differ" if same_step else "it is another step"
        lines = [
            f"the program no longer matches the journal of run {self.run_id} at step {step.seq} ({what})",
            f"  the journal has: {record.kind} {record.name} at {record.file}:{record.line} in {record.node}",
        ]
        if old_line is not None:
            lines.append(f"      {record.line:>4} | {old_line}")
        lines.append(f"  this code asks:  {step.kind} {step.name} at {step.span.file}:{step.span.line} in {step.node}")
        if new_line is not None:
            lines.append(f"      {step.span.line:>4} | {new_line}")
        if same_step:  # the lines may read the same when a value reaching the step changed: show the values
            lines += differences(record.inputs, step_inputs(step.args, step.kwargs))
        return NonDeterminismError(
            "\n".join(lines), kind="nondeterminism", span=step.span, catchable=False,
            hint=f"the code changed before the point where the run stopped; start a new run from an earlier step "
                 f"with `pipe fork {self.run_id} --at STEP`, or start this one over with "
                 f"`pipe resume {self.run_id} --from-scratch` (its side effects then happen again)",
        )

    # ---- remote nodes (durable/node_steps.py) -------------------------------------

    def node_steps(self, seq: int) -> list[dict]:
        """The steps remote node `seq` reported in an earlier try, handed to it when it runs again."""
        return self._node_steps().of(seq)

    def record_node_step(self, seq: int, record: dict) -> None:
        """A step remote node `seq` just ended (called from the thread that receives it)."""
        self._node_steps().append(seq, record)

    def _node_steps(self):
        from orgtree_lang.durable.node_steps import NodeSteps

        if self._nodes is None:
            self._nodes = NodeSteps(self.journal.path.parent, sync=self.journal.fsyncs)
        return self._nodes

    def sync(self) -> None:
        """Make every journaled step durable now: called before output reaches the user (group commit)."""
        self.journal.sync()

    # ---- checkpoints --------------------------------------------------------

    def checkpoint_due(self, steps: int, effect_seq: int) -> bool:
        """Checkpoint after new effects once CHECKPOINT_SECONDS have passed, or every CHECKPOINT_STEPS steps."""
        if self.mode == "replay":
            return False
        if steps - self._checkpoint_steps >= CHECKPOINT_STEPS:
            return True
        return effect_seq != self._checkpoint_effects and self.clock() - self._checkpoint_time >= CHECKPOINT_SECONDS

    def record_progress(self, state) -> None:
        """Keep the run's figures (steps, seconds, printed lines) where the views of a crashed run read them
        (durable.runs.view_meta), when the state cannot be checkpointed: it waits inside an instruction."""
        if self.mode == "replay" or self.catching_up:
            return
        self.journal.update_meta(progress={"steps": state.steps, "elapsed": state.elapsed, "output": state.output,
                                           "skill_calls": state.skill_calls, "messages": state.messages,
                                           "taken": time.time()})

    def checkpoint(self, state) -> None:
        """Save the whole run state (taken at a statement boundary)."""
        if self.mode == "replay" or self.catching_up:
            return
        try:
            with self._encoding_memo:  # a big value unchanged since the last checkpoint is not encoded again
                data = state.to_json()
            self.journal.checkpoint(state.steps, state.effect_seq, data)
        except RecursionError:
            return  # a value nested too deeply to encode: resume falls back to the previous checkpoint
        self._checkpoint_time = self.clock()
        self._checkpoint_steps = state.steps
        self._checkpoint_effects = state.effect_seq


def perform_step(effects, step: EffectStep, execute: Callable[[str], Any]) -> Any:
    """`begin`, then `execute(idempotency_key)` unless a result was reused, then `end` with its value or error:
    one step done at once, for any effect log with those two halves."""
    reused, found = effects.begin(step)
    if reused:
        return found
    try:
        value = execute(found)
    except Exception as exc:
        effects.end(step, None, exc)
        raise
    effects.end(step, value, None)
    return value


def _executor_lost(record: StepRecord) -> bool:
    """Whether a failed step's record says the executor it ran on was lost, not that the call failed."""
    return (record.error or {}).get("kind") == "executor"


def _error_record(exc: Exception) -> dict[str, Any]:
    if isinstance(exc, SkillError):
        return {"type": "skill", "message": exc.message, "hint": exc.hint}
    from orgtree_lang.models.base import ModelError

    if isinstance(exc, ModelError):
        return {"type": "model", "message": exc.message, "kind": exc.kind, "hint": exc.hint}
    if isinstance(exc, PipeRuntimeError):
        return {"type": "pipe", "message": exc.message, "kind": exc.kind, "hint": exc.hint}
    return {"type": "crash", "exception": type(exc).__name__, "message": str(exc)}


def _source_line(source: str | None, line: int) -> str | None:
    if source is None:
        return None
    lines = source.splitlines()
    return lines[line - 1].rstrip() if 1 <= line <= len(lines) else None
