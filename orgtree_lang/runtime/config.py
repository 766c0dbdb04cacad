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


class ConfigSnapshot:
    """A run's orgtree.toml as it was when the run started: a program that changes the file mid-run (to widen
    its own limits) changes nothing before the next run. Pass it wherever a settings path is taken."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._tables: dict[str, Any] | None = None
        self._error: ConfigError | None = None
        self._text: str | None = None
        try:
            if self.path.is_file():
                self._text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            # Kept, not raised: a run that never asks for settings must not fail on a bad file.
            self._error = ConfigError(f"cannot read {self.path}: {exc}")

    def tables(self) -> dict[str, Any]:
        """Every table of the file as read at the start; ConfigError if it could not be read or parsed."""
        if self._error is not None:
            raise self._error
        if self._tables is None:
            try:
                self._tables = tomllib.loads(self._text) if self._text is not None else {}
            except tomllib.TOMLDecodeError as exc:
                self._error = ConfigError(f"cannot read {self.path}: {exc}")
                raise self._error from None
        return self._tables

    def exists(self) -> bool:
        """Whether the file was there (and readable) when the snapshot was taken."""
        return self._text is not None or self._error is not None

    @property
    def text(self) -> str | None:
        """The file's text as read at the start (None when there was no file)."""
        return self._text

    def __str__(self) -> str:
        return str(self.path)


def read_config(path: Path | str | ConfigSnapshot = CONFIG_NAME) -> dict[str, Any]:
    """Every table of the file at `path` (or of a snapshot); an empty dict when there is no such file."""
    if isinstance(path, ConfigSnapshot):
        return path.tables()
    path = Path(path)
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None


def config_section(name: str, path: Path | str | ConfigSnapshot = CONFIG_NAME, *,
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
