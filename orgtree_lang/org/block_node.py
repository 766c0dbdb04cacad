"""One tree: the node of an ambiguous block as its generated child sees it (`send parent` from the child's main node
reaches it, and it may `send` to the child's nodes), and the child's messages joining the run when the block's
outputs are delivered.

A message that reaches the block's node goes to the mailbox of the pipeline the block is in when that pipeline reads
messages itself (`on message` or `receive`), or when no agent reads messages (no model configured). Otherwise the
node's agent (the `decide` callable the resolver gives, decompose/messages.py) reads it and answers one decision:
ignore it, answer the sender, forward it to the node above, route it to one of the child's nodes, or re-plan
(vm.blocks.Replan). The child's messages are in its own log while it runs and join this run's log, renamed under
the block's path, with its outputs (vm.blocks.deliver_upward): so what the run's other tasks see never depends on
when a block's thread ran, and a resume or replay that takes the block from the journal delivers the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from orgtree_lang.org.mailboxes import TOPIC
from orgtree_lang.runtime.people import HUMAN
from orgtree_lang.runtime.values import decode, display_short
from orgtree_lang.vm.blocks import Replan, reads_messages
from orgtree_lang.vm.state import LIVE, Frame, Task
from orgtree_lang.vm import events

if TYPE_CHECKING:
    from orgtree_lang.org.scheduler import Scheduler

ABOVE = ".."  # the block's node, in its child's message log: renamed to the block's path when the log joins the run
KINDS = ("ignore", "answer", "forward", "route", "replan")


@dataclass(frozen=True)
class MessageView:
    """What the agent of a block's node sees of one message: the block, the message, the node's children (the
    child's live nodes, each with its pipeline's docstring), a summary of the child's state, and who is above."""

    block: str
    sender: str
    topic: str
    body: str
    children: tuple[tuple[str, str], ...]
    state: str
    above: str
    number: int  # the decisions this node took before, in this run of its child


# The agent: a MessageView in, one validated decision out ({"kind": one of KINDS, "note", "answer", "child"}).
Decide = Callable[[MessageView], dict[str, Any]]


class BlockNode:
    """The node of one ambiguous block for the generated child it runs (vm.blocks.BlockContext.desk)."""

    def __init__(self, block, decide: Decide | None = None, off: Callable[[], None] | None = None) -> None:
        self.block = block  # vm.blocks.BlockContext
        self.decide = decide
        self.off = off  # said when a message reaches the node and no agent reads it (no model configured)
        self.decisions = 0

    def receive(self, org: Scheduler, frame: Frame, body: Any, topic: str | None,
                sender: str | None = None) -> None:
        """`send parent, body` from the child's main node (or a message forwarded up from a block inside it)."""
        mail = org.mail
        state = org.state
        message = mail.new_message(frame, ABOVE, body, topic or TOPIC, sender)
        if events.MessageSent in org.machine.observer.hears:
            org.machine.observer.on(events.MessageSent(state=state, message=message))
        if self.block.reads_messages or self.decide is None:
            if self.decide is None and self.off is not None:
                self.off()
            message["route"] = "up"  # for the pipeline's mailbox, when the block's outputs are delivered
            return
        message["received"] = float(state.steps)
        me = mail.current()
        view = MessageView(self.block.spec.name, message["sender"], message["topic"], display_short(body, 2000),
                           tuple(_children(org)), _state_summary(org, frame), self._above(), self.decisions)
        self.decisions += 1
        decision = self.decide(view)
        kind = decision["kind"]
        if kind == "answer":
            self._send_down(org, frame, me, decision["answer"], "answer")
        elif kind == "forward":
            message["route"] = "forward"
        elif kind == "route":
            target = next((task for task in state.tasks if task.node == decision["child"] and task.status in LIVE),
                          None)
            self._send_down(org, frame, target, body, message["topic"])
        elif kind == "replan":
            raise Replan(f"a message from {message['sender']} (topic {message['topic']!r}): "
                         f"{display_short(body, 2000)}", decision.get("note", ""))

    def _send_down(self, org: Scheduler, frame: Frame, task: Task | None, body: Any, topic: str) -> None:
        """A message from the block's node to one of its child's nodes (`task`; None: the child's only node)."""
        mail = org.mail
        if task is not None:
            mail.deliver(frame, task, body, topic, sender=ABOVE)
            return
        root = org.state.frames[0].node if org.state.frames else "main"
        message = mail.new_message(frame, root, body, topic, sender=ABOVE)
        mail.queue(None, message)

    def _above(self) -> str:
        where = self.block.journal_node.rpartition("/")[0] or "main"
        if self.block.reads_messages:
            return f"the pipeline node `{where}` (it reads messages itself)"
        return f"the node `{where}` that the block is in, and from the top of the run the person who started it"


def _children(org: Scheduler) -> list[tuple[str, str]]:
    """The child's live nodes with their pipelines' docstrings (its entry alone while it has no tasks)."""
    state = org.state
    if not state.tasks:
        code = state.frames[0].code if state.frames else None
        return [(state.frames[0].node if state.frames else "main", _doc(code))]
    return [(task.node, _doc(task.frames[0].code if task.frames else None)) for task in state.tasks
            if task.status in LIVE]


def _doc(code) -> str:
    if code is None:
        return ""
    return f"pipeline {code.name}: {' '.join((code.doc or '').split())[:300] or '(no docstring)'}"


def _state_summary(org: Scheduler, frame: Frame) -> str:
    """A few lines on where the child is: its statements so far, the sender's line, what it printed last."""
    state = org.state
    span = frame.code.span_at(max(frame.pc - 1, 0))
    printed = state.output[-3:]
    lines = [f"- the generated module has run {state.steps} statement(s); the message was sent at "
             f"{span.file}:{span.line} in pipeline `{frame.pipeline}`",
             f"- its messages so far: {len(state.messages)}; live nodes: {len([t for t in state.tasks if t.status in LIVE]) or 1}"]
    if printed:
        lines.append("- it printed last: " + " | ".join(display_short(line, 200) for line in printed))
    return "\n".join(lines)


class ChildMessages:
    """The message log of a block's generated child, joining the run's when the block's outputs are delivered."""

    def __init__(self, org: Scheduler) -> None:
        self.org = org

    def deliver(self, frame: Frame, block_path: str, entries: list[dict[str, Any]]) -> None:
        org = self.org
        mail = org.mail
        state = org.state
        me = mail.current()
        while me is not None and me.kind == "branch":  # a parallel branch's messages are its pipeline's node's
            me = next(task for task in state.tasks if task.id == me.parent)
        here = me.node if me is not None else frame.node

        def renamed(name: str) -> str:
            if name == ABOVE:
                return block_path
            return name if name == HUMAN else f"{block_path}/{name}"

        for entry in entries:
            route = entry.get("route")
            body = decode(entry["body"])
            sender = renamed(entry["sender"])
            if route == "up" or (route == "forward" and reads_messages(frame, org.machine.program.pipelines)):
                if me is None and frame.on_message is not None:
                    me = org.enter_tasks()  # its `on message` handler takes it at the next statement boundary
                message = mail.new_message(frame, here, body, entry["topic"], sender=sender)
                mail.queue(me, message)
                continue
            message = mail.new_message(frame, renamed(entry["to"]), body, entry["topic"], sender=sender)
            if entry.get("received") is not None or route == "forward":
                message["received"] = float(state.steps)
            if events.MessageSent in org.machine.observer.hears:
                org.machine.observer.on(events.MessageSent(state=state, message=message))
            if route == "forward":
                self._forward(frame, block_path, body, entry["topic"])

    def _forward(self, frame: Frame, block_path: str, body: Any, topic: str) -> None:
        """A block's node passes a message up past the pipeline it is in, which reads none: to the node of the block
        this machine runs for, or at the top of the run to the person (a note in `pipe inbox`)."""
        org = self.org
        place = org.machine.place
        desk = place.desk if place is not None else None
        if desk is not None:
            desk.receive(org, frame, body, topic, sender=block_path)
        elif place is not None:
            # A child whose block has no node of its own (built by hand): the message stays in its mailbox.
            message = org.mail.new_message(frame, ABOVE, body, topic, sender=block_path)
            message["route"] = "up"
        else:
            org.routing.send_note(frame, body, topic, sender=block_path)
