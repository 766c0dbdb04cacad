"""Spawned nodes: `spawn p(args)` starts a pipeline call as a task of its own, `await h` and `cancel h` reach it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orgtree_lang.runtime.builtins import HANDLE_RECORD
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.values import RecordValue
from orgtree_lang.syntax import types as t
from orgtree_lang.vm.calls import bind_arguments, call_args
from orgtree_lang.vm.organization import RELOAD, WAIT
from orgtree_lang.vm.state import LIVE, Frame, Task
from orgtree_lang.vm import events

if TYPE_CHECKING:
    from orgtree_lang.org.scheduler import Scheduler


class Handles:
    """SPAWN, AWAIT and CANCEL, and the spawned node a route or a spawn starts."""

    OPCODES = {"SPAWN": "spawn", "AWAIT": "await_task", "CANCEL": "cancel_task"}

    def __init__(self, org: Scheduler) -> None:
        self.org = org

    def spawn(self, frame: Frame, stack: list, arg: int) -> int:
        """SPAWN: start the call as a new task (the spawner goes on) and push its Handle."""
        org = self.org
        site = frame.code.calls[arg]
        args, kwargs = call_args(site, stack)
        code = org.machine.program.pipelines[site.name]
        local_values = bind_arguments(code, args, kwargs)
        owner = org.enter_tasks()
        line = frame.code.span_at(frame.pc - 1).line
        task = self.start_node(frame, code, local_values, owner.id, f"spawned {code.name}#{{n}} (line {line})")
        if org.remote.runs_remote(code.name):  # a spawn only: a routed node takes messages, which stay on the driver
            org.remote.issue_node(task, task.frames[-1], frame.code.span_at(frame.pc - 1))
        stack.append(RecordValue(HANDLE_RECORD, {"task": task.id, "node": task.node, "pipeline": code.name}))
        return RELOAD  # the loop now has tasks: it recomputes where the scheduler's turns stop it

    def start_node(self, frame: Frame, code, local_values: list, parent: int, label: str,
                   route: str | None = None) -> Task:
        """A new task running `code` as node `frame.node/name#N` (N counts `frame`'s calls; `{n}` in the label)."""
        org = self.org
        frame.calls += 1
        child = Frame(code.name, 0, [], local_values, [], code, node=f"{frame.node}/{code.name}#{frame.calls}")
        task = org.new_task(child.node, [child], parent=parent, kind="spawn", label=label.format(n=frame.calls),
                            route=route)
        observer = org.machine.observer
        if events.PipelineCalled in observer.hears:
            observer.on(events.PipelineCalled(state=org.state, caller=frame, frame=child))
        if events.TaskStarted in observer.hears:
            observer.on(events.TaskStarted(state=org.state, task=task, frame=frame))
        return task

    def _target(self, handle: Any, word: str) -> Task | None:
        """The task behind a Handle (None once it was awaited)."""
        if not isinstance(handle, RecordValue) or handle.record_name != HANDLE_RECORD:
            raise PipeRuntimeError(f"`{word}` needs a Handle (what `spawn` gives), got {t.type_of_value(handle)}",
                                   kind="type", hint=f"write `h = spawn some_pipeline(args)`, then `{word} h`")
        task_id = handle.fields["task"]
        return next((task for task in self.org.state.tasks if task.id == task_id and task.kind == "spawn"), None)

    def await_task(self, frame: Frame, stack: list, arg: Any) -> int | None:
        """AWAIT: the spawned task's result once it has ended (this task waits meanwhile), or its error."""
        org = self.org
        handle = stack[-1]
        target = self._target(handle, "await")
        if target is None:
            raise PipeRuntimeError(f"{handle.fields['node']} was already awaited", kind="await",
                                   hint="await a handle once, and keep its result in a variable")
        me = org.current_task() if org.state.tasks else None
        if target.status in LIVE:
            if me is target:
                raise PipeRuntimeError(f"{target.node} cannot await itself", kind="await")
            if me.cancel:  # waiting is a place where a cancel is seen
                stack.pop()
                raise org.cancelled_error(me)
            org.wait(me, "awaiting", on=target.id)
            return WAIT
        stack.pop()
        org.remove(target)
        if target.status == "done":
            stack.append(target.result)
            return None
        if target.status == "cancelled":
            raise PipeRuntimeError(f"{target.label} was cancelled", kind="cancelled",
                                   hint="a cancelled node has no result; catch the error where you await it")
        error = target.error or {}
        raise PipeRuntimeError(f"{target.label} failed: {error.get('message', 'failed')}",
                               kind=error.get("kind", "error"), hint="catch it with try/except around the await")

    def cancel_task(self, frame: Frame, stack: list, arg: Any) -> int:
        """CANCEL: ask the spawned task to stop at its next statement boundary; this task goes on."""
        handle = stack.pop()
        target = self._target(handle, "cancel")
        if target is None or target.status not in LIVE:
            how = "it was already awaited" if target is None else f"it has already ended ({target.status})"
            raise PipeRuntimeError(f"cannot cancel {handle.fields['node']}: {how}", kind="cancel",
                                   hint="only a node still running can be cancelled; check its result with await")
        self.org.cancel(target)
        return RELOAD  # a cancel is pending: the loop stops at the next statement boundary
