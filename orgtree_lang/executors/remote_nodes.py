"""A remote spawned node's own machine (org/remote.py): it runs the node's pipeline anywhere and reports each step.

The same code runs on a Ray worker and, when a node issued on Ray is resumed with `--executor threads`, on a
thread of the driver. The node's machine numbers its journaled steps 1, 2, ... and keys step n `<node key>.<n>`;
each step's record goes to `report` as soon as the step ends, and a step given back from an earlier try (same
number, skill, inputs and key) is taken from its record instead of running again.
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable

from orgtree_lang.durable.effects import EffectLog, _error_record, perform_step
from orgtree_lang.durable.inputs import input_hash
from orgtree_lang.durable.journal import StepRecord
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.values import encode
from orgtree_lang.vm.executor import NodeCall
from orgtree_lang.vm import events
from orgtree_lang.vm.observe import RunObserver, hearing

CANCEL_CHECK = 64  # statements between two looks at a cancel of a node running in this process


class NodeEffects:
    """The Effects of a remote node's machine: steps numbered within the node, each reported when it ends."""

    mode = "live"
    catching_up = False

    def __init__(self, key: str, given: list[dict], report: Callable[[dict], None] | None) -> None:
        self.key = key
        self.given = {record["seq"]: record for record in given if record.get("key", "").startswith(key + ".")}
        self.report = report
        self.reused = 0
        self.outside_calls = 0

    def _step_key(self, step) -> str:
        return f"{self.key}.{step.seq}"

    def begin(self, step) -> tuple[bool, Any]:
        record = self.given.get(step.seq)
        digest = input_hash(step.args, step.kwargs)
        if record is not None and (record["key"], record["kind"], record["name"], record["hash"]) == \
                (self._step_key(step), step.kind, step.name, digest):
            self.reused += 1
            return True, EffectLog._recorded_result(StepRecord(
                step.seq, step.node, "", 0, record["kind"], record["name"], digest, "", record["ok"],
                record.get("result"), record.get("error"), 1))
        self.outside_calls += 1
        return False, self._step_key(step)

    def end(self, step, value: Any, error: Exception | None) -> None:
        record = {"seq": step.seq, "key": self._step_key(step), "kind": step.kind, "name": step.name,
                  "hash": input_hash(step.args, step.kwargs), "ok": error is None}
        if error is None:
            record["result"] = json.dumps(encode(value), ensure_ascii=False)
        else:
            record["error"] = _error_record(error)
        if self.report is not None:
            self.report(record)

    def perform(self, step, execute: Callable[[str], Any]) -> Any:
        return perform_step(self, step, execute)

    def answer(self, step) -> tuple[bool, Any]:
        raise PipeRuntimeError("a remote node cannot ask a person", kind="executor", catchable=False)

    def checkpoint_due(self, steps: int, effect_seq: int) -> bool:
        return False  # the node's steps are its checkpoint: a rerun replays them from their records

    def checkpoint(self, state) -> None:
        return None


class NodeCalls(RunObserver):
    """Keeps the node's skill calls for the driver's tree and trace; stops the node when it is cancelled here."""

    step_interval = CANCEL_CHECK

    def __init__(self, call: NodeCall) -> None:
        self.calls: list[dict] = []
        self._cancelled = call.cancelled
        self._seen = False

    @hearing(events.SkillCalled)
    def skill_called(self, event: events.SkillCalled) -> None:
        self.calls.append({"name": event.name, "args": list(event.args), "kwargs": dict(event.kwargs),
                           "outcome": event.outcome, "result": event.result if event.outcome == "ok" else None,
                           "failure": event.failure, "ms": round((time.perf_counter() - event.started) * 1000, 3)})

    @hearing(events.AtStatement)
    def at_statement(self, event: events.AtStatement) -> None:
        frame = event.frame
        if self._cancelled.is_set() and not self._seen:
            self._seen = True  # seen once, like a cancel of a local node: its except handler may clean up
            raise PipeRuntimeError(f"{frame.node} was cancelled", kind="cancelled",
                                   hint="catch it with try/except to clean up; the node ends after its handler")


def run_node(call: NodeCall, context: Any = None) -> dict[str, Any]:
    """Run the node's pipeline to its end: the envelope the driver delivers (value, output, steps, calls, error)."""
    from orgtree_lang.compile.code import Program
    from orgtree_lang.org.scheduler import Scheduler
    from orgtree_lang.runtime.skills import SkillRegistry
    from orgtree_lang.vm.machine import Machine
    from orgtree_lang.vm.services import Services

    registry = SkillRegistry()
    for skill in call.skills:
        registry.register(skill, origin=skill.origin)
    calls = NodeCalls(call)
    effects = NodeEffects(call.key, call.given, call.report) if call.key is not None else None
    services = Services(registry=registry, context=context if context is not None else call.context,
                        budget=call.budget, effects=effects, observers=(calls,), org=Scheduler)
    machine = Machine(Program.loads(call.program), services)
    state = machine.start(call.pipeline, call.inputs, run_id=call.key or "node")
    error = None
    try:
        machine.run()
    except PipeRuntimeError as err:
        error = {"message": err.message, "kind": err.kind, "line": err.span.line if err.span else None,
                 "budget": getattr(err, "budget", None) or None}
    finally:
        if call.done is not None:
            call.done()
    return {"value": state.result if error is None else None, "output": list(state.output), "steps": state.steps,
            "calls": calls.calls, "error": error}
