"""Choosing models: a spec string to a `Model`, and the spec from --model, PIPE_MODEL or orgtree.toml."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from orgtree_lang.models.base import Model, ModelError


def model_from_spec(spec: str, *, role: str = "author", **kw: Any) -> Model:
    """`scripted:FILE`, `replay:FILE`, or any litellm model name (keyword arguments go to LiteLLMModel)."""
    spec = spec.strip()
    if not spec:
        raise ModelError("no model named", "config", "pass --model, set PIPE_MODEL, or add [model] name to orgtree.toml")
    if spec.startswith("scripted:"):
        from orgtree_lang.models.scripted import ScriptedModel

        return ScriptedModel.from_file(spec.split(":", 1)[1], role=role)
    if spec.startswith("replay:"):
        from orgtree_lang.models.cassette import CassetteModel

        return CassetteModel(spec.split(":", 1)[1])
    from orgtree_lang.models.litellm_backend import LiteLLMModel

    return LiteLLMModel(spec, **kw)


def _config_model(config_path: Path) -> dict[str, Any]:
    if not config_path.is_file():
        return {}
    try:
        data = tomllib.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ModelError(f"cannot read {config_path}: {exc}", "config") from None
    section = data.get("model", {})
    if not isinstance(section, dict):
        raise ModelError(f"{config_path}: [model] must be a table", "config")
    for key in ("name", "review"):
        if key in section and not isinstance(section[key], str):
            raise ModelError(f"{config_path}: [model] {key} must be a string", "config")
    return section


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
