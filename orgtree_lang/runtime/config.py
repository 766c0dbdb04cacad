"""The project's settings file, `orgtree.toml`: read once, one table per feature, with errors that name the file."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from orgtree_lang.syntax.errors import UsageError

CONFIG_NAME = "orgtree.toml"

_TYPE_WORDS = {str: "a string", int: "a whole number", float: "a number", bool: "true or false",
               list: "a list", dict: "a table"}


class ConfigError(UsageError):
    """orgtree.toml cannot be read, or a table or key in it has the wrong shape."""


def read_config(path: Path | str = CONFIG_NAME) -> dict[str, Any]:
    """Every table of the file at `path`; an empty dict when there is no such file."""
    path = Path(path)
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None


def config_section(name: str, path: Path | str = CONFIG_NAME, *,
                   types: dict[str, type | tuple[type, ...]] | None = None) -> dict[str, Any]:
    """The table `[name]` of the file (empty if absent); each key listed in `types` must have that type."""
    section = read_config(path).get(name, {})
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [{name}] must be a table, got {type(section).__name__}")
    for key, expected in (types or {}).items():
        if key in section and not isinstance(section[key], expected):
            wanted = " or ".join(_TYPE_WORDS.get(t, t.__name__) for t in
                                 (expected if isinstance(expected, tuple) else (expected,)))
            raise ConfigError(f"{path}: [{name}] {key} must be {wanted}, got {section[key]!r}")
    return section
