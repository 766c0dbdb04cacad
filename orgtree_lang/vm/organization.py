"""What the machine asks of the organization (org/): the Org protocol, the run tree's lock, and a machine without one.

The machine runs one frame stack at a time. Everything about several nodes — tasks and their turns, slow calls in
flight, cancels, messages and `on message` interrupts, routes, remote nodes, the human node — is the organization's,
behind the few calls below. The machine calls them only while its run has tasks (`RunState.tasks` is empty until an
org opcode starts one), so a machine built without an organization pays nothing for it, and fails, located and
saying what is missing, at its first org opcode.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Protocol

from orgtree_lang.compile.opcodes import OPCODES
from orgtree_lang.runtime.errors import PipeRuntimeError

if TYPE_CHECKING:
    from orgtree_lang.vm.machine import Machine
    from orgtree_lang.vm.state import Frame, RunState

# What an instruction handler may return besides None (go on) or a pc to jump to:
RELOAD = -1  # leave the inner loop and reload the frame and where the loop stops (budgets, turns)
WAIT = -2  # the task waits; the instruction runs again when it is resumed
MOVED = -3  # like RELOAD, after the handler set the frame's pc itself (back from an `on message` handler)

# The organization's opcodes, those whose row in compile/opcodes.py says how a program writes them (`org`): the
# machine's entry for each is a one-line delegate to Org.execute (vm/instructions.py).
ORG_OPCODES: dict[str, str] = {op.name: op.org for op in OPCODES if op.org}


class TreeLock(Protocol):
    """One thread at a time in a run tree (org.runlock.RunLock): held while the machine runs, let go while it waits on
    the outside, so that the ambiguous blocks the organization resolves on threads of their own go on meanwhile."""

    def acquire(self) -> None: ...

    def release(self) -> None: ...

    def released(self) -> ContextManager[None]: ...

    def close(self) -> None:
        """The run is over: a thread still working for it stops at its next step."""


class Org(Protocol):
    """The organization of one machine's run, as the machine calls it (org.scheduler.Scheduler implements it).

    Every call but `attach` and `execute` comes only while the run has tasks, at the points where the machine
    would otherwise have gone on with its one frame stack."""

    lock: TreeLock  # the run tree's: a generated child's machine shares its parent's

    def attach(self, state: RunState) -> None:
        """The machine continues from `state` (a resume): what is pending in it (cancels, messages) counts again."""

    def resume(self) -> None:
        """A stretch of the run begins with slow calls outstanding: issue again those not in flight."""

    @property
    def interrupt_due(self) -> bool:
        """Whether the current task must stop at its next statement boundary (a cancel or a message waits)."""

    def turn_over(self, frame: Frame) -> bool:
        """A statement boundary of the current task (its top frame `frame`, at its pc): raise a cancel it has to see,
        run its `on message` handler, or give the next task its turn once this one's is spent. True when the loop
        must reload (another task, or the handler, is current)."""

    def pick(self) -> bool:
        """Before the loop (re)loads a frame: make a task that can run current, waiting for the earliest-issued
        slow call when none can. True when the run is over."""

    def issue_call(self, frame: Frame, skill: Any, site: Any, args: list, kwargs: dict) -> int:
        """CALL_SKILL of a slow skill by a task: the call goes to the executor; the task waits for its delivery."""

    def issue_block(self, frame: Frame, index: int, values: list, node_id: str) -> int:
        """AMBIGUOUS by a task: the block is resolved beside the other tasks; the task waits for its outputs."""

    def task_returned(self, value: Any) -> bool:
        """The current task's last frame returned `value`. True when the run is over."""

    def task_failed(self, err: PipeRuntimeError) -> None:
        """An error no try block of the current task caught ends the task (raised again for the run's main task)."""

    def settle(self) -> None:
        """The run stops to wait for a person: journal the results of the slow calls in flight."""

    def execute(self, name: str, frame: Frame, stack: list, arg: Any) -> int | None:
        """Run org opcode `name` (a key of ORG_OPCODES) for the current task, like any instruction handler."""

    def block_messages(self, frame: Frame, block_path: str, entries: list[dict[str, Any]]) -> None:
        """The messages of the generated child of block `block_path` (its node's path in this run), delivered with
        its outputs to the task of `frame`: its log joins this run's, and those for the block's pipeline reach its
        mailbox (or go on up). Called with or without tasks."""


OrgFactory = Callable[["Machine"], Org]  # what Services.org holds: builds the organization of one machine


class _NoLock:
    """The lock of a machine without an organization: no other thread ever works for its run."""

    def acquire(self) -> None:
        pass

    def release(self) -> None:
        pass

    def released(self) -> ContextManager[None]:
        return nullcontext()

    def close(self) -> None:
        pass


class NoOrg:
    """The organization of a machine built without one: its first org opcode is a located, non-catchable error."""

    lock: TreeLock = _NoLock()
    interrupt_due = False

    def attach(self, state: RunState) -> None:
        if state.tasks:
            raise _missing("a saved run with concurrent tasks")

    def execute(self, name: str, frame: Frame, stack: list, arg: Any) -> int | None:
        raise _missing(ORG_OPCODES[name])

    def block_messages(self, frame: Frame, block_path: str, entries: list[dict[str, Any]]) -> None:
        raise _missing("messages from a generated child")

    # Unreachable without tasks, which only `execute` could have started; there for a state given by hand.
    def resume(self) -> None:
        raise _missing("a run with slow calls outstanding")

    def turn_over(self, frame: Frame) -> bool:
        raise _missing("a run with concurrent tasks")

    def pick(self) -> bool:
        raise _missing("a run with concurrent tasks")

    def issue_call(self, frame: Frame, skill: Any, site: Any, args: list, kwargs: dict) -> int:
        raise _missing("a slow call of a concurrent task")

    def issue_block(self, frame: Frame, index: int, values: list, node_id: str) -> int:
        raise _missing("an ambiguous block of a concurrent task")

    def task_returned(self, value: Any) -> bool:
        raise _missing("a run with concurrent tasks")

    def task_failed(self, err: PipeRuntimeError) -> None:
        raise err

    def settle(self) -> None:
        raise _missing("a run with slow calls outstanding")


NO_ORG = NoOrg()


def _missing(what: str) -> PipeRuntimeError:
    return PipeRuntimeError(
        f"{what} needs the organization's runtime (tasks, messages, people), and this machine was built without one",
        kind="org", catchable=False,
        hint="build machines with orgtree_lang.run.factory (as `pipe run` does), or give the machine one: "
             "Services(org=orgtree_lang.org.scheduler.Scheduler)")
