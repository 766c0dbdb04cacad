"""The table of sandbox backends: every row names a class that says its own name, in the order `auto` tries."""

from __future__ import annotations

import pytest

from orgtree_lang.sandbox.backends import SandboxBackend, backend_class
from orgtree_lang.sandbox.settings import BACKEND_CLASSES, BACKENDS, SandboxError, SandboxSettings


@pytest.mark.parametrize("name", sorted(BACKEND_CLASSES))
def test_every_backend_row_names_a_class_with_that_name(name):
    backend = backend_class(name)(SandboxSettings())
    assert backend.name == name
    assert isinstance(backend, SandboxBackend)


def test_auto_tries_bubblewrap_before_docker():
    assert list(BACKEND_CLASSES) == ["bubblewrap", "docker"]
    assert BACKENDS == ("auto", "bubblewrap", "docker")


def test_a_backend_not_in_the_table_is_refused_by_the_settings(tmp_path):
    (tmp_path / "orgtree.toml").write_text('[sandbox]\nbackend = "firecracker"\n')
    with pytest.raises(SandboxError, match="backend must be one of auto, bubblewrap, docker"):
        SandboxSettings.from_config(tmp_path / "orgtree.toml")
