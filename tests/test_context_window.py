"""A model's context window: spelled in its spec, configured ([model] context_window, --context-window), litellm's
map, or a guess that `pipe run` says out loud; prompts are sized to it. Against a real OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chat_server import ChatServer, is_review
from decompose_testing import NO_CONCERNS
from durable_testing import pipe

from orgtree_lang.models.base import ModelError
from orgtree_lang.models.roles import RunModels
from orgtree_lang.models.select import model_from_spec, resolve_context_window
from orgtree_lang.models.tokens import context_window, count_tokens
from orgtree_lang.models.window import DEFAULT_CONTEXT_WINDOW, split_spec, window_of

PROGRAM = '''pipeline main(text: str) -> int:
    ambiguous measure(text: str) -> n: int:
        """The number of characters of the text."""
    return n
'''
MODULE = "```pipe\npipeline main(text: str) -> int:\n    return len(text)\n```"
# About 18,000 tokens of words no summary can shorten: more than a guessed window of 8,192 holds.
TEXT = " ".join(f"w{i * 7919 % 100003}" for i in range(6_000))


class LocalModelServer:
    """An OpenAI-compatible /v1/chat/completions on 127.0.0.1 (a llama.cpp or vLLM server stands in): it writes
    MODULE for an author, accepts every review, and keeps each request's messages."""

    def __init__(self) -> None:
        self.requests: list[list[dict]] = []
        self.chat = ChatServer(self.answer)
        self.base = self.chat.base

    def answer(self, body: dict) -> str:
        self.requests.append(body["messages"])
        return NO_CONCERNS if is_review(body) else MODULE

    def author_prompt_tokens(self) -> int:
        """Tokens of the largest last message of a request that is not a review (the one with the input's view in it:
        the context tree's summary requests go out in parallel, so which comes first is a race)."""
        return max(count_tokens(m[-1]["content"]) for m in self.requests
                   if not m[0]["content"].startswith("You are an independent reviewer"))

    def close(self) -> None:
        self.chat.close()


@pytest.fixture
def local_server(monkeypatch):
    # A local server checks no key, and its users set none: the run must not ask for one.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server = LocalModelServer()
    yield server
    server.close()


def _workspace(tmp_path: Path, config: str = "") -> Path:
    (tmp_path / "measure.pipe").write_text(PROGRAM, encoding="utf-8")
    (tmp_path / "inputs.json").write_text(json.dumps({"text": TEXT}), encoding="utf-8")
    if config:
        (tmp_path / "orgtree.toml").write_text(config, encoding="utf-8")
    return tmp_path


def _run(tmp_path: Path, server: LocalModelServer, *flags: str, model: str = "openai/local-llm"):
    return pipe("run", "measure.pipe", "--inputs", "inputs.json", "--model", model, "--api-base", server.base,
                *flags, cwd=tmp_path)


def test_a_local_model_of_unknown_window_is_sized_for_a_guess_and_pipe_run_says_so(tmp_path, local_server):
    result = _run(_workspace(tmp_path), local_server)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == str(len(TEXT))
    notes = [line for line in result.stderr.splitlines() if "context window" in line]
    assert len(notes) == 1, result.stderr  # once, though the reviewer is the same model
    assert "'openai/local-llm'" in notes[0] and "--context-window" in notes[0] and "[model] context_window" in notes[0]
    assert local_server.author_prompt_tokens() < DEFAULT_CONTEXT_WINDOW  # the big input was cut to fit the guess


@pytest.mark.parametrize("how", ["flag", "spec", "config"])
def test_a_stated_window_sizes_the_prompt_and_silences_the_guess(tmp_path, local_server, how):
    config = "[model]\ncontext_window = 131072\n" if how == "config" else ""
    flags = ("--context-window", "131072") if how == "flag" else ()
    model = "openai/local-llm:131072" if how == "spec" else "openai/local-llm"
    result = _run(_workspace(tmp_path, config), local_server, *flags, model=model)
    assert result.returncode == 0, result.stderr
    assert "context window" not in result.stderr
    # The input's view is a share of the stated window: the request is bigger than any a guessed window allows.
    assert local_server.author_prompt_tokens() > DEFAULT_CONTEXT_WINDOW
    bodies = [m for m in local_server.requests]
    assert all("local-llm:131072" not in json.dumps(m) for m in bodies)  # the provider is asked for the bare name


def test_a_bad_window_setting_names_where_it_came_from(tmp_path, local_server):
    result = _run(_workspace(tmp_path, "[model]\ncontext_window = 12\n"), local_server)
    assert result.returncode == 2
    assert "[model] context_window must be a whole number of tokens, at least 1024, got 12" in result.stderr
    assert local_server.requests == []
    result = _run(_workspace(tmp_path, "[model]\ncontext_window = \"big\"\n"), local_server)
    assert result.returncode == 2 and "[model] context_window must be a whole number, got 'big'" in result.stderr


def test_where_a_window_comes_from():
    assert split_spec("openai/llama3:131072") == ("openai/llama3", 131072)
    assert split_spec("ollama/qwen:7") == ("ollama/qwen:7", None)  # a tag, not a window
    assert split_spec("ollama/llama3:8b") == ("ollama/llama3:8b", None)
    assert window_of("openai/llama3:131072").source == "spec"
    assert window_of("gpt-4o").source == "model map" and window_of("gpt-4o").tokens >= 100_000
    assert window_of("openai/my-local-llm").guessed
    assert window_of("scripted:/nowhere.json").source == "offline"
    model = model_from_spec("openai/my-local-llm", context_window=65536)
    assert window_of(model).tokens == 65536 and context_window(model) == 65536
    assert model_from_spec("openai/my-local-llm:32768", context_window=65536).context_window == 32768  # spelled wins
    assert context_window("openai/my-local-llm") == DEFAULT_CONTEXT_WINDOW


def test_the_reviewer_window_defaults_to_the_authors_only_for_the_same_model(tmp_path):
    config = tmp_path / "orgtree.toml"
    config.write_text("[model]\ncontext_window = 65536\n", encoding="utf-8")
    same = RunModels.from_config("openai/a", config_path=config)
    assert same.windows == {"author": 65536, "reviewer": 65536}
    other = RunModels.from_config("openai/a", "openai/b", config_path=config)
    assert other.windows == {"author": 65536}
    both = RunModels.from_config("openai/a", "openai/b", review_context_window=4096, config_path=config)
    assert both.windows == {"author": 65536, "reviewer": 4096}
    with pytest.raises(ModelError, match="PIPE_CONTEXT_WINDOW must be a whole number of tokens, got 'lots'"):
        resolve_context_window(None, {"PIPE_CONTEXT_WINDOW": "lots"}, config)


def test_a_view_is_sized_by_the_window_configured_on_the_model_not_only_by_its_name(tmp_path):
    # The research agent's reads (net/research_skills.py) and the context tree take the Model: a local model's
    # configured window counts there too; its bare name alone is not in litellm's map.
    from orgtree_lang.memory.budget import BudgetError
    from orgtree_lang.memory.memory import Memory

    model = model_from_spec("openai/my-local-llm", context_window=32768)
    with Memory(tmp_path, vectors=False) as memory:
        document = memory.add("a page about the moons of Jupiter. " * 50, name="page")
        assert memory.fit([document], model, 0.25).text
        with pytest.raises(BudgetError, match="my-local-llm:TOKENS"):
            memory.fit([document], model.name, 0.25)
