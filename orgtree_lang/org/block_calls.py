"""Ambiguous blocks reached by concurrent tasks: each resolved on a thread of its own, so that the decomposer's model
calls for several branches overlap, and delivered to its task like a slow call, in issue order.

What keeps this as exact as a block resolved on the VM's thread:

- **One thread at a time.** A block's thread holds the run lock (org/runlock.py) except while a model answers
  (`NodeSpend.away`); the VM's thread holds it except while it waits for a call. So the journal, the org tree,
  the trace and the meters see one thread at a time, and only the waits overlap.
- **Numbering of its own.** The block's step is numbered when its task reaches it, like any slow call; the steps
  journaled inside it (model answers, its child's effects) are numbered in a range set aside for it then,
  `BLOCK_STEPS` numbers after its own. So a resume or replay that redoes, or skips, any other block numbers
  this one's steps exactly as the first run did, whatever the threads' timing.
- **Starts in order.** The VM hands the lock to a new block's thread and waits until it first lets go of it, so
  blocks start in the order the run reached them (the first of two blocks with one spec writes its module; the
  second waits for it and reuses it: the module is saved once).
- **Spending and printing apart.** What the block spends goes to a meter of its own (vm.budget.BlockMeter: the
  budget checks still see the tree's totals) and what its child prints waits; both join the run when the result
  is delivered, so a checkpoint never holds half a block, and the run's output keeps the order of a sequential run.

The block's result is journaled by its thread as soon as it is known (a resume after kill -9 redoes no finished
decomposition)."""

from __future__ import annotations

import concurrent.futures
import threading
from typing import TYPE_CHECKING, Any

from orgtree_lang.org.runlock import RunClosed
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.vm.blocks import block_context, push_outputs, reads_messages
from orgtree_lang.vm.budget import BlockMeter
from orgtree_lang.vm.effects import EffectStep
from orgtree_lang.vm.executor import Finished
from orgtree_lang.vm.organization import RELOAD
from orgtree_lang.vm.state import Call, Frame
from orgtree_lang.vm import events

if TYPE_CHECKING:
    from orgtree_lang.org.scheduler import Scheduler

BLOCK_STEPS = 1_000_000  # journal step numbers set aside for the steps inside one concurrently resolved block


class StepCounter:
    """Numbers the journal steps inside one concurrently resolved block, in the range set aside for it."""

    __slots__ = ("_seq", "first", "name")

    def __init__(self, first: int, name: str) -> None:
        self.first, self._seq, self.name = first, first, name

    @property
    def effect_seq(self) -> int:
        return self._seq

    @effect_seq.setter
    def effect_seq(self, seq: int) -> None:
        if seq > self.first + BLOCK_STEPS:
            raise PipeRuntimeError(f"ambiguous block `{self.name}` journaled more than {BLOCK_STEPS:,} steps inside "
                                   "it while resolved concurrently with other tasks", kind="ambiguous",
                                   catchable=False, hint="resolve it outside the parallel block (move the block "
                                                         "before it), or make its generated module do less")
        self._seq = seq

    def next(self) -> int:
        self.effect_seq = self._seq + 1
        return self._seq


class BlockCalls:
    """The ambiguous blocks a run's tasks reach: each issued like a slow call, resolved beside the other tasks."""

    def __init__(self, org: Scheduler) -> None:
        self.org = org

    def issue(self, frame: Frame, index: int, values: list, node_id: str) -> int:
        """AMBIGUOUS in a task: number the block's step, set its range aside, start resolving it; the task waits."""
        org = self.org
        machine = org.machine
        state = org.state
        spec = frame.code.ambiguous[index]
        seq = None
        if machine.services.effects is not None:
            seq = machine.next_effect_seq()
            state.effect_seq += BLOCK_STEPS
        call = org.new_call(state.current, spec.name, list(values), {}, seq, machine.effect_node(frame.node), spec.span,
                            block={"pipeline": frame.pipeline, "index": index, "node": node_id,
                                   "reads": reads_messages(frame, machine.program.pipelines)})
        self.submit(call)
        org.wait(org.current_task(), "blocked")
        return RELOAD

    def submit(self, call: Call) -> None:
        """Start resolving block call `call` (again, after a resume): from the journal if it has the block's result,
        else on a thread of its own (on the VM's thread when the run has no executor)."""
        org = self.org
        machine = org.machine
        spec = machine.program.pipelines[call.block["pipeline"]].ambiguous[call.block["index"]]
        node_id = call.block["node"]
        step = None
        effects = machine.services.effects
        if call.seq is not None:
            step = EffectStep(call.seq, "ambiguous", spec.name, call.node, spec.span, call.args, {}, call.statement,
                              inner=node_id[len(org.state.run_id) + 1:])
            try:
                reused, found = effects.begin(step)
            except Exception as exc:  # a recorded failure, or a replay past the journal's end
                if events.BlockEnded in machine.observer.hears:
                    machine.observer.on(events.BlockEnded(node_id=node_id, outputs=None, error=_as_error(exc)))
                org.track(call, Finished(error=exc))
                return
            if reused:
                outputs = found.get("outputs:") if isinstance(found, dict) else found
                if events.BlockEnded in machine.observer.hears:
                    machine.observer.on(events.BlockEnded(node_id=node_id, outputs=outputs, error=None))
                org.track(call, Finished(found))
                return
        run = BlockRun(org, call, spec, step)
        if machine.services.executor is None:
            run.work()
        else:
            run.start()
        org.track(call, run)

    def deliver(self, call: Call, pending, result: Any, frame: Frame) -> None:
        """The block's result reaches its task (current now): its spending joins the tree's meter, its child's
        printed lines are printed, its outputs are pushed."""
        machine = self.org.machine
        spec = machine.program.pipelines[call.block["pipeline"]].ambiguous[call.block["index"]]
        if isinstance(result, dict) and "outputs:" in result:
            machine.meter.add(result["spent:"])
            outputs = result["outputs:"]
        else:
            outputs = result  # journaled by a version that kept the outputs alone
        services = machine.services
        for line in getattr(pending, "printed", ()):
            if services.printer is not None and not (services.effects is not None and services.effects.catching_up):
                services.printer(line)
        push_outputs(spec, outputs, frame.stack)
        if isinstance(result, dict) and result.get("messages:"):
            node_id = call.block["node"]
            self.org.block_messages(frame, node_id[len(self.org.state.run_id) + 1:], result["messages:"])


class BlockRun:
    """One block being resolved: `done()` and `result(timeout)` as a vm.executor.Pending; the result is what a
    sequential block journals ({"outputs:", "spent:", "effects:"}), with the lines its child printed in `printed`."""

    def __init__(self, org: Scheduler, call: Call, spec, step: EffectStep | None) -> None:
        self.org, self.call, self.spec, self.step = org, call, spec, step
        self.printed: list[str] = []
        self._finished = threading.Event()
        self._first_yield = threading.Event()
        self._value: Any = None
        self._error: BaseException | None = None
        self._threaded = False

    def start(self) -> None:
        """Run `work` on a thread of its own; return once it first waits (or ends), so blocks start in order."""
        self._threaded = True
        thread = threading.Thread(target=self.work, name=f"block {self.call.block['node']}", daemon=True)
        thread.start()
        with self.org.lock.released():
            self._first_yield.wait()

    def work(self) -> None:
        machine, call, spec, step = self.org.machine, self.call, self.spec, self.step
        lock = self.org.lock
        try:
            lock.acquire()
        except RunClosed as closed:
            self._end(None, closed)
            return
        if self._threaded:
            lock.on_first_yield(self._first_yield)
        node_id = call.block["node"]
        value, error = None, None
        try:
            meter = BlockMeter(machine.meter)
            counter = StepCounter(call.seq or 0, spec.name)
            inputs = {name: value for (name, _), value in zip(spec.inputs, call.args)}
            block = block_context(machine, spec, inputs, node_id, meter, numbering=counter, statement=call.statement,
                                  printed=self.printed, reads=call.block.get("reads", False))
            outputs = machine.services.resolver(block)
            result = {"outputs:": outputs, "spent:": dict(meter.data), "effects:": counter.effect_seq - counter.first}
            if block.upward:
                result["messages:"] = block.upward
            if step is not None:
                machine.services.effects.end(step, result, None)
            if events.BlockEnded in machine.observer.hears:
                machine.observer.on(events.BlockEnded(node_id=node_id, outputs=outputs, error=None))
            value = result
        except RunClosed as closed:
            error = closed
        except Exception as exc:
            error = exc
            try:
                if step is not None:
                    machine.services.effects.end(step, None, exc)
                if events.BlockEnded in machine.observer.hears:
                    machine.observer.on(events.BlockEnded(node_id=node_id, outputs=None, error=_as_error(exc)))
            except Exception:  # noqa: BLE001 - the block's own error is the one its task sees
                pass
        except BaseException as exc:  # a person must answer first (vm.questions.WaitingForHuman): not journaled
            error = exc
        finally:
            self._end(value, error)
            lock.release()

    def _end(self, value: Any, error: BaseException | None) -> None:
        self._value, self._error = value, error
        self._finished.set()
        self._first_yield.set()

    def done(self) -> bool:
        return self._finished.is_set()

    def result(self, timeout: float | None = None) -> Any:
        if not self._finished.wait(timeout):
            raise concurrent.futures.TimeoutError()
        if self._error is not None:
            raise self._error
        return self._value


def _as_error(exc: BaseException) -> PipeRuntimeError:
    """What the block's org tree node and trace say it failed with."""
    if isinstance(exc, PipeRuntimeError):
        return exc
    return PipeRuntimeError(f"{type(exc).__name__}: {exc}", kind="ambiguous")
