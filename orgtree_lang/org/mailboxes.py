"""Messages between nodes: SEND puts a message in a task's mailbox, RECEIVE takes one or makes the task wait, and an
`on message` handler takes one at a statement boundary.

The run state holds every message sent (`messages`, id = position + 1), the ids waiting in each task's mailbox
(`mailboxes`, by task id) and the tasks waiting in receive (`receiving`); only this module changes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orgtree_lang.runtime.builtins import HANDLE_RECORD, MESSAGE_RECORD
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.people import HUMAN
from orgtree_lang.runtime.values import RecordValue, decode, encode
from orgtree_lang.syntax import types as t
from orgtree_lang.vm.calls import call_args
from orgtree_lang.vm.organization import MOVED, RELOAD, WAIT
from orgtree_lang.vm.state import LIVE, Frame, Task
from orgtree_lang.vm import events

if TYPE_CHECKING:
    from orgtree_lang.org.scheduler import Scheduler

TOPIC = "message"  # the topic of a message sent to a Handle or `parent` without `topic=` (docs/org.md)


class Mailboxes:
    """The mailboxes of a run's tasks: SEND, SEND_PARENT, RECEIVE and the `on message` instructions."""

    OPCODES = {"SEND": "send", "SEND_PARENT": "send_to_parent", "RECEIVE": "receive", "ON_MESSAGE": "install_handler",
               "END_HANDLER": "end_handler", "LEAVE_HANDLER": "leave_handler"}

    def __init__(self, org: Scheduler) -> None:
        self.org = org

    def _me(self) -> Task | None:
        return self.org.current_task() if self.org.state.tasks else None

    def current(self) -> Task | None:
        """The task running now, or None while the run has no tasks (its mailbox is then the main node's)."""
        return self._me()

    def send(self, frame: Frame, stack: list, arg: int) -> int | None:
        """SEND: to a Handle's node now (a target waiting in `receive` may run again), to the live node of a route
        (started if there is none: org/routing.py), or to the human node (a note in `pipe inbox`)."""
        topic = _topic(stack.pop()) if arg == 3 else None
        body = stack.pop()
        target = stack.pop()
        if isinstance(target, str):
            routing = self.org.routing
            if target == HUMAN:
                routing.send_note(frame, body, topic)
                return None
            return routing.route_message(frame, target, body, topic)
        self._to_node(frame, self._handle_target(target), body, topic or TOPIC)
        return None

    def _to_node(self, frame: Frame, target: Task, body: Any, topic: str) -> None:
        """A program's message to a node: its mailbox, or, when its pipeline reads none, the organization's agent
        (org/node_agents.py)."""
        agents = self.org.node_agents
        if agents.reads_for(target):
            agents.read(frame, target, body, topic)
        else:
            self.deliver(frame, target, body, topic)

    def send_to_parent(self, frame: Frame, stack: list, arg: int) -> None:
        """SEND_PARENT: to the node that spawned or started this one."""
        topic = _topic(stack.pop()) if arg == 2 else None
        body = stack.pop()
        me = self._me()
        if me is None or me.parent is None:
            return self.no_parent(frame, body, topic)
        target = next((task for task in self.org.state.tasks if task.id == me.parent), None)
        if target is None or target.status not in LIVE:
            raise PipeRuntimeError(f"cannot send to the parent of {me.node}: it has ended", kind="send")
        self._to_node(frame, target, body, topic or TOPIC)

    def no_parent(self, frame: Frame, body: Any, topic: str | None) -> None:
        """`send parent, ...` from the run's main node: a generated child's reaches the node of the block it runs
        for (org/block_node.py); the top-level run's main node has no parent."""
        place = self.org.machine.place
        if place is not None and place.desk is not None:
            return place.desk.receive(self.org, frame, body, topic)
        if place is not None:
            # A child built without a node for its block (by hand): the message waits for the block's pipeline.
            self.new_message(frame, "..", body, topic or TOPIC)["route"] = "up"
            return None
        raise PipeRuntimeError("`send parent, ...` from the run's main node: it has no parent", kind="send",
                               hint="only a spawned node or a branch has a parent; send to a Handle instead")

    def new_message(self, frame: Frame, to: str, body: Any, topic: str, sender: str | None = None) -> dict[str, Any]:
        """A message in the run's log (not yet in any mailbox): id, sender, receiver, topic, body, logical times.
        The sender is the current node unless `sender` names another (`human` for `pipe send`)."""
        state = self.org.state
        if sender is None:
            me = self._me()
            sender = me.node if me is not None else frame.node
        message = {"id": len(state.messages) + 1, "sender": sender,
                   "to": to, "topic": topic, "body": encode(body), "sent_at": float(state.steps), "received": None}
        state.messages.append(message)
        return message

    def message(self, message_id: int) -> dict[str, Any]:
        return self.org.state.messages[message_id - 1]

    def deliver(self, frame: Frame, target: Task, body: Any, topic: str, sender: str | None = None) -> None:
        """Append a new message to `target`'s mailbox."""
        self.queue(target, self.new_message(frame, target.node, body, topic, sender))

    def queue(self, target: Task | None, message: dict[str, Any]) -> None:
        """Put `message` (new in the log) in the mailbox of `target` (None: the main node of a run without tasks)."""
        org = self.org
        state = org.state
        state.mailboxes.setdefault(_mailbox_key(target), []).append(message["id"])
        if target is not None:
            if target.status == "receiving":
                org.wake(target)
            elif self.interrupt_due(target):
                org.expect_interrupt()
        if events.MessageSent in org.machine.observer.hears:
            org.machine.observer.on(events.MessageSent(state=state, message=message))

    def take(self, task: Task | None) -> dict[str, Any] | None:
        """The oldest message of the task's mailbox, now received (None when it is empty)."""
        state = self.org.state
        key = _mailbox_key(task)
        box = state.mailboxes.get(key)
        if not box:
            return None
        message = state.messages[box.pop(0) - 1]
        if not box:
            del state.mailboxes[key]
        message["received"] = float(state.steps)
        if events.MessageReceived in self.org.machine.observer.hears:
            self.org.machine.observer.on(events.MessageReceived(state=state, message=message))
        return message

    def take_box(self, task: Task) -> list[int] | None:
        """The ids of every message left in `task`'s mailbox, now taken out of it (a route's node ended)."""
        return self.org.state.mailboxes.pop(_mailbox_key(task), None)

    def put_box(self, task: Task, ids: list[int], readdress: bool = False) -> None:
        """Messages `ids` wait in `task`'s mailbox (`readdress`: each is now addressed to it)."""
        state = self.org.state
        state.mailboxes[_mailbox_key(task)] = ids
        if readdress:
            for message_id in ids:
                state.messages[message_id - 1]["to"] = task.node

    def _handle_target(self, handle: Any) -> Task:
        if not isinstance(handle, RecordValue) or handle.record_name != HANDLE_RECORD:
            raise PipeRuntimeError(f"`send` needs a Handle (what `spawn` gives), `parent`, a route's topic or "
                                   f"\"human\", got {t.type_of_value(handle)}", kind="type",
                                   hint="write `h = spawn worker(args)`, then `send h, body`")
        task = next((task for task in self.org.state.tasks if task.id == handle.fields["task"]), None)
        if task is None or task.status not in LIVE:
            how = "was awaited" if task is None else f"has ended ({task.status})"
            raise PipeRuntimeError(f"cannot send to {handle.fields['node']}: it {how}", kind="send",
                                   hint="a node receives messages only while it runs")
        return task

    def receive(self, frame: Frame, stack: list, arg: int) -> int | None:
        """RECEIVE: push the oldest message of this task's mailbox; with none, wait for one (or for the timeout)."""
        org = self.org
        machine = org.machine
        state = org.state
        site = frame.code.calls[arg]
        me = self._me()
        key = _mailbox_key(me)
        box = state.mailboxes.get(key)
        waiting = state.receiving.pop(key, None)
        if waiting is not None and me is not None:
            if events.Receiving in machine.observer.hears:
                machine.observer.on(events.Receiving(state=state, task=me, waiting=False))
        if box:
            call_args(site, stack)
            stack.append(message_record(self.take(me)))
            return None
        timeout = dict(zip(site.kwnames, stack[len(stack) - len(site.kwnames):])).get("timeout")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0):
            raise PipeRuntimeError(f"receive(timeout=...) needs a number of seconds of at least 0, got {timeout!r}",
                                   kind="type")
        if me is None and machine.services.effects is not None and machine.place is None:
            # A durable run may get a message from outside (`pipe send`): it waits as a task, and the scheduler
            # takes outside messages when nothing else can happen (org/outside.py).
            me = org.enter_tasks()
            key = _mailbox_key(me)
        if me is not None and me.cancel:
            call_args(site, stack)
            raise org.cancelled_error(me)
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
        org.wait(me, "receiving")
        state.receiving[key] = {"timeout": timeout, "fired": False}
        if events.Receiving in machine.observer.hears:
            machine.observer.on(events.Receiving(state=state, task=me, waiting=True))
        return WAIT

    def fire_timeout(self) -> bool:
        """Nothing in the run can run or send any more: the receive with the shortest timeout times out (the lowest
        task id among equals); a decision made from the run's own state, so its resume and replay make the same
        one. False if no receive has a timeout."""
        task = self.next_timeout()
        if task is None:
            return False
        self.org.state.receiving[str(task.id)]["fired"] = True
        self.org.wake(task)
        return True

    def next_timeout(self) -> Task | None:
        """The receiving task whose timeout fires first when nothing else happens, or None."""
        state = self.org.state
        timed = [(wait["timeout"], task.id, task) for task in state.tasks
                 if task.status == "receiving" and (wait := state.receiving.get(str(task.id))) is not None
                 and wait["timeout"] is not None]
        return min(timed, key=lambda item: item[:2])[2] if timed else None

    def blocked_at(self) -> str:
        """Each live task, what it waits for and where: for a deadlock's message."""
        parts = []
        for task in self.org.state.tasks:
            if task.status not in LIVE:
                continue
            frame = task.frames[-1]
            span = frame.code.span_at(frame.pc)
            what = {"receiving": "waits in receive()", "awaiting": "waits in await",
                    "joining": "waits for its branches", "blocked": "waits for a call"}.get(task.status, task.status)
            parts.append(f"{task.node} {what} at {span.file}:{span.line}")
        return "; ".join(parts)

    # ---- `on message m:` handlers --------------------------------------------------------------------------

    def install_handler(self, frame: Frame, stack: list, arg: Any) -> int | None:
        """ON_MESSAGE: from now on, a message for this frame's task interrupts it at a statement boundary."""
        frame.on_message = list(arg)
        return self._recheck()

    def _recheck(self) -> int | None:
        """RELOAD when a message already waits for the current task's handler: the loop then stops at the next
        statement boundary instead of at the end of the task's turn."""
        if self.org.state.tasks and self.interrupt_due(self.org.current_task()):
            self.org.expect_interrupt()
            return RELOAD
        return None

    def interrupt_due(self, task: Task) -> bool:
        """Whether `task` has a message its top frame's handler should take at the next statement boundary."""
        frame = task.frames[-1] if task.frames else None
        return (frame is not None and frame.on_message is not None and frame.interrupted is None
                and task.status == "ready" and bool(self.org.state.mailboxes.get(_mailbox_key(task))))

    def interrupt(self, task: Task, frame: Frame) -> bool:
        """At a statement boundary of `task` (its frame at `frame.pc`): run the handler if a message waits for it.
        True when the handler was entered (the loop then reloads the frame)."""
        if not (self.interrupt_due(task) and frame is task.frames[-1]):
            return False
        slot, handler_pc = frame.on_message
        message = self.take(task)
        frame.interrupted = {"pc": frame.pc, "stack": list(frame.stack), "handlers": [list(h) for h in frame.handlers]}
        frame.stack.clear()
        frame.handlers.clear()
        frame.locals[slot] = message_record(message)
        if events.Interrupted in self.org.machine.observer.hears:
            self.org.machine.observer.on(events.Interrupted(state=self.org.state, node=task.node, message=message,
                                                            span=frame.code.span_at(frame.pc)))
        frame.pc = handler_pc
        return True

    def end_handler(self, frame: Frame, stack: list, arg: Any) -> int:
        """END_HANDLER: back to the interrupted statement, with its stack and try blocks."""
        saved = frame.interrupted
        frame.interrupted = None
        frame.stack.extend(saved["stack"])
        frame.handlers.extend(saved["handlers"])
        frame.pc = saved["pc"]
        self._recheck()  # more messages came meanwhile: the next one interrupts at the interrupted statement itself
        return MOVED

    def leave_handler(self, frame: Frame, stack: list, arg: Any) -> int | None:
        """LEAVE_HANDLER: a `goto` out of the handler drops the interrupted statement (the pipeline changes course)."""
        frame.interrupted = None
        return self._recheck()


def message_record(message: dict[str, Any]) -> RecordValue:
    return RecordValue(MESSAGE_RECORD, {"sender": message["sender"], "topic": message["topic"],
                                        "body": decode(message["body"]), "sent_at": message["sent_at"]})


def _mailbox_key(task: Task | None) -> str:
    return str(task.id if task is not None else 0)


def _topic(topic: Any) -> str:
    if not isinstance(topic, str):
        raise PipeRuntimeError(f"`topic=` of `send` must be a str, got {t.type_of_value(topic)}", kind="type")
    return topic
