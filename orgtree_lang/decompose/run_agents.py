"""The agents of a run's organization outside any block: a model in, the route a `send` with no known topic means out
(org/routing.py asks, journals and meters it), one repair for an answer that names no route, then an error."""

from __future__ import annotations

import functools
import uuid
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

    def __init__(self, model: Callable[[], Any]) -> None:
        self._model = model

    @classmethod
    def for_run(cls, models, config) -> RunAgents | None:
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

            return cls(named)
        if models is None or not models.configured:
            return None
        return cls(models.author)

    def pick_route(self, topic: str, body: str, routes: list[tuple[str, str]]) -> dict[str, Any]:
        """The route (`topic`, or None for none) a message to unknown `topic` means, with the tokens and cost spent:
        {"topic", "why", "tokens", "cost", "model"}. A PipeRuntimeError (kind `decision`) after one repair."""
        from orgtree_lang.models.base import Message, ModelError

        model = self._model()
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
