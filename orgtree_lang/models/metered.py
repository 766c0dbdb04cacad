"""A model whose calls are checked against and charged to the run tree's budget, and may be journaled."""

from __future__ import annotations

import time

from orgtree_lang.models.base import Completion, Message, Model


class MeteredModel(Model):
    """Wraps `inner`: before each call `spend.check(what)`, after it `spend.charge(tokens, cost, what)`.

    `spend` is the run tree's: vm.budget.ModelSpend for a skill's calls, vm.budget.NodeSpend for the
    decomposer's (which also charges the ambiguous block's org tree node). `what` names the work in budget
    errors ("writing block `rank`"). `journal` (durable.model_steps.journaled_calls) makes each call a
    journaled step."""

    def __init__(self, inner: Model, *, spend, what: str, journal=None) -> None:
        self.inner = inner
        self.name = inner.name
        self.spend = spend
        self.what = what
        self.journal = journal

    def complete(self, messages: list[Message], *, schema: type | None = None,
                 conversation_id: str | None = None) -> Completion:
        what = f"a call of {self.name} for {self.what}"
        self.spend.check(what)
        started = time.time()
        try:
            if self.journal is not None:
                completion = self.journal(self.inner, messages, schema, conversation_id)
            else:
                completion = self._away(lambda: self.inner.complete(messages, schema=schema,
                                                                    conversation_id=conversation_id))
        except Exception as err:
            self.spend.ended(self.name, 0, 0, 0.0, started, err)
            raise
        usage = completion.usage
        self.spend.charge(usage.prompt_tokens + usage.completion_tokens, usage.cost, what)
        self.spend.ended(completion.model or self.name, usage.prompt_tokens, usage.completion_tokens, usage.cost,
                         started, None)
        return completion

    def _away(self, ask):
        """`ask()`, with the run lock let go meanwhile when the spend is an ambiguous block's (vm.budget.NodeSpend)."""
        away = getattr(self.spend, "away", None)
        return away(ask) if away is not None else ask()

    def _complete(self, messages, *, schema, conversation_id):  # pragma: no cover - complete() is overridden
        raise NotImplementedError

    def __getattr__(self, name: str):
        return getattr(self.inner, name)
