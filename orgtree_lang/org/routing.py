"""Sends to a string: a route's topic reaches the live node of its pipeline (started if there is none), and
"human" leaves a note in the workspace's inbox."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orgtree_lang.org.mailboxes import message_record
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.people import HUMAN
from orgtree_lang.runtime.routes import handler_problem
from orgtree_lang.runtime.values import display, display_short
from orgtree_lang.vm.calls import bind_arguments
from orgtree_lang.vm.effects import EffectStep
from orgtree_lang.vm.organization import RELOAD
from orgtree_lang.vm.state import LIVE, Frame, Task
from orgtree_lang.vm import events

if TYPE_CHECKING:
    from orgtree_lang.org.scheduler import Scheduler


class Routing:
    """The nodes of a run's routes, and the notes it leaves for people."""

    def __init__(self, org: Scheduler) -> None:
        self.org = org
        self.agents_off = False  # a send to an unknown topic found no agent to route it by meaning

    def table(self) -> dict[str, str | None]:
        """Topic -> pipeline: the module's `route` lines, with orgtree.toml's `[org] routes` winning."""
        machine = self.org.machine
        return {**machine.program.routes, **machine.services.routes}

    def route_message(self, frame: Frame, topic: str, body: Any, label: str | None,
                      sender: str | None = None) -> int | None:
        """Send to the node of route `topic`: its live node's mailbox, or a new node started with the message."""
        state = self.org.state
        routes = self.table()
        pipeline = routes.get(topic)
        if pipeline is None and topic not in routes:
            picked = self.by_meaning(frame, topic, body, routes)
            if picked is not None:
                label, topic, pipeline = label or topic, picked, routes[picked]
        if pipeline is None:
            known = ", ".join(f'"{name}"' for name in sorted(routes)) or "none"
            if topic in routes:
                raise PipeRuntimeError(f'route "{topic}" is declared without a pipeline, and orgtree.toml names none '
                                       f"for it (known routes: {known})", kind="send",
                                       hint=f'add `{topic} = "some_pipeline"` under [org.routes] in orgtree.toml')
            off = " (run-time agents are off, no model configured: with one, a send to an unknown topic is " \
                  "routed by meaning among the routes)" if self.agents_off else ""
            raise PipeRuntimeError(f'cannot send to "{topic}": no route for topic "{topic}" (known routes: {known})',
                                   kind="send", hint=f'declare `route "{topic}" -> some_pipeline` at the top level '
                                                     f"of the module, or name it in orgtree.toml's [org] routes{off}")
        live = next((task for task in state.tasks if task.route == topic and task.status in LIVE), None)
        mail = self.org.mail
        if live is not None:
            mail.deliver(frame, live, body, label or topic, sender)
            return None
        message = mail.new_message(frame, "", body, label or topic, sender)
        self._start_route_node(topic, pipeline, message)
        return RELOAD  # the loop now has tasks: it recomputes where the scheduler's turns stop it

    def by_meaning(self, frame: Frame, topic: str, body: Any, routes: dict[str, str | None]) -> str | None:
        """The declared route a message to unknown `topic` means, as the organization's agent picks it among the
        routes' pipelines by their docstrings (None: it picks none, or no agent is configured). The pick is a
        journaled step (kind `model`, name `route by meaning`), metered against the run tree's budgets and shown
        as a `decision` node under the sender; a replay takes it from the journal."""
        org = self.org
        machine = org.machine
        state = org.state
        program = machine.program
        candidates = [(name, _described(program.pipelines[pipeline]))
                      for name, pipeline in sorted(routes.items()) if pipeline in program.pipelines]
        effects = machine.services.effects
        agents = machine.services.agents
        on = agents_on(agents)
        if not candidates or (not on and effects is None):
            self.agents_off = not on
            return None
        span = frame.code.span_at(frame.pc - 1)
        shown = display_short(body, 2000)
        what = f"routing a message to `{topic}` by meaning"
        node = f"{state.run_id}/{frame.node}"
        decision = f"{node}/route#{state.steps}"

        def pick(key: str | None) -> dict[str, Any]:
            if not on:
                return {"topic": None, "off": True}  # run-time agents are off: the send fails as it always did
            machine.meter.check_model(machine.budget, what)
            return agents.pick_route(topic, shown, candidates, key)

        if effects is None:
            chosen = pick(None)
        else:
            step = EffectStep(machine.next_effect_seq(), "model", "route by meaning", machine.effect_node(frame.node),
                              span, [topic, shown, [list(c) for c in candidates]], {}, state.steps)
            chosen = effects.perform(step, pick)
        if chosen.get("off"):
            self.agents_off = True
            return None
        observer = machine.observer
        if events.DecisionStarted in observer.hears:
            observer.on(events.DecisionStarted(run_id=state.run_id, node_id=decision, parent_id=node,
                                               name=f"route `{topic}`"))
        if events.NodeAnnotated in observer.hears:
            observer.on(events.NodeAnnotated(node_id=decision, tokens=chosen["tokens"], cost=chosen["cost"]))
        machine.meter.charge_model(machine.budget, chosen["tokens"], chosen["cost"], what)
        picked = chosen["topic"]
        detail = f"to {picked}: {chosen['why']}" if picked else f"none: {chosen['why']}"
        if events.DecisionEnded in observer.hears:
            observer.on(events.DecisionEnded(node_id=decision, detail=detail, error=None))
        return picked

    def _start_route_node(self, topic: str, pipeline: str, message: dict[str, Any]) -> Task:
        """A new node of route `topic`, under the run's main node, started with `message` as its first argument."""
        org = self.org
        state = org.state
        code = org.machine.program.pipelines.get(pipeline)
        if code is None:
            raise PipeRuntimeError(f'route "{topic}" names pipeline `{pipeline}`, which this program does not have',
                                   kind="send",
                                   hint="fix the route in orgtree.toml's [org] routes, or add the pipeline")
        problem = handler_problem([(p.name, p.type, p.has_default) for p in code.params])
        if problem is not None:
            raise PipeRuntimeError(f'route "{topic}" -> {pipeline}: {problem}', kind="send",
                                   hint=f"a route's pipeline is started with the message: `pipeline {pipeline}(m: "
                                        "Message) -> ...`")
        main = org.enter_tasks() if not state.tasks else next(task for task in state.tasks if task.kind == "main")
        root = main.frames[0]
        message["received"] = float(state.steps)
        local_values = bind_arguments(code, [message_record(message)], {})
        task = org.handles.start_node(root, code, local_values, main.id, f'route "{topic}" {pipeline}#{{n}}',
                                      route=topic)
        message["to"] = task.node
        observer = org.machine.observer
        if events.MessageSent in observer.hears:
            observer.on(events.MessageSent(state=state, message=message))
        if events.MessageReceived in observer.hears:
            observer.on(events.MessageReceived(state=state, message=message))
        return task

    def node_ended(self, task: Task) -> None:
        """A route's node returned or failed with messages left in its mailbox: the oldest starts the next node of
        the route, which finds the others in its mailbox. A cancelled node's messages stay undelivered."""
        org = self.org
        mail = org.mail
        box = mail.take_box(task)
        if not box:
            return
        main = next((other for other in org.state.tasks if other.kind == "main"), None)
        pipeline = self.table().get(task.route)
        if task.status == "cancelled" or main is None or main.status not in LIVE or pipeline is None:
            mail.put_box(task, box)  # left queued, as `pipe messages` shows them
            return
        successor = self._start_route_node(task.route, pipeline, mail.message(box[0]))
        if box[1:]:
            mail.put_box(successor, box[1:], readdress=True)

    def send_note(self, frame: Frame, body: Any, topic: str | None, sender: str | None = None) -> None:
        """`send "human", value`: a note in `pipe inbox` that needs no answer. In a durable run it is a journaled
        step, so a resume or a replay does not post it again. `sender` names the node when it is not the current
        one (a block's node forwarding a message to the person)."""
        org = self.org
        machine = org.machine
        state = org.state
        message = org.mail.new_message(frame, HUMAN, body, topic or "note", sender)
        message["received"] = float(state.steps)
        if events.MessageSent in machine.observer.hears:
            machine.observer.on(events.MessageSent(state=state, message=message))
        span = frame.code.span_at(frame.pc - 1)
        node = machine.effect_node(sender or frame.node)
        note = {"text": display(body), "topic": message["topic"], "node": node, "file": span.file,
                "line": span.line, "message": message["id"]}
        notify = machine.services.notify
        effects = machine.services.effects
        if effects is None:
            if notify is not None:
                notify(note, f"{state.run_id}:m{message['id']}")
            return
        step = EffectStep(machine.next_effect_seq(), HUMAN, f"{HUMAN}.note", node, span,
                          [note["text"], note["topic"]], {}, state.steps)
        effects.perform(step, lambda key: notify(note, key) if notify is not None else None)


def agents_on(agents) -> bool:
    """Whether the organization's agents (vm.services.Services.agents) can decide: some are configured, and not off."""
    return agents is not None and getattr(agents, "on", True)


def _described(code) -> str:
    """A route's description: its pipeline's name and docstring."""
    doc = " ".join((code.doc or "").split())
    return f"pipeline {code.name}: {doc[:300] or '(no docstring)'}"
