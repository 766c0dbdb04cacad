"""Spawned nodes: `spawn p(args)` starts a pipeline call as a task of its own, `await h` and `cancel h` reach it."""

from __future__ import annotations

from typing import Any

from orgtree_lang.runtime.builtins import HANDLE_RECORD
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.values import RecordValue
from orgtree_lang.syntax import types as t
from orgtree_lang.vm.blocks import RELOAD
from orgtree_lang.vm.calls import bind_arguments, call_args
from orgtree_lang.vm.scheduler import WAIT, cancel, cancelled_error, current_task, ended, enter_tasks
from orgtree_lang.vm.state import Frame
from orgtree_lang.vm.tasks import LIVE, Task


def spawn(m, frame: Frame, stack: list, arg: int) -> int:
    """SPAWN: start the call as a new task (the spawner goes on) and push its Handle."""
    state = m.state
    site = frame.code.calls[arg]
    args, kwargs = call_args(site, stack)
    code = m.program.pipelines[site.name]
    local_values = bind_arguments(code, args, kwargs)
    owner = enter_tasks(m)
    line = frame.code.span_at(frame.pc - 1).line
    task = start_node(m, frame, code, local_values, owner.id, f"spawned {code.name}#{{n}} (line {line})")
    from orgtree_lang.vm.remote import issue_node, runs_remote

    if runs_remote(m, code.name):  # a spawn only: a routed node takes messages, which stay on the driver
        issue_node(m, frame, task, task.frames[-1], frame.code.span_at(frame.pc - 1))
    stack.append(RecordValue(HANDLE_RECORD, {"task": task.id, "node": task.node, "pipeline": code.name}))
    return RELOAD  # the loop now has tasks: it recomputes where the scheduler's turns stop it


def start_node(m, frame: Frame, code, local_values: list, parent: int, label: str, route: str | None = None) -> Task:
    """A new task running `code` as node `frame.node/name#N` (N counts `frame`'s calls; `{n}` in the label)."""
    state = m.state
    frame.calls += 1
    child = Frame(code.name, 0, [], local_values, [], code, node=f"{frame.node}/{code.name}#{frame.calls}")
    task = Task(state.next_task, child.node, [child], parent=parent, kind="spawn",
                label=label.format(n=frame.calls), route=route)
    state.next_task += 1
    state.tasks.append(task)
    m.observer.pipeline_called(state, frame, child)
    m.observer.task_started(state, task, frame)
    return task


def _target(m, handle: Any, word: str) -> Task | None:
    """The task behind a Handle (None once it was awaited)."""
    if not isinstance(handle, RecordValue) or handle.record_name != HANDLE_RECORD:
        raise PipeRuntimeError(f"`{word}` needs a Handle (what `spawn` gives), got {t.type_of_value(handle)}",
                               kind="type", hint=f"write `h = spawn some_pipeline(args)`, then `{word} h`")
    task_id = handle.fields["task"]
    return next((task for task in m.state.tasks if task.id == task_id and task.kind == "spawn"), None)


def await_task(m, frame: Frame, stack: list, arg) -> int | None:
    """AWAIT: the spawned task's result once it has ended (this task waits meanwhile), or its error."""
    handle = stack[-1]
    target = _target(m, handle, "await")
    if target is None:
        raise PipeRuntimeError(f"{handle.fields['node']} was already awaited", kind="await",
                               hint="await a handle once, and keep its result in a variable")
    me = current_task(m.state) if m.state.tasks else None
    if target.status in LIVE:
        if me is target:
            raise PipeRuntimeError(f"{target.node} cannot await itself", kind="await")
        if me.cancel:  # waiting is a place where a cancel is seen
            stack.pop()
            raise cancelled_error(me)
        me.status, me.waiting = "awaiting", target.id
        return WAIT
    stack.pop()
    m.state.tasks.remove(target)
    if target.status == "done":
        stack.append(target.result)
        return None
    if target.status == "cancelled":
        raise PipeRuntimeError(f"{target.label} was cancelled", kind="cancelled",
                               hint="a cancelled node has no result; catch the error where you await it")
    error = target.error or {}
    raise PipeRuntimeError(f"{target.label} failed: {error.get('message', 'failed')}", kind=error.get("kind", "error"),
                           hint="catch it with try/except around the await")


def cancel_task(m, frame: Frame, stack: list, arg) -> int:
    """CANCEL: ask the spawned task to stop at its next statement boundary; this task goes on."""
    handle = stack.pop()
    target = _target(m, handle, "cancel")
    if target is None or target.status not in LIVE:
        how = "it was already awaited" if target is None else f"it has already ended ({target.status})"
        raise PipeRuntimeError(f"cannot cancel {handle.fields['node']}: {how}", kind="cancel",
                               hint="only a node still running can be cancelled; check its result with await")
    cancel(m, target)
    return RELOAD  # a cancel is pending: the loop stops at the next statement boundary


def task_returned(m, value: Any) -> bool:
    """The current task's last frame returned `value`. A spawned task ends with it; the main task ends the run
    once the tasks it spawned and left running have seen a cancel and ended, and the nodes of routes have
    handled what was sent to them. True when the run is over."""
    state = m.state
    task = current_task(state)
    task.result = value
    task.status = "done"
    if task.kind != "main":
        ended(m, task)
        return False
    running = [other for other in state.tasks if other is not task and other.status in LIVE]
    for other in running:
        if other.route is None:  # a route's node first handles the messages sent to it (scheduler.pick)
            cancel(m, other)
    if running:
        return False
    state.result, state.status = value, "done"
    state.tasks, state.current = [], 0
    return True
