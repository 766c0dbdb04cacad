"""Messages between nodes: SEND puts a message in a task's mailbox, RECEIVE takes one or makes the task wait."""

from __future__ import annotations

from typing import Any

from orgtree_lang.runtime.builtins import HANDLE_RECORD, MESSAGE_RECORD
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.values import RecordValue, decode, encode
from orgtree_lang.syntax import types as t
from orgtree_lang.vm.calls import call_args
from orgtree_lang.vm.scheduler import WAIT, cancelled_error, current_task
from orgtree_lang.vm.tasks import LIVE, Task

TOPIC = "message"  # the topic of a message sent with `send` (topics and routes: docs/org.md, not built yet)


def _me(m) -> Task | None:
    return current_task(m.state) if m.state.tasks else None


def _mailbox_key(task: Task | None) -> str:
    return str(task.id if task is not None else 0)


def send_message(m, frame, stack: list, arg: int) -> None:
    """SEND: append the message to the target's mailbox now; a target waiting in `receive` may run again."""
    state = m.state
    body = stack.pop()
    me = _me(m)
    if arg == 2:
        target = _handle_target(m, stack.pop())
    else:
        if me is None or me.parent is None:
            raise PipeRuntimeError("`send parent, ...` from the run's main node: it has no parent", kind="send",
                                   hint="only a spawned node or a branch has a parent; send to a Handle instead")
        target = next((task for task in state.tasks if task.id == me.parent), None)
        if target is None or target.status not in LIVE:
            raise PipeRuntimeError(f"cannot send to the parent of {me.node}: it has ended", kind="send")
    message = {"id": len(state.messages) + 1, "sender": me.node if me is not None else frame.node,
               "to": target.node, "topic": TOPIC, "body": encode(body), "sent_at": float(state.steps),
               "received": None}
    state.messages.append(message)
    state.mailboxes.setdefault(_mailbox_key(target), []).append(message["id"])
    if target.status == "receiving":
        target.status = "ready"
    m.observer.message_sent(state, message)


def _handle_target(m, handle: Any) -> Task:
    if not isinstance(handle, RecordValue) or handle.record_name != HANDLE_RECORD:
        raise PipeRuntimeError(f"`send` needs a Handle (what `spawn` gives) or `parent`, got {t.type_of_value(handle)}",
                               kind="type", hint="write `h = spawn worker(args)`, then `send h, body`")
    task = next((task for task in m.state.tasks if task.id == handle.fields["task"]), None)
    if task is None or task.status not in LIVE:
        how = "was awaited" if task is None else f"has ended ({task.status})"
        raise PipeRuntimeError(f"cannot send to {handle.fields['node']}: it {how}", kind="send",
                               hint="a node receives messages only while it runs")
    return task


def receive_message(m, frame, stack: list, arg: int) -> int | None:
    """RECEIVE: push the oldest message of this task's mailbox; with none, wait for one (or for the timeout)."""
    state = m.state
    site = frame.code.calls[arg]
    me = _me(m)
    key = _mailbox_key(me)
    box = state.mailboxes.get(key)
    waiting = state.receiving.pop(key, None)
    if box:
        call_args(site, stack)
        message = state.messages[box.pop(0) - 1]
        if not box:
            del state.mailboxes[key]
        message["received"] = float(state.steps)
        m.observer.message_received(state, message)
        stack.append(RecordValue(MESSAGE_RECORD, {"sender": message["sender"], "topic": message["topic"],
                                                  "body": decode(message["body"]), "sent_at": message["sent_at"]}))
        return None
    timeout = dict(zip(site.kwnames, stack[len(stack) - len(site.kwnames):])).get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0):
        raise PipeRuntimeError(f"receive(timeout=...) needs a number of seconds of at least 0, got {timeout!r}",
                               kind="type")
    if me is not None and me.cancel:
        call_args(site, stack)
        raise cancelled_error(me)
    if (waiting is not None and waiting["fired"]) or (me is None and timeout is not None):
        call_args(site, stack)
        raise PipeRuntimeError(f"receive(timeout={timeout}) timed out: no message came, and no node of the run "
                               "could still send one", kind="timeout",
                               hint="catch it with try/except to go on without a message")
    if me is None:
        raise PipeRuntimeError(f"deadlock: {frame.node} waits in receive() at line "
                               f"{frame.code.span_at(frame.pc - 1).line}, and no other node could ever send it a "
                               "message", kind="deadlock", catchable=False,
                               hint="spawn the node that sends it first, or give receive a timeout")
    me.status = "receiving"
    state.receiving[key] = {"timeout": timeout, "fired": False}
    return WAIT


def fire_timeout(state) -> bool:
    """Nothing in the run can run or send any more: the receive of the lowest task id that has a timeout times
    out (a decision made from the run's own state, so its resume and replay make the same one). False if none."""
    for task in sorted(state.tasks, key=lambda task: task.id):
        waiting = state.receiving.get(str(task.id))
        if task.status == "receiving" and waiting is not None and waiting["timeout"] is not None:
            waiting["fired"] = True
            task.status = "ready"
            return True
    return False


def blocked_at(state) -> str:
    """Each live task, what it waits for and where: for a deadlock's message."""
    parts = []
    for task in state.tasks:
        if task.status not in LIVE:
            continue
        frame = task.frames[-1]
        span = frame.code.span_at(frame.pc)
        what = {"receiving": "waits in receive()", "awaiting": "waits in await", "joining": "waits for its branches",
                "blocked": "waits for a call"}.get(task.status, task.status)
        parts.append(f"{task.node} {what} at {span.file}:{span.line}")
    return "; ".join(parts)
