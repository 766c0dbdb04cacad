"""Messages from outside a run (`pipe send`): taken when nothing in the run can happen, each a journaled decision."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.people import HUMAN
from orgtree_lang.vm.budget import budget_exceeded
from orgtree_lang.vm.effects import EffectStep
from orgtree_lang.vm.state import LIVE, Frame
from orgtree_lang.vm import events

if TYPE_CHECKING:
    from orgtree_lang.org.scheduler import Scheduler

OUTSIDE_STEP = "message.outside"  # durable/inbound.py reads the ids of the messages taken from these steps


class OutsideMessages:
    """The messages `pipe send` queued for a durable run (Services.inbound), delivered as the human node's."""

    def __init__(self, org: Scheduler) -> None:
        self.org = org

    def take(self) -> bool:
        """No task can run, no call is in flight, and some node waits in `receive`: a durable run waits for a
        message sent from outside, up to the shortest timeout of those receives (not at all when none has one).
        What came, or that nothing did, is a journaled step: a resume and a replay decide the same, with no
        outside call. True when a message was delivered (the run goes on), False to fire a timeout or report a
        deadlock as a run without outside messages does."""
        org = self.org
        machine = org.machine
        state = org.state
        effects = machine.services.effects
        receiving = [task for task in state.tasks if task.status == "receiving"]
        if effects is None or machine.place is not None or not receiving:
            return False
        first = org.mail.next_timeout()
        seconds = state.receiving[str(first.id)]["timeout"] if first is not None else 0.0
        main = next((task for task in state.tasks if task.kind == "main"), None)
        root = main.frames[0] if main is not None and main.frames else receiving[0].frames[0]
        where = receiving[0].frames[-1]
        step = EffectStep(machine.next_effect_seq(), "message", OUTSIDE_STEP, machine.effect_node(root.node),
                          where.code.span_at(where.pc), [], {}, state.steps)
        inbound = machine.services.inbound
        budget = machine.budget
        reused, decision = effects.begin(step)
        if not reused:
            left = None if budget.max_seconds is None else max(budget.max_seconds - machine.seconds_used(), 0.0)
            decision = inbound.wait(seconds if left is None else min(seconds, left)) if inbound is not None else None
            if decision is None and left is not None and left < seconds:
                state.effect_seq -= 1  # not journaled: a resume with more time takes this step number again
                machine.suspend()
                raise budget_exceeded("seconds", budget.max_seconds, machine.seconds_used(), step.span)
            effects.end(step, decision, None)
        if decision is None:
            return False
        if inbound is not None:
            inbound.done(decision["id"])
        self._deliver(root, decision)
        return True

    def _deliver(self, root: Frame, outside: dict[str, Any]) -> None:
        """Deliver a message from outside, as `human`: to node `to`, else to the route of its topic, else to the
        run's main node. One that cannot be delivered stays in the message log, undelivered, with the reason."""
        org = self.org
        to, topic, body = outside.get("to"), outside.get("topic"), outside.get("body")
        if outside.get("refused"):  # a message the run cannot take (durable/inbound.py says why)
            self._undelivered(root, to or root.node, body, topic or "message", outside["refused"])
            return
        if to is None and topic is not None and org.routing.table().get(topic) is not None:
            try:
                org.routing.route_message(root, topic, body, topic, sender=HUMAN)
            except PipeRuntimeError as err:
                self._undelivered(root, topic, body, topic, err.message)
            return
        name = to or root.node
        target = next((task for task in org.state.tasks if task.node == name and task.status in LIVE), None)
        if target is None:
            self._undelivered(root, name, body, topic or "message", f"no live node {name}")
            return
        org.mail.deliver(root, target, body, topic or "message", sender=HUMAN)

    def _undelivered(self, root: Frame, to: str, body: Any, topic: str, reason: str) -> None:
        message = self.org.mail.new_message(root, to, body, topic, sender=HUMAN)
        message["undelivered"] = reason
        if events.MessageSent in self.org.machine.observer.hears:
            self.org.machine.observer.on(events.MessageSent(state=self.org.state, message=message))
