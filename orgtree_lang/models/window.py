"""A model's context window and where the figure came from: its spec, the settings, litellm's map, or a guess."""

from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from orgtree_lang.models.backends import is_offline

DEFAULT_CONTEXT_WINDOW = 8192
MODEL_MAP_FILE = "model_prices_and_context_window_backup.json"
# `NAME:TOKENS` spells a window; below this a digits-only tag is part of the name (`ollama/qwen:7`), not a window.
MIN_SPELLED = 256
_SPELLED = re.compile(r"^(?P<name>.+):(?P<tokens>\d+)$")

_overrides: dict[str, int] = {}


@dataclass(frozen=True)
class Window:
    """`tokens` of input a model takes, and `source`: "spec" (NAME:TOKENS), "configured" ([model] context_window or
    --context-window), "model map" (litellm's), "offline" (scripted and replayed models) or "guess"."""

    tokens: int
    source: str

    @property
    def guessed(self) -> bool:
        return self.source == "guess"


def split_spec(spec: str) -> tuple[str, int | None]:
    """`("openai/llama3", 131072)` for "openai/llama3:131072"; the spec and None when it spells no window."""
    spelled = _SPELLED.match(spec)
    if spelled and int(spelled["tokens"]) >= MIN_SPELLED:
        return spelled["name"], int(spelled["tokens"])
    return spec, None


def set_context_window(model_name: str, tokens: int) -> None:
    """Override the context window of `model_name` for this process (embedding; a run configures it instead)."""
    _overrides[model_name] = tokens


@lru_cache(maxsize=1)
def model_map() -> dict:
    """litellm's bundled model map, read from its JSON file without importing litellm ({} if absent)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.origin:
        return {}
    path = Path(spec.origin).parent / MODEL_MAP_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _configured(model: object) -> int | None:
    """The window a run configured on `model` or on a model it wraps (`inner` of metered and recorded models, `model`
    of an agent's seat)."""
    for _ in range(8):
        fields = getattr(model, "__dict__", None)
        if not isinstance(fields, dict):
            return None
        tokens = fields.get("context_window")
        if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0:
            return tokens
        model = fields.get("inner", fields.get("model"))
    return None


def window_of(model: object) -> Window:
    """The window of a Model or a model spec: spelled (`NAME:TOKENS`), configured on the model, overridden,
    litellm's model map, the offline default for scripted and replayed models, else a guess of 8,192 tokens."""
    name = model if isinstance(model, str) else getattr(model, "name", "")
    bare, spelled = split_spec(name or "")
    if spelled is not None:
        return Window(spelled, "spec")
    if not isinstance(model, str):
        configured = _configured(model)
        if configured is not None:
            return Window(configured, "configured")
    if bare in _overrides:
        return Window(_overrides[bare], "configured")
    table = model_map()
    for key in (bare, bare.split("/")[-1]):
        info = table.get(key)
        if isinstance(info, dict):
            size = info.get("max_input_tokens") or info.get("max_tokens")
            if isinstance(size, int) and size > 0:
                return Window(size, "model map")
    if not bare or is_offline(bare):
        return Window(DEFAULT_CONTEXT_WINDOW, "offline")
    return Window(DEFAULT_CONTEXT_WINDOW, "guess")


def guess_notice(spec: str, role: str) -> str:
    """What `pipe run` says once when the window of a live model is a guess."""
    return (f"note: the context window of the {role} model {spec!r} is not known (litellm's model map does not list "
            f"it); prompts are sized for {DEFAULT_CONTEXT_WINDOW:,} tokens. Say how many it takes with "
            f"--context-window TOKENS, `[model] context_window = TOKENS` in orgtree.toml, or the spec "
            f"`{spec}:TOKENS`")
