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


def test_the_model_timeout_comes_from_the_flag_the_environment_the_config_or_is_120(tmp_path):
    from orgtree_lang.models.select import resolve_model_timeout

    cfg = tmp_path / "orgtree.toml"
    assert resolve_model_timeout(None, {}, cfg) == 120
    cfg.write_text("[model]\ntimeout = 300\n")
    assert resolve_model_timeout(None, {}, cfg) == 300
    assert resolve_model_timeout(None, {"PIPE_MODEL_TIMEOUT": "45.5"}, cfg) == 45.5
    assert resolve_model_timeout(10, {"PIPE_MODEL_TIMEOUT": "45"}, cfg) == 10


@pytest.mark.parametrize("env,config,message", [
    ({"PIPE_MODEL_TIMEOUT": "soon"}, "", "PIPE_MODEL_TIMEOUT must be a number of seconds, got 'soon'"),
    ({"PIPE_MODEL_TIMEOUT": "0"}, "", "PIPE_MODEL_TIMEOUT must be a number of seconds above 0"),
    ({}, '[model]\ntimeout = "long"\n', "[model] timeout must be"),
    ({}, "[model]\ntimeout = -5\n", "[model] timeout must be a number of seconds above 0, got -5"),
])
def test_a_bad_model_timeout_is_a_clear_error(tmp_path, env, config, message):
    from orgtree_lang.models.select import resolve_model_timeout

    cfg = tmp_path / "orgtree.toml"
    cfg.write_text(config)
    with pytest.raises(ModelError) as info:
        resolve_model_timeout(None, env, cfg)
    assert message in str(info.value)


def test_provider_models_get_the_configured_timeout(tmp_path, monkeypatch):
    from orgtree_lang.models.roles import RunModels

    monkeypatch.setenv("PIPE_MODEL_TIMEOUT", "240")
    models = RunModels.from_config("openai/gpt-4o-mini", config_path=tmp_path / "orgtree.toml")
    assert models.author().timeout == 240
    assert RunModels.from_config("openai/gpt-4o-mini", timeout=7,
                                 config_path=tmp_path / "orgtree.toml").reviewer().timeout == 7
