"""Model choice: --model > PIPE_MODEL > orgtree.toml; the reviewer defaults to the author model."""

from __future__ import annotations

import pytest

from orgtree_lang.models import ModelError
from orgtree_lang.models.select import resolve_model_spec, resolve_review_model_spec


def test_precedence(tmp_path):
    config = tmp_path / "orgtree.toml"
    config.write_text('[model]\nname = "openai/from-toml"\nreview = "anthropic/reviewer"\n')
    env = {"PIPE_MODEL": "openai/from-env"}
    assert resolve_model_spec("openai/from-cli", env, config) == "openai/from-cli"
    assert resolve_model_spec(None, env, config) == "openai/from-env"
    assert resolve_model_spec(None, {}, config) == "openai/from-toml"
    assert resolve_model_spec(None, {}, tmp_path / "missing.toml") is None
    assert resolve_review_model_spec("x/cli", "a", {"PIPE_REVIEW_MODEL": "x/env"}, config) == "x/cli"
    assert resolve_review_model_spec(None, "a", {"PIPE_REVIEW_MODEL": "x/env"}, config) == "x/env"
    assert resolve_review_model_spec(None, "a", {}, config) == "anthropic/reviewer"


def test_reviewer_defaults_to_the_author(tmp_path):
    config = tmp_path / "orgtree.toml"
    config.write_text('[model]\nname = "openai/author"\n')
    assert resolve_review_model_spec(None, "scripted:s.yaml", {}, config) == "scripted:s.yaml"
    assert resolve_review_model_spec(None, None, {}, config) == "openai/author"
    assert resolve_review_model_spec(None, None, {"PIPE_MODEL": "openai/env"}, tmp_path / "no.toml") == "openai/env"


def test_bad_config_is_a_clear_error(tmp_path):
    config = tmp_path / "orgtree.toml"
    config.write_text("[model]\nname = 3\n")
    with pytest.raises(ModelError) as err:
        resolve_model_spec(None, {}, config)
    assert err.value.kind == "config" and "name must be a string" in str(err.value)
    config.write_text("[model\n")
    with pytest.raises(ModelError) as err:
        resolve_model_spec(None, {}, config)
    assert err.value.kind == "config"
