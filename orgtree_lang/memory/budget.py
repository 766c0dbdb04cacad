"""A model's token budget for a view: its context window (litellm's bundled map, read as JSON) times a share."""

from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from orgtree_lang.models.backends import is_offline
from orgtree_lang.models.tokens import DEFAULT_CONTEXT_WINDOW
from orgtree_lang.runtime.errors import UsageError

MODEL_MAP_FILE = "model_prices_and_context_window_backup.json"
# Below this a budget cannot hold a useful summary, let alone a piece of text with its node label.
MIN_BUDGET = 64
_WINDOW_SUFFIX = re.compile(r"^(?P<name>.+):(?P<tokens>\d+)$")


class BudgetError(UsageError, ValueError):
    """A context window cannot be found, or is too small for any view."""


@lru_cache(maxsize=1)
def _model_map() -> dict:
    """litellm's bundled model map, read from its JSON file without importing litellm ({} if absent)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.origin:
        return {}
    path = Path(spec.origin).parent / MODEL_MAP_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def window_of(model_name: str) -> int:
    """The input context window of a model: `name:tokens` spells it out, else litellm's model map.

    Scripted and replayed models get DEFAULT_CONTEXT_WINDOW; any other unknown name is a BudgetError.
    """
    spelled = _WINDOW_SUFFIX.match(model_name)
    if spelled:
        return int(spelled["tokens"])
    table = _model_map()
    for key in (model_name, model_name.split("/")[-1]):
        info = table.get(key)
        if isinstance(info, dict):
            size = info.get("max_input_tokens") or info.get("max_tokens")
            if size:
                return int(size)
    if is_offline(model_name):
        return DEFAULT_CONTEXT_WINDOW
    raise BudgetError(f"the context window of model {model_name!r} is not in litellm's model map; "
                      f"give it as `{model_name}:TOKENS` (e.g. `{model_name}:32000`) or pass context_window=")


def model_name_of(model: object) -> str:
    """The name of a Model object or a model spec string, without a `:TOKENS` suffix."""
    name = model if isinstance(model, str) else getattr(model, "name", None)
    if not isinstance(name, str) or not name:
        raise BudgetError(f"expected a model name (e.g. 'gpt-4o' or 'gpt-4o:128000') or a Model, "
                          f"got {type(model).__name__}")
    spelled = _WINDOW_SUFFIX.match(name)
    return spelled["name"] if spelled else name


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
        raw = model if isinstance(model, str) else getattr(model, "name", "")
        window = context_window if context_window is not None else window_of(raw)
        budget = cls(model_name_of(model), int(window), share)
        if budget.tokens < MIN_BUDGET:
            raise BudgetError(f"a context window of {window} tokens at share {share} leaves {budget.tokens} tokens, "
                              f"smaller than the smallest piece a view can hold ({MIN_BUDGET} tokens); "
                              f"use a larger window or share")
        return budget
