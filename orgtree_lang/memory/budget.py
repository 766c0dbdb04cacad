"""A model's token budget for a view: its context window (litellm's bundled map, read as JSON) times a share."""

from __future__ import annotations

from dataclasses import dataclass

from orgtree_lang.models import window as models_window
from orgtree_lang.runtime.errors import UsageError

# Below this a budget cannot hold a useful summary, let alone a piece of text with its node label.
MIN_BUDGET = 64


class BudgetError(UsageError, ValueError):
    """A context window cannot be found, or is too small for any view."""


def window_of(model: object) -> int:
    """The input context window of a Model or model spec (models/window.py): spelled `name:tokens`, configured,
    or litellm's model map; scripted and replayed models get the default; any other unknown name is a BudgetError."""
    window = models_window.window_of(model)
    if window.guessed:
        name = model if isinstance(model, str) else getattr(model, "name", "")
        raise BudgetError(f"the context window of model {name!r} is not in litellm's model map; "
                          f"give it as `{name}:TOKENS` (e.g. `{name}:32000`) or pass context_window=")
    return window.tokens


def model_name_of(model: object) -> str:
    """The name of a Model object or a model spec string, without a `:TOKENS` suffix."""
    name = model if isinstance(model, str) else getattr(model, "name", None)
    if not isinstance(name, str) or not name:
        raise BudgetError(f"expected a model name (e.g. 'gpt-4o' or 'gpt-4o:128000') or a Model, "
                          f"got {type(model).__name__}")
    return models_window.split_spec(name)[0]


@dataclass(frozen=True)
class Budget:
    """How many tokens a view may use: `share` of `window`, counted with `model`'s tokenizer."""

    model: str
    window: int
    share: float

    @property
    def tokens(self) -> int:
        return int(self.window * self.share)

    @classmethod
    def for_model(cls, model: object, share: float = 0.25, context_window: int | None = None) -> Budget:
        if not 0 < share <= 1:
            raise BudgetError(f"share must be above 0 and at most 1 (a fraction of the window), got {share}")
        window = context_window if context_window is not None else window_of(model)
        budget = cls(model_name_of(model), int(window), share)
        if budget.tokens < MIN_BUDGET:
            raise BudgetError(f"a context window of {window} tokens at share {share} leaves {budget.tokens} tokens, "
                              f"smaller than the smallest piece a view can hold ({MIN_BUDGET} tokens); "
                              f"use a larger window or share")
        return budget
