"""Choosing models: a spec string to a `Model`, and the spec from --model, PIPE_MODEL or orgtree.toml."""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from orgtree_lang.models.backends import backend_of
from orgtree_lang.models.base import Model, ModelError
from orgtree_lang.runtime.config import ConfigError, config_section


def model_from_spec(spec: str, *, role: str = "author", **kw: Any) -> Model:
    """A spec of a backend in models/backends.py (`scripted:FILE`, `replay:FILE`), an `openai/NAME` at an
    `api_base` (OpenAIHTTPModel), or any other litellm model name (keyword arguments go to the model class)."""
    spec = spec.strip()
    if not spec:
        raise ModelError("no model named", "config", "pass --model, set PIPE_MODEL, or add [model] name to orgtree.toml")
    named = backend_of(spec)
    if named is not None:
        backend, argument = named
        model_class = getattr(importlib.import_module(backend.module), backend.model_class)
        return model_class.from_spec(argument, role=role)
    from orgtree_lang.models.openai_http import OpenAIHTTPModel, speaks_openai_http

    if speaks_openai_http(spec, kw.get("api_base")):
        return OpenAIHTTPModel(spec, **kw)  # plain HTTP: no litellm import, seconds off every run
    from orgtree_lang.models.litellm_backend import LiteLLMModel

    return LiteLLMModel(spec, **kw)


def _config_model(config_path: Path) -> dict[str, Any]:
    try:
        return config_section("model", config_path, types={"name": str, "review": str, "timeout": (int, float)})
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
