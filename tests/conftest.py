"""Shared test setup: no skill plugins from the machine, the package the child processes import, hypothesis
profiles, and the tests folder on sys.path."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Installed third-party skill packages must not change what the tests see.
os.environ["PIPE_NO_PLUGINS"] = "1"

# Python processes the tests start import the orgtree_lang these tests import: never a checkout that merely is
# their working folder (PYTHONSAFEPATH, the same as `python -P`) and, when the tests import a checkout (`python -m
# pytest` in a clone, installed or not), that checkout (PYTHONPATH). Under `pytest` with an installed wheel, as
# .ci/run runs it, the package is in site-packages and nothing is added.
os.environ["PYTHONSAFEPATH"] = "1"
CHECKOUT = Path(importlib.util.find_spec("orgtree_lang").origin).resolve().parent.parent
if (CHECKOUT / "pyproject.toml").is_file():
    os.environ["PYTHONPATH"] = os.pathsep.join([str(CHECKOUT), *filter(None, [os.environ.get("PYTHONPATH")])])

# Lets test modules share helpers (`import pipe_testing`) under --import-mode=importlib.
TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

# The default profile keeps the whole suite within minutes (generating a program from the grammar costs about 0.1 s);
# PIPE_HYPOTHESIS_PROFILE=ci or thorough runs many more.
settings.register_profile(
    "default", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow],
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
