"""Shared test setup: no skill plugins from the machine, hypothesis profiles, and the tests folder on sys.path."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Installed third-party skill packages must not change what the tests see.
os.environ["PIPE_NO_PLUGINS"] = "1"

# Python processes the tests start import the installed orgtree_lang, never a checkout in their working folder
# (which has no grammar or stdlib inside the package): the same as `python -P`.
os.environ["PYTHONSAFEPATH"] = "1"

# Lets test modules share helpers (`import pipe_testing`) under --import-mode=importlib.
TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

settings.register_profile(
    "default", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough", max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("PIPE_HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(scope="module")
def registry():
    """The stdlib skills only (no plugins), shared by the tests of one module."""
    from orgtree_lang.run.registries import default_registry

    return default_registry(plugins=False)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An empty workspace folder."""
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder
