"""The agents of a run's organization outside any block: a model in; out, the route a `send` with no known topic means
(org/routing.py) and what a message to a node that reads none means (org/node_agents.py). The org journals and meters
each answer; one repair for an answer that cannot be used, then an error."""

from __future__ import annotations

import functools
import uuid
from pathlib import Path
from typing import Any, Callable

from orgtree_lang.runtime.errors import PipeRuntimeError

SYSTEM = """You route messages in a running program. A node sent a message to the topic `{topic}`, which no route \
declares. The program's routes, each with the pipeline that handles it and what that pipeline does:
{routes}

Pick the one route whose handler is most likely to benefit from this message, or "none" when no route fits (the \
send then fails). Answer with one JSON object and nothing else: {{"topic": "<one of the topics above, or none>", \
"why": "in a sentence"}}"""

REPAIR = "Your answer cannot be used: {problem}\nAnswer again with one JSON object as your instructions say."


class RunAgents:
    """The organization's agents for one run: `model()` gives the model they ask (built when first needed)."""

    on = True

    def __init__(self, model: Callable[[], Any], workspace: Path | None = None,
                 reviewer: Callable[[], Any] | None = None) -> None:
        self._model = model
        # Where the agents take their turns and an ignored message's note goes (the scratchpad); None: nowhere.
        self.workspace = workspace
        self._reviewer = reviewer  # the insights they offer are reviewed by it; None: none are taken

    @classmethod
    def for_run(cls, models, config, workspace: Path | None = None) -> RunAgents | None:
        """The run's agents: `[org] message_agent` of `config`, else the run's author model (a models.roles.RunModels);
        None when neither is configured (run-time agents are off)."""
        from orgtree_lang.decompose.messages import MessageSettings

        spec = MessageSettings.from_config(config).message_agent
        if spec:
            from orgtree_lang.models.select import model_from_spec

            built: list[Any] = []

            def named() -> Any:
                if not built:
                    built.append(model_from_spec(spec))
                return built[0]

            return cls(named, workspace, models.reviewer if models is not None and models.configured else None)
        if models is None or not models.configured:
            return None
        return cls(models.author, workspace, models.reviewer)

    def _seated(self, model, agent: str, task: str, key: str | None):
        """`model` taking `agent`'s turn on the scratchpad around its answer (memory/turn.py). The decision is one
        journaled step, so the turn's read and note are inside it; its note is keyed by the step's key (a step run
        again after a crash writes no second note)."""
        if self.workspace is None:
            return model
        from orgtree_lang.memory.turn import agent_turns

        journal = (lambda name, execute: execute(f"{key}:{name}")) if key else None
        try:
            reviewer = self._reviewer() if self._reviewer is not None else None
        except Exception:  # noqa: BLE001 (no reviewer model can be built: the agent's insights are not taken)
            reviewer = None
        return agent_turns(model, agent, task, self.workspace, reviewer=reviewer, journal=journal)

    def pick_route(self, topic: str, body: str, routes: list[tuple[str, str]],
                   key: str | None = None) -> dict[str, Any]:
        """The route (`topic`, or None for none) a message to unknown `topic` means, with the tokens and cost spent:
        {"topic", "why", "tokens", "cost", "model"}. A PipeRuntimeError (kind `decision`) after one repair."""
        from orgtree_lang.models.base import Message, ModelError

        model = self._seated(self._model(), "message router", f"route messages sent to {topic}", key)
        listing = "\n".join(f'- "{name}": {doc}' for name, doc in routes)
        messages = [Message("system", SYSTEM.format(topic=topic, routes=listing)),
                    Message("user", f"The message sent to `{topic}`:\n{body}\n\nWhich route? One JSON object.")]
        conversation = uuid.uuid4().hex
        tokens, cost = 0, 0.0
        names = [name for name, _ in routes]
        for attempt in range(2):
            try:
                done = model.complete(messages, conversation_id=conversation)
            except ModelError as err:
                raise PipeRuntimeError(f"routing the message to `{topic}` by meaning: {err}", kind="model",
                                       hint=getattr(err, "hint", None)) from err
            tokens += done.usage.prompt_tokens + done.usage.completion_tokens
            cost += done.usage.cost
            chosen, why, problem = _checked(done.text, names, model.name)
            if problem is None:
                return {"topic": chosen, "why": why, "tokens": tokens, "cost": cost, "model": model.name}
            if attempt == 1:
                raise PipeRuntimeError(
                    f"routing the message to `{topic}` by meaning: the agent's answer cannot be used: {problem} "
                    "(after one repair)", kind="decision",
                    hint="declare the topic with `route`, or configure a more capable model for the organization's "
                         "agents with `[org] message_agent` in orgtree.toml")
            messages += [Message("assistant", done.text), Message("user", REPAIR.format(problem=problem))]
        raise AssertionError("unreachable")  # pragma: no cover

    def decide(self, view, node: str, doc: str, kinds: tuple[str, ...], key: str | None) -> dict[str, Any]:
        """What a message to `node` (a MessageView) means: one decision among `kinds`, with the tokens and cost
        spent and a line that describes it; an ignored message's note goes on the scratchpad (once per `key`)."""
        from orgtree_lang.decompose.messages import checked_decision, described
        from orgtree_lang.models.base import Message, ModelError

        model = self._seated(self._model(), f"node {node}", f"{view.block} {doc or ''}", key)
        children = "\n".join(f"- {name}: {text}" for name, text in view.children) or "- (none running)"
        messages = [Message("system", NODE_SYSTEM.format(node=node, pipeline=view.block, above=view.above,
                                                         doc=" ".join((doc or "(no docstring)").split()))),
                    Message("user", f"A message reached the node `{node}`.\n\n## The message\nfrom: {view.sender}\n"
                                    f"topic: {view.topic}\nbody: {view.body}\n\n## Your children\n{children}\n\n"
                                    f"## Where the node is\n{view.state}\n\nDecide what the message means: one "
                                    "JSON object, as your instructions say.")]
        conversation = uuid.uuid4().hex
        tokens, cost = 0, 0.0
        for attempt in range(2):
            try:
                done = model.complete(messages, conversation_id=conversation)
            except ModelError as err:
                raise PipeRuntimeError(f"the node {node} could not decide what the message from {view.sender} "
                                       f"means: {err}", kind="model", hint=getattr(err, "hint", None)) from err
            tokens += done.usage.prompt_tokens + done.usage.completion_tokens
            cost += done.usage.cost
            decision, problem = checked_decision(done.text, view, model.name, kinds)
            if problem is None:
                break
            if attempt == 1:
                raise PipeRuntimeError(
                    f"the node {node} could not decide what the message from {view.sender} means: {problem} (after "
                    "one repair)", kind="decision", catchable=False,
                    hint="give the pipeline an `on message` handler (or `receive`), or configure a more capable model "
                         "for the organization's agents with `[org] message_agent` in orgtree.toml")
            messages += [Message("assistant", done.text), Message("user", REPAIR.format(problem=problem))]
        if decision["kind"] == "ignore" and self.workspace is not None:
            self._note(f"node {node}", f"ignored a message from {view.sender} ({view.topic}): "
                                      f"{decision['note'] or 'nothing to do'}", key)
        return {**decision, "tokens": tokens, "cost": cost, "detail": described(decision)}

    def _note(self, agent: str, text: str, key: str | None) -> None:
        from orgtree_lang.memory.scratchpad import Scratchpad

        with Scratchpad.for_workspace(self.workspace) as pad:
            if key and pad.notes_by_key(key):
                return
            with pad.turn(agent) as turn:
                turn.key = key
                turn.plan(text)


NODE_SYSTEM = """You are the node `{node}` of a running program, an agent responsible for the pipeline `{pipeline}`: {doc}
Your pipeline reads no messages itself, so you decide what each message that reaches it means. Answer with exactly one of these decisions:

- "ignore": it needs nothing; say why in `note` (the note goes on the shared scratchpad).
- "answer": reply to the sender; `answer` is the text it receives as a message.
- "forward": it is above your scope: pass it to {above}.
- "route": it concerns one of your children more than you: pass it to that child, named in `child` (one of the names listed under "Your children").

Answer with one JSON object and nothing else:
{{"kind": "ignore" | "answer" | "forward" | "route", "note": "why, in a sentence", "answer": "the reply, for answer", "child": "the child's name, for route"}}"""


@functools.cache
def _route_schema() -> type:
    import pydantic

    class RouteChoice(pydantic.BaseModel):
        topic: str
        why: str = ""

    return RouteChoice


def _checked(text: str, names: list[str], model: str) -> tuple[str | None, str, str | None]:
    """(topic or None, why, problem): what an answer picks, or why it cannot be used."""
    from orgtree_lang.models.base import ModelError, parse_structured

    try:
        choice = parse_structured(text, _route_schema(), model)
    except ModelError as err:
        return None, "", str(err)
    if choice.topic == "none":
        return None, choice.why, None
    if choice.topic not in names:
        return None, "", f"`topic` must be one of {', '.join(names)} or none, got {choice.topic!r}"
    return choice.topic, choice.why, None
