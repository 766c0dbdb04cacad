"""Offline token counting (tiktoken with litellm's bundled encodings) and the context window a prompt is sized for."""

from __future__ import annotations

import importlib.util
import os
from functools import lru_cache
from pathlib import Path

from orgtree_lang.models.window import DEFAULT_CONTEXT_WINDOW, set_context_window, window_of

__all__ = ["DEFAULT_CONTEXT_WINDOW", "context_window", "count_tokens", "encoding_name", "set_context_window",
           "tiktoken_encoding"]

# Encodings litellm ships in its tokenizers folder; any other would be downloaded, so it is never asked for.
OFFLINE_ENCODINGS = ("o200k_base", "cl100k_base", "p50k_base")
DEFAULT_ENCODING = "o200k_base"

def litellm_tokenizers_dir() -> Path | None:
    """The `litellm_core_utils/tokenizers` folder of the installed litellm, found without importing litellm."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.origin:
        return None
    folder = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
    return folder if folder.is_dir() else None


def _bare(model_name: str) -> str:
    return model_name.split("/")[-1]


@lru_cache(maxsize=None)
def _encoding(model_name: str):
    """The tiktoken encoding for `model_name`, or None when tiktoken cannot load offline."""
    folder = os.environ.get("CUSTOM_TIKTOKEN_CACHE_DIR") or litellm_tokenizers_dir()
    if folder is not None:
        os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    try:
        import tiktoken

        try:
            name = tiktoken.encoding_name_for_model(_bare(model_name))
        except KeyError:
            name = DEFAULT_ENCODING
        if name not in OFFLINE_ENCODINGS:
            name = DEFAULT_ENCODING
        return tiktoken.get_encoding(name)
    except Exception:  # no tiktoken, or its files cannot be read: the caller approximates
        return None


def encoding_name(model_name: str = "gpt-4o") -> str | None:
    """The tiktoken encoding used for `model_name` ("o200k_base", ...), or None when approximating."""
    encoding = _encoding(model_name)
    return encoding.name if encoding is not None else None


def count_tokens(text: str, model_name: str = "gpt-4o") -> int:
    """Tokens in `text` for `model_name`, counted offline with tiktoken.

    Models tiktoken does not know (anthropic/..., ollama/...) are counted with o200k_base, a close
    estimate. Only if tiktoken cannot load at all is the count approximated as len(text) / 4 (rounded up).
    """
    encoding = _encoding(model_name)
    if encoding is None:
        return (len(text) + 3) // 4
    return len(encoding.encode(text, disallowed_special=()))


def context_window(model: object, default: int = DEFAULT_CONTEXT_WINDOW) -> int:
    """The input context window of a Model or model spec (models/window.py), `default` when it is only a guess."""
    window = window_of(model)
    return default if window.guessed or window.source == "offline" else window.tokens


def tiktoken_encoding(model_name: str = "gpt-4o"):
    """The tiktoken Encoding `count_tokens` uses for `model_name`, or None when it approximates."""
    return _encoding(model_name)
