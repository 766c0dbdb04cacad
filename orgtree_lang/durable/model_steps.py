"""Model calls as journaled steps: a durable run asks each question once; resume and replay reuse the answer."""

from __future__ import annotations

from typing import Any, Callable

from orgtree_lang.models.base import Completion, Message, Usage, parse_structured


def journaled_calls(block) -> Callable[..., Completion] | None:
    """A `call(model, messages, schema, conversation_id)` that goes through the journal of the run resolving
    `block` (a vm.blocks.BlockContext), or None when the run is not durable. A model error is journaled as a
    failed step and raised again as one."""
    effects = block.effects
    if effects is None:
        return None

    def call(model, messages: list[Message], schema: type | None, conversation_id: str | None) -> Completion:
        step = block.effect_step("model", model.name, [m.to_dict() for m in messages],
                                 {"schema": schema.__name__ if schema else None})

        def ask(_key: str) -> dict[str, Any]:
            # The run lock is let go while the model answers, so that concurrent blocks' calls overlap.
            completion = block.spend.away(lambda: model.complete(messages, schema=schema,
                                                                 conversation_id=conversation_id))
            return {"text": completion.text, "usage": completion.usage.to_dict(), "model": completion.model,
                    "conversation_id": completion.conversation_id, "scripted": completion.scripted}

        answer = effects.perform(step, ask)
        completion = Completion(answer["text"], Usage(**answer["usage"]), answer["model"],
                                conversation_id=conversation_id or answer.get("conversation_id"),
                                scripted=answer.get("scripted", False))
        if schema is not None:
            completion.parsed = parse_structured(completion.text, schema, model.name)
        return completion

    return call
