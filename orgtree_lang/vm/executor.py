"""Where slow skill calls run: the Executor protocol the VM submits them to, and the handle it gets back."""

from __future__ import annotations

from dataclasses import dataclass
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
