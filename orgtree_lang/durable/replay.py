"""Replay a durable run from its journal with no outside calls, and compare it with what the run produced."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orgtree_lang.durable.attempt import TRACE_FILE, AssembledRun, begin, merged_budget, open_run
from orgtree_lang.durable.effects import EffectLog
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.values import decode, to_plain

REPLAY_TRACE_FILE = "replay-trace.jsonl"



@dataclass
class ReplayReport:
    """What a replay found: equal or not, and the first difference."""

    run_id: str
    outside_calls: int
    reused: int
    output: list[str]
    result: Any
    error: str | None
    differences: list[str] = field(default_factory=list)
    trace_compared: bool = False

    @property
    def identical(self) -> bool:
        return not self.differences


class SealedRegistry:
    """The skill registry during a replay: pure skills run; any other skill refuses and is counted."""

    def __init__(self, registry) -> None:
        self.registry = registry
        self.refused: list[str] = []

    def get(self, name: str):
        skill = self.registry.get(name)
        if skill is None or skill.pure:
            return skill

        def refuse(*args, **kwargs):
            self.refused.append(name)
            raise RuntimeError(f"replay tried to call the side-effecting skill {name}")

        return dataclasses.replace(skill, func=refuse)


class Replay:
    """A durable run opened to be re-executed from its journal with no outside calls: assemble a machine of
    `program` over `effects` and `registry` (the sealed one), writing `trace`, with no org tree (the run's is
    already recorded), then `run` it for a ReplayReport. A context manager: leaving it closes the journal."""

    def __init__(self, root: Path, ref: str, registry, *, budget, inline_bytes: int) -> None:
        from orgtree_lang.compile.api import compile_source

        self.opened = opened = open_run(root, ref, lock=False, inline_bytes=inline_bytes)
        try:
            self.meta = meta = opened.meta
            self.run_id = meta["run_id"]
            self.source = meta["sources"][meta["source_hash"]]
            self.file = meta.get("file", meta["program"])
            self.program = compile_source(self.source, self.file, registry).program
            self.registry = SealedRegistry(registry)
            self.effects = EffectLog(opened.journal, meta["run_id"], "replay", source_hash=meta["source_hash"],
                                     sources=meta["sources"])
            # The run's own budget applies, and its trace level (runs from before trace levels traced every step),
            # so that traces compare.
            self.budget = merged_budget(budget, meta)
            self.trace_level = meta.get("trace_level") or "steps"
            self.trace = opened.run_dir / REPLAY_TRACE_FILE
            for old in [self.trace, *opened.run_dir.glob(REPLAY_TRACE_FILE + ".*")]:
                old.unlink(missing_ok=True)
        except BaseException:
            opened.close()
            raise

    def run(self, parts: AssembledRun) -> ReplayReport:
        """Re-execute the run on the machine assembled for it, and compare with what it produced."""
        meta, machine = self.meta, parts.machine
        error = None
        try:
            begin(machine, meta["entry"], decode(meta["inputs"]), meta["run_id"], meta.get("fork_changes", []))
            machine.run()
        except PipeRuntimeError as err:
            error = err.message
        finally:
            parts.close()
        state = machine.state
        report = ReplayReport(meta["run_id"], self.effects.outside_calls + len(self.registry.refused),
                              self.effects.reused, state.output if state else [],
                              to_plain(state.result) if state else None, error)
        _compare(report, meta, self.opened.run_dir, self.trace)
        return report

    def close(self) -> None:
        self.opened.close()

    def __enter__(self) -> Replay:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _compare(report: ReplayReport, meta: dict[str, Any], run_dir: Path, replay_trace: Path) -> None:
    if meta.get("status") in ("running", "crashed"):
        report.differences.append("the run never finished, so there is no final output to compare")
    recorded_output = meta.get("output", [])
    if report.output != recorded_output:
        for i, (old, new) in enumerate(zip(recorded_output + [None] * len(report.output),
                                           report.output + [None] * len(recorded_output))):
            if old != new:
                report.differences.append(f"printed line {i + 1}: the run printed {old!r}, the replay {new!r}")
                break
    if report.result != to_plain(decode(meta.get("result"))):
        report.differences.append(f"result: the run returned {to_plain(decode(meta.get('result')))!r}, "
                                  f"the replay {report.result!r}")
    recorded_error = (meta.get("error") or {}).get("message")
    if report.error != recorded_error:
        report.differences.append(f"error: the run ended with {recorded_error!r}, the replay with {report.error!r}")
    if meta.get("attempts", 1) == 1 and (run_dir / TRACE_FILE).is_file() and _one_attempt(run_dir / TRACE_FILE) \
            and not _rotated(run_dir / TRACE_FILE) and not _rotated(replay_trace):
        report.trace_compared = True
        difference = first_trace_difference(run_dir / TRACE_FILE, replay_trace)
        if difference:
            report.differences.append(difference)


_VOLATILE = ("time", "duration_ms")
# Events only a live run makes: a replay takes a journaled skill's result from the journal, so the model calls
# the skill made (llm.ask) are not made again.
_LIVE_ONLY = ("model",)
# What events name since they carry their org tree node (vm/trace.py): a trace written before (node "root")
# is compared without them.
_NODE_FIELDS = ("node", "callee")


def _one_attempt(trace: Path) -> bool:
    """True if the trace holds one attempt. (A run killed before its first attempt counted itself has
    attempts == 1 after its resume, but a trace of two.)"""
    for line in trace.read_text(encoding="utf-8", errors="replace").splitlines():
        if '"run.resume"' in line or '"run.retry"' in line:
            return False
    return True


def _rotated(trace: Path) -> bool:
    """A trace that outgrew its size cap keeps only its tail in the file: it cannot be compared event by event."""
    return trace.with_name(trace.name + ".1").exists()


def first_trace_difference(original: Path, replayed: Path) -> str | None:
    """The first event that differs between two traces, ignoring timestamps and durations."""
    def events(path: Path) -> list[dict[str, Any]]:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        return [{k: v for k, v in row.items() if k not in _VOLATILE} for row in rows
                if row.get("event") not in _LIVE_ONLY]

    old, new = events(original), events(replayed)
    for i, (a, b) in enumerate(zip(old, new)):
        if a.get("node") == "root":
            a, b = ({k: v for k, v in event.items() if k not in _NODE_FIELDS} for event in (a, b))
        if a != b:
            return f"trace event {i + 1} differs: the run had {a}, the replay has {b}"
    if len(old) != len(new):
        return f"the run's trace has {len(old)} events, the replay's {len(new)}"
    return None
