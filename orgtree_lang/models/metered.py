"""A model whose calls count against the run tree's budgets, are charged to an org tree node, and may be journaled."""

from __future__ import annotations

from orgtree_lang.models.base import Completion, Message, Model


class MeteredModel(Model):
    """Wraps `inner`: before each call the tree's budget is checked, after it the usage is charged.

    `what` names the work in budget errors ("the reviewer's round for block `rank`"); `node` is the org tree
    node whose own tokens and cost the call adds to."""

    def __init__(self, inner: Model, *, meter, budget, what: str, recorder=None, node: str | None = None,
                 journal=None) -> None:
        self.inner = inner
        self.name = inner.name
        self.meter = meter
        self.budget = budget
        self.what = what
        self.recorder = recorder
        self.node = node
        self.journal = journal  # durable.model_steps.journaled_calls(...): calls become journaled steps

    def complete(self, messages: list[Message], *, schema: type | None = None,
                 conversation_id: str | None = None) -> Completion:
        what = f"a call of {self.name} for {self.what}"
        self.meter.check_model(self.budget, what)
        if self.journal is not None:
            completion = self.journal(self.inner, messages, schema, conversation_id)
        else:
            completion = self.inner.complete(messages, schema=schema, conversation_id=conversation_id)
        tokens = completion.usage.prompt_tokens + completion.usage.completion_tokens
        if self.recorder is not None and self.node is not None:
            self.recorder.annotate(self.node, tokens=tokens, cost=completion.usage.cost)
        self.meter.charge_model(self.budget, tokens, completion.usage.cost, what)
        return completion

    def _complete(self, messages, *, schema, conversation_id):  # pragma: no cover - complete() is overridden
        raise NotImplementedError

    def __getattr__(self, name: str):
        return getattr(self.inner, name)
