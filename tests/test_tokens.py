"""Token counting works offline with litellm's bundled encodings and agrees with tiktoken itself."""

from __future__ import annotations

import os
import subprocess
import sys

from orgtree_lang.models.tokens import (count_tokens, context_window, encoding_name, litellm_tokenizers_dir,
                                        set_context_window)

SENTENCE = "The quick brown fox jumps over the lazy dog, 1234 times; naïve café."


def _tiktoken_count(encoding: str) -> int:
    os.environ["TIKTOKEN_CACHE_DIR"] = str(litellm_tokenizers_dir())
    import tiktoken

    return len(tiktoken.get_encoding(encoding).encode(SENTENCE))


def test_counts_match_tiktoken_for_o200k_and_cl100k():
    assert encoding_name("gpt-4o") == "o200k_base"
    assert encoding_name("openai/gpt-4") == "cl100k_base"
    assert count_tokens(SENTENCE, "gpt-4o") == _tiktoken_count("o200k_base")
    assert count_tokens(SENTENCE, "openai/gpt-4") == _tiktoken_count("cl100k_base")
    assert count_tokens("The quick brown fox jumps over the lazy dog.", "gpt-4") == 10
    assert count_tokens("") == 0


def test_unknown_models_use_o200k():
    assert encoding_name("anthropic/claude-x") == "o200k_base"
    assert count_tokens(SENTENCE, "ollama/llama3") == _tiktoken_count("o200k_base")


def test_counting_needs_no_network_and_does_not_import_litellm():
    # A fresh interpreter with an empty cache variable and a socket that refuses to connect.
    script = (
        "import socket, sys\n"
        "def refuse(*a, **k): raise OSError('network disabled in this test')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "from orgtree_lang.models.tokens import count_tokens, encoding_name\n"
        "print(encoding_name('gpt-4o'), count_tokens('hello world', 'gpt-4o'), 'litellm' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if "TIKTOKEN" not in k}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["o200k_base", "2", "False"]


def test_context_window_from_litellm_map_default_and_override():
    assert context_window("gpt-4o") >= 128000
    assert context_window("scripted:x.yaml") == 8192
    assert context_window("openai/no-such-model-anywhere", default=4096) == 4096
    set_context_window("ollama/tiny", 2048)
    assert context_window("ollama/tiny") == 2048
