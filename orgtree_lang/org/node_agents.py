"""Agents decide what a message means for a node whose pipeline reads none: a `send` to a task whose pipeline has no
`on message` handler and no `receive` is read by the organization's agent (decompose.run_agents.RunAgents), which
ignores it (a note on the scratchpad), answers the sender, forwards it up (to the node's parent, the node of the block
a generated child runs for, or at the top of the run the person), or routes it to one of the node's children.

Each decision is one journaled step (kind `model`, name `message decision`), metered against the run tree's budgets
and shown as a `decision` node under the node that got the message; a replay takes it from the journal. With no
model configured the message waits in the mailbox, as it always did.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orgtree_lang.org.block_node import MessageView
from orgtree_lang.org.routing import agents_on
from orgtree_lang.runtime.people import HUMAN
from orgtree_lang.runtime.values import display_short
from orgtree_lang.vm.blocks import reads_messages
from orgtree_lang.vm.effects import EffectStep
from orgtree_lang.vm.state import LIVE, Frame, Task
from orgtree_lang.vm import events

if TYPE_CHECKING:
    from orgtree_lang.org.scheduler import Scheduler

KINDS = ("ignore", "answer", "forward", "route")  # a node of the program: no module of its own to re-plan


class NodeAgents:
    """The agent reading the messages of a run's nodes that read none themselves."""

    def __init__(self, org: Scheduler) -> None:
        self.org = org

    def reads_for(self, target: Task) -> bool:
        """Whether the agent reads a message to `target` (else it goes to the mailbox): a model is configured, and
        the node is no route's (those start with their message) and its pipeline reads no messages itself."""
        machine = self.org.machine
        if target.route is not None or not target.frames:
            return False
        if any(reads_messages(frame, machine.program.pipelines) for frame in target.frames):
            return False
        if agents_on(machine.services.agents):
            return True
        # Agents off: the message goes to the mailbox, as it always did (and nothing is said: a program may leave
        # messages unread on purpose); a durable run journals that it did (`read`).
        return machine.services.effects is not None

    def read(self, frame: Frame, target: Task, body: Any, topic: str) -> None:
        """The agent decides what `body` means for `target`, and it is done."""
        org = self.org
        machine = org.machine
        state = org.state
        mail = org.mail
        me = mail.current()
        sender = me.node if me is not None else frame.node
        children = [task for task in state.tasks if task.parent == target.id and task.status in LIVE]
        code = target.frames[0].code
        view = MessageView(code.name, sender, topic, display_short(body, 2000),
                           tuple((task.node, _doc(task)) for task in children), _summary(target),
                           _above(org, target), 0)
        what = f"deciding on a message to {target.node}"
        node = f"{state.run_id}/{target.frames[-1].node}"
        decision_node = f"{node}/decision#{len(state.messages) + 1}"
        agents = machine.services.agents

        def decide(key: str | None) -> dict[str, Any]:
            if not agents_on(agents):
                return {"off": True}  # run-time agents are off: the message goes to the mailbox, as it always did
            machine.meter.check_model(machine.budget, what)
            return agents.decide(view, target.node, code.doc, KINDS, key)

        effects = machine.services.effects
        if effects is None:
            decision = decide(None)
        else:
            span = frame.code.span_at(frame.pc - 1)
            step = EffectStep(machine.next_effect_seq(), "model", "message decision", machine.effect_node(frame.node),
                              span, [target.node, view.sender, topic, view.body, [list(c) for c in view.children]],
                              {}, state.steps)
            decision = effects.perform(step, decide)
        if decision.get("off"):
            mail.deliver(frame, target, body, topic)
            return
        message = mail.new_message(frame, target.node, body, topic)
        message["received"] = float(state.steps)
        if events.MessageSent in machine.observer.hears:
            machine.observer.on(events.MessageSent(state=state, message=message))
        observer = machine.observer
        if events.DecisionStarted in observer.hears:
            observer.on(events.DecisionStarted(run_id=state.run_id, node_id=decision_node, parent_id=node,
                                               name=f"message from {view.sender}"))
        if events.NodeAnnotated in observer.hears:
            observer.on(events.NodeAnnotated(node_id=decision_node, tokens=decision["tokens"], cost=decision["cost"]))
        machine.meter.charge_model(machine.budget, decision["tokens"], decision["cost"], what)
        if events.DecisionEnded in observer.hears:
            observer.on(events.DecisionEnded(node_id=decision_node, detail=decision["detail"], error=None))
        kind = decision["kind"]
        if kind == "answer" and me is not None:
            mail.deliver(frame, me, decision["answer"], "answer", sender=target.node)
        elif kind == "route":
            child = next(task for task in children if task.node == decision["child"])
            mail.deliver(frame, child, body, topic, sender=target.node)
        elif kind == "forward":
            self._forward(frame, target, body, topic)

    def _forward(self, frame: Frame, target: Task, body: Any, topic: str) -> None:
        org = self.org
        parent = next((task for task in org.state.tasks if task.id == target.parent), None)
        if parent is not None and parent.status in LIVE:
            if self.reads_for(parent):
                self.read(frame, parent, body, topic)
            else:
                org.mail.deliver(frame, parent, body, topic, sender=target.node)
            return
        place = org.machine.place
        if place is not None and place.desk is not None:
            place.desk.receive(org, frame, body, topic, sender=target.node)
        else:
            org.routing.send_note(frame, body, topic, sender=target.node)


def _doc(task: Task) -> str:
    code = task.frames[0].code if task.frames else None
    doc = " ".join(((code.doc if code else "") or "").split())
    return f"pipeline {code.name if code else '?'}: {doc[:300] or '(no docstring)'}"


def _summary(target: Task) -> str:
    frame = target.frames[-1]
    span = frame.code.span_at(frame.pc)
    return f"- the node is {target.status}, at {span.file}:{span.line} in pipeline `{frame.pipeline}`"


def _above(org: Scheduler, target: Task) -> str:
    parent = next((task for task in org.state.tasks if task.id == target.parent), None)
    if parent is not None:
        return f"its parent node `{parent.node}`"
    if org.machine.place is not None:
        return "the node of the block this module was written for"
    return f"the person who started the run ({HUMAN})"
