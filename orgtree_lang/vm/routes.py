"""Sends to a string: a route's topic reaches the live node of its pipeline (started if there is none), and
"human" leaves a note in the workspace's inbox."""

from __future__ import annotations

from typing import Any

from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.people import HUMAN
from orgtree_lang.runtime.routes import handler_problem
from orgtree_lang.runtime.values import display
from orgtree_lang.vm.blocks import RELOAD
from orgtree_lang.vm.calls import bind_arguments
from orgtree_lang.vm.effects import EffectStep
from orgtree_lang.vm.handles import start_node
from orgtree_lang.vm.messages import _mailbox_key, deliver, message_record, new_message
from orgtree_lang.vm.scheduler import enter_tasks
from orgtree_lang.vm.tasks import LIVE, Task


def route_table(m) -> dict[str, str | None]:
    """Topic -> pipeline: the module's `route` lines, with orgtree.toml's `[org] routes` winning."""
    return {**m.program.routes, **m.services.routes}


def route_message(m, frame, topic: str, body: Any, label: str | None, sender: str | None = None) -> int | None:
    """Send to the node of route `topic`: its live node's mailbox, or a new node started with the message."""
    state = m.state
    routes = route_table(m)
    pipeline = routes.get(topic)
    if pipeline is None:
        known = ", ".join(f'"{name}"' for name in sorted(routes)) or "none"
        if topic in routes:
            raise PipeRuntimeError(f'route "{topic}" is declared without a pipeline, and orgtree.toml names none for '
                                   f"it (known routes: {known})", kind="send",
                                   hint=f'add `{topic} = "some_pipeline"` under [org.routes] in orgtree.toml')
        raise PipeRuntimeError(f'cannot send to "{topic}": no route for topic "{topic}" (known routes: {known})',
                               kind="send", hint=f'declare `route "{topic}" -> some_pipeline` at the top level of '
                                                 'the module, or name it in orgtree.toml\'s [org] routes')
    live = next((task for task in state.tasks if task.route == topic and task.status in LIVE), None)
    if live is not None:
        deliver(m, frame, live, body, label or topic, sender)
        return None
    message = new_message(m, frame, "", body, label or topic, sender)
    _start_route_node(m, topic, pipeline, message)
    return RELOAD  # the loop now has tasks: it recomputes where the scheduler's turns stop it


def _start_route_node(m, topic: str, pipeline: str, message: dict[str, Any]) -> Task:
    """A new node of route `topic`, under the run's main node, started with `message` as its first argument."""
    state = m.state
    code = m.program.pipelines.get(pipeline)
    if code is None:
        raise PipeRuntimeError(f'route "{topic}" names pipeline `{pipeline}`, which this program does not have',
                               kind="send", hint="fix the route in orgtree.toml's [org] routes, or add the pipeline")
    problem = handler_problem([(p.name, p.type, p.has_default) for p in code.params])
    if problem is not None:
        raise PipeRuntimeError(f'route "{topic}" -> {pipeline}: {problem}', kind="send",
                               hint=f"a route's pipeline is started with the message: `pipeline {pipeline}(m: "
                                    "Message) -> ...`")
    main = enter_tasks(m) if not state.tasks else next(task for task in state.tasks if task.kind == "main")
    root = main.frames[0]
    message["received"] = float(state.steps)
    local_values = bind_arguments(code, [message_record(message)], {})
    task = start_node(m, root, code, local_values, main.id, f'route "{topic}" {pipeline}#{{n}}', route=topic)
    message["to"] = task.node
    m.observer.message_sent(state, message)
    m.observer.message_received(state, message)
    return task


def route_node_ended(m, task: Task) -> None:
    """A route's node returned or failed with messages left in its mailbox: the oldest starts the next node of
    the route, which finds the others in its mailbox. A cancelled node's messages stay undelivered."""
    state = m.state
    box = state.mailboxes.pop(_mailbox_key(task), None)
    if not box:
        return
    main = next((other for other in state.tasks if other.kind == "main"), None)
    pipeline = route_table(m).get(task.route)
    if task.status == "cancelled" or main is None or main.status not in LIVE or pipeline is None:
        state.mailboxes[_mailbox_key(task)] = box  # left queued, as `pipe messages` shows them
        return
    first = state.messages[box[0] - 1]
    successor = _start_route_node(m, task.route, pipeline, first)
    if box[1:]:
        state.mailboxes[_mailbox_key(successor)] = box[1:]
        for message_id in box[1:]:
            state.messages[message_id - 1]["to"] = successor.node


def send_note(m, frame, body: Any, topic: str | None) -> None:
    """`send "human", value`: a note in `pipe inbox` that needs no answer. In a durable run it is a journaled
    step, so a resume or a replay does not post it again."""
    state = m.state
    message = new_message(m, frame, HUMAN, body, topic or "note")
    message["received"] = float(state.steps)
    m.observer.message_sent(state, message)
    span = frame.code.span_at(frame.pc - 1)
    node = m.effect_node(frame.node)
    note = {"text": display(body), "topic": message["topic"], "node": node, "file": span.file, "line": span.line,
            "message": message["id"]}
    notify = m.services.notify
    effects = m.services.effects
    if effects is None:
        if notify is not None:
            notify(note, f"{state.run_id}:m{message['id']}")
        return
    step = EffectStep(m.next_effect_seq(), HUMAN, f"{HUMAN}.note", node, span, [note["text"], note["topic"]], {},
                      state.steps)
    effects.perform(step, lambda key: notify(note, key) if notify is not None else None)
