"""litellm's model map (prices and context windows by model name), read from its JSON file without importing litellm."""

from __future__ import annotations

import importlib.util
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

# The file litellm itself reads when LITELLM_LOCAL_MODEL_COST_MAP is set (as this package always sets it).
MAP_FILE = "model_prices_and_context_window_backup.json"


@lru_cache(maxsize=1)
def model_map() -> dict[str, dict[str, Any]]:
    """Every model litellm knows, by name ({} when litellm is not installed or its file cannot be read).

    Reading the file takes tens of milliseconds; importing litellm to get the same table takes seconds."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.origin:
        return {}
    try:
        data = json.loads((Path(spec.origin).parent / MAP_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {name: info for name, info in data.items() if isinstance(info, dict)}


def model_info(model_name: str) -> dict[str, Any] | None:
    """The map's entry for `model_name` (`provider/model` or the bare model name), or None."""
    table = model_map()
    for key in (model_name, model_name.split("/")[-1]):
        info = table.get(key)
        if info:
            return info
    return None


def call_cost(model_name: str, prompt_tokens: int, completion_tokens: int) -> float:
    """USD for one call at the map's per-token prices; 0.0 for a model without a price (a local one)."""
    info = model_info(model_name) or {}
    try:
        return (prompt_tokens * float(info.get("input_cost_per_token") or 0.0)
                + completion_tokens * float(info.get("output_cost_per_token") or 0.0))
    except (TypeError, ValueError):
        return 0.0
