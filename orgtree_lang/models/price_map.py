"""What a call costs at litellm's per-token prices, read from its model map file (models/window.py), not litellm."""

from __future__ import annotations

from typing import Any

from orgtree_lang.models.window import model_map


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
