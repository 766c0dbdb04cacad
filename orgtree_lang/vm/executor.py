"""Where slow skill calls (and remote spawned nodes) run: the Executor protocol, the calls it gets, the handle back."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol


class Pending(Protocol):
    """A submitted call: `done()` says whether it finished, `result()` waits for it and returns its value
    or raises its exception. `concurrent.futures.Future` is one; a Ray executor wraps its ObjectRef."""

    def done(self) -> bool: ...

    def result(self, timeout: float | None = None) -> Any: ...


class Executor(Protocol):
    """Runs slow calls (model calls, http.fetch, web.*, code.run, time.sleep: skills declared `slow`) away
    from the VM's thread, so other tasks of the run keep going while one waits.

    The VM owns ordering: it numbers each call when a task asks for it and takes results in that order,
    so an executor may run calls in any order, on any number of workers, with any delay. `close()` lets
    go of the workers once the run's machine is done; calls still running are abandoned, not waited for."""

    name: str

    def submit(self, call: Callable[[], Any]) -> Pending:
        """Start `call` (usually a SkillCall); any other callable runs in this process."""

    def close(self) -> None: ...


@dataclass
class SkillCall:
    """One slow skill call, as data: calling it runs the skill here; an executor that runs calls elsewhere
    (Ray) reads the skill, the arguments and the context, and ships what it can of them.

    `context` is the SkillContext the call gets (with its idempotency key in a durable run); it holds what
    cannot leave this process (models, the spend meter), so an executor ships only a skill marked `remote`."""

    skill: Any  # runtime.skills.Skill
    args: list
    kwargs: dict
    context: Any
    # Called in this process when the call has ended: as it returns when it ran here, when its result
    # arrives when it ran elsewhere (the scheduler ends the call's node duration there).
    done: Callable[[], None] | None = None

    def __call__(self) -> Any:
        try:
            return self.skill.invoke(self.args, self.kwargs, self.context)
        finally:
            if self.done is not None:
                self.done()


@dataclass
class NodeCall:
    """A spawned node that runs whole elsewhere (docs/ray.md, remote nodes), as data: the program's compiled
    text, the pipeline and its inputs, the skills it may call, the budget left to it, and its journal door.

    Whoever runs it (executors/remote_nodes.py: on a Ray worker, or on a thread here) starts a machine of its own
    for `pipeline`, numbers the node's steps 1, 2, ... and keys each `<key>.<n>`; a step found in `given` (the
    records it reported before a crash) is taken from there instead of being run again, and each new step's
    record goes to `report` as soon as it ends. Its result is an envelope: the pipeline's value, its printed
    lines, its steps and its skill calls (executors/remote_nodes.py), which the driver delivers in issue order."""

    program: str  # Program.dumps()
    pipeline: str
    inputs: dict
    skills: list  # the runtime.skills.Skill objects its code calls
    context: Any  # the SkillContext of the driver (an executor ships only what can leave the process)
    budget: Any  # vm.budget.Budget: what is left of the run's when the node starts
    key: str | None  # the node step's idempotency key (None outside a durable run)
    given: list  # records of steps it already ran (a resume or a retry after a lost worker)
    report: Callable[[dict], None] | None = None  # called from any thread with each new step's record
    cpu: float = 1.0  # the share of a CPU its machine takes on a cluster
    done: Callable[[], None] | None = None
    cancelled: threading.Event = field(default_factory=threading.Event)  # `cancel` of a node run in this process


class Finished:
    """A call already run on the VM's thread (no executor, or a result taken from the journal)."""

    __slots__ = ("_value", "_error")

    def __init__(self, value: Any = None, error: BaseException | None = None) -> None:
        self._value = value
        self._error = error

    def done(self) -> bool:
        return True

    def result(self, timeout: float | None = None) -> Any:
        if self._error is not None:
            raise self._error
        return self._value
