"""Choosing models: a spec string to a `Model`, and the spec from --model, PIPE_MODEL or orgtree.toml."""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from orgtree_lang.models.backends import backend_of
from orgtree_lang.models.base import Model, ModelError
from orgtree_lang.models.window import split_spec
from orgtree_lang.runtime.config import ConfigError, config_section


def model_from_spec(spec: str, *, role: str = "author", context_window: int | None = None, **kw: Any) -> Model:
    """A spec of a backend in models/backends.py (`scripted:FILE`, `replay:FILE`), an `openai/NAME` at an `api_base`
    (OpenAIHTTPModel), or any other litellm model name (keyword arguments go to the model class). `NAME:TOKENS`
    (e.g. `openai/llama3:131072`) says the model's context window, as `context_window` does; the spelled one wins."""
    spec, spelled = split_spec(spec.strip())
    if not spec:
        raise ModelError("no model named", "config", "pass --model, set PIPE_MODEL, or add [model] name to orgtree.toml")
    named = backend_of(spec)
    if named is not None:
        backend, argument = named
        model_class = getattr(importlib.import_module(backend.module), backend.model_class)
        model = model_class.from_spec(argument, role=role)
    else:
        from orgtree_lang.models.openai_http import OpenAIHTTPModel, speaks_openai_http

        if speaks_openai_http(spec, kw.get("api_base")):
            model = OpenAIHTTPModel(spec, **kw)  # plain HTTP: no litellm import, seconds off every run
        else:
            from orgtree_lang.models.litellm_backend import LiteLLMModel

            model = LiteLLMModel(spec, **kw)
    if spelled or context_window:
        model.context_window = spelled or context_window
    return model


def _config_model(config_path: Path) -> dict[str, Any]:
    try:
        return config_section("model", config_path, types={"name": str, "review": str, "timeout": (int, float),
                                                           "context_window": int, "review_context_window": int})
    except ConfigError as exc:
        raise ModelError(str(exc), "config") from None


def resolve_model_spec(cli_value: str | None = None, env: Mapping[str, str] | None = None,
                       config_path: Path = Path("orgtree.toml")) -> str | None:
    """The author model: --model, else PIPE_MODEL, else orgtree.toml `[model] name`, else None."""
    env = os.environ if env is None else env
    return cli_value or env.get("PIPE_MODEL") or _config_model(config_path).get("name") or None


def resolve_review_model_spec(cli_value: str | None = None, author_spec: str | None = None,
                              env: Mapping[str, str] | None = None,
                              config_path: Path = Path("orgtree.toml")) -> str | None:
    """The reviewer model: --review-model, else PIPE_REVIEW_MODEL, else `[model] review`, else the author model."""
    env = os.environ if env is None else env
    return (cli_value or env.get("PIPE_REVIEW_MODEL") or _config_model(config_path).get("review")
            or author_spec or resolve_model_spec(None, env, config_path))


DEFAULT_TIMEOUT = 120.0  # seconds; a local model on a CPU (llama.cpp) often needs more than a minute


def resolve_model_timeout(cli_value: float | None = None, env: Mapping[str, str] | None = None,
                          config_path: Path = Path("orgtree.toml")) -> float:
    """Seconds one model call may take: --model-timeout, else PIPE_MODEL_TIMEOUT, else `[model] timeout`, else 120."""
    env = os.environ if env is None else env
    if cli_value is not None:
        value, source = cli_value, "--model-timeout"
    elif env.get("PIPE_MODEL_TIMEOUT"):
        source = "PIPE_MODEL_TIMEOUT"
        try:
            value = float(env["PIPE_MODEL_TIMEOUT"])
        except ValueError:
            raise ModelError(f"PIPE_MODEL_TIMEOUT must be a number of seconds, got {env['PIPE_MODEL_TIMEOUT']!r}",
                             "config") from None
    else:
        value, source = _config_model(config_path).get("timeout", DEFAULT_TIMEOUT), "[model] timeout"
    if isinstance(value, bool) or not value > 0:
        raise ModelError(f"{source} must be a number of seconds above 0, got {value!r}", "config")
    return float(value)


def resolve_context_window(cli_value: int | None = None, env: Mapping[str, str] | None = None,
                           config_path: Path = Path("orgtree.toml"), *, role: str = "author") -> int | None:
    """The context window a run says its `role` model takes: --context-window (--review-context-window), else
    PIPE_CONTEXT_WINDOW (PIPE_REVIEW_CONTEXT_WINDOW), else `[model] context_window` (`review_context_window`),
    else None (the spec's `:TOKENS`, litellm's map or a guess decide; models/window.py)."""
    env = os.environ if env is None else env
    flag, variable, key = (("--context-window", "PIPE_CONTEXT_WINDOW", "context_window") if role == "author" else
                           ("--review-context-window", "PIPE_REVIEW_CONTEXT_WINDOW", "review_context_window"))
    if cli_value is not None:
        value, source = cli_value, flag
    elif env.get(variable):
        source = variable
        try:
            value = int(env[variable])
        except ValueError:
            raise ModelError(f"{variable} must be a whole number of tokens, got {env[variable]!r}", "config") from None
    else:
        value, source = _config_model(config_path).get(key), f"[model] {key}"
        if value is None:
            return None
    if isinstance(value, bool) or not isinstance(value, int) or value < MIN_CONTEXT_WINDOW:
        raise ModelError(f"{source} must be a whole number of tokens, at least {MIN_CONTEXT_WINDOW}, got {value!r}",
                         "config")
    return value


MIN_CONTEXT_WINDOW = 1024  # below this no request with the language card fits
