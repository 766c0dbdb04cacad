"""Map a relative path given by a program to a real path confined to the workspace root folder."""

from __future__ import annotations

import os
from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath

from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.runtime.host_code import SETTINGS_FILE_NAME, SOURCE_SUFFIX, STATE_DIR_NAME, HostCode, Refusal

__all__ = ["SETTINGS_FILE_NAME", "SOURCE_SUFFIX", "STATE_DIR_NAME", "Workspace"]

_RELATIVE_HINT = "fs paths are relative to the workspace root, e.g. `notes/todo.txt`"


class Workspace:
    """The folder a run may read and write; every fs path is resolved against it and must stay inside.

    `writable_sources` (`[fs] writable_sources = true` in orgtree.toml, which only a person can write) lets the
    fs skills change program sources; `generated` marks the view a generated module gets, which never may.
    Which paths a run may not write at all is `host_code`'s to say (runtime/host_code.py)."""

    def __init__(self, root: Path | str, *, writable_sources: bool = False, generated: bool = False) -> None:
        # Resolve symlinks in the root itself so that real paths of entries can be compared with it.
        self.root = Path(root).expanduser().resolve()
        self.writable_sources = writable_sources and not generated
        self.generated = generated
        self._host_code: HostCode | None = None
        self._settings = None  # the run's ConfigSnapshot of orgtree.toml, when for_run had one

    @classmethod
    def for_run(cls, root: Path | str, config=None) -> Workspace:
        """The workspace of a run started by a person, with the source policy its orgtree.toml sets (`config`: the
        run's runtime.config.ConfigSnapshot; None reads the file)."""
        from orgtree_lang.runtime.config import ConfigError, config_section
        from orgtree_lang.runtime.errors import PipeRuntimeError

        root = Path(root).expanduser().resolve()
        try:
            settings = config if config is not None else root / SETTINGS_FILE_NAME
            section = config_section("fs", settings, types={"writable_sources": bool})
            workspace = cls(root, writable_sources=section.get("writable_sources", False))
            workspace._settings = settings
            workspace.host_code  # settings errors now, at the start, not at the first write
        except ConfigError as err:
            raise PipeRuntimeError(str(err), kind="config", catchable=False,
                                   hint="fix the setting in orgtree.toml, then run again") from None
        return workspace

    def for_generated_module(self) -> Workspace:
        """The same folder as a generated module sees it: program sources stay read-only whatever the settings."""
        view = Workspace(self.root, generated=True)
        view._settings = self._settings
        return view

    @property
    def state_dir(self) -> Path:
        """Where the run keeps its own state (modules, runs, state.db); created by whoever first needs it."""
        return self.root / STATE_DIR_NAME

    def resolve(self, path: str | PurePath) -> Path:
        """The real absolute path for `path` (relative to the root); SkillError if it would leave the root."""
        if isinstance(path, PurePath):
            path = str(path)
        if not isinstance(path, str):
            raise SkillError(f"a path must be a string, got {type(path).__name__}", hint=_RELATIVE_HINT)
        if not path:
            raise SkillError("the path is empty", hint='use "." for the workspace root')
        if "\0" in path:
            raise SkillError(f"path {path!r} contains a NUL character", hint=_RELATIVE_HINT)
        if _is_absolute(path):
            raise SkillError(
                f"absolute path `{path}` is not allowed; paths are relative to the workspace {self.root}",
                hint=_RELATIVE_HINT,
            )
        parts = _normalize(path)
        if parts is None:
            raise SkillError(
                f"path `{path}` leaves the workspace {self.root} through `..`",
                hint="a path may use `..` only to step back out of folders it entered itself",
            )
        candidate = self.root.joinpath(*parts)
        # realpath follows every symlink, including dangling ones and those in parent folders, and
        # keeps the not-yet-existing tail as written, so new files under a symlinked folder are caught too.
        real = Path(os.path.realpath(candidate))
        if real != self.root and not real.is_relative_to(self.root):
            raise SkillError(
                f"path `{path}` leads outside the workspace {self.root} through a symbolic link (to {real})",
                hint="symbolic links may only point to places inside the workspace",
            )
        return real

    def relative(self, real: Path) -> str:
        """The workspace-relative spelling of a path inside the root (`.` for the root itself)."""
        rel = Path(real).relative_to(self.root)
        return rel.as_posix() if rel.parts else "."

    @property
    def host_code(self) -> HostCode:
        """What the host executes or reads as settings here, read from orgtree.toml when first asked; ConfigError
        when the file cannot be read (then what the host executes is unknown, and nothing may be written)."""
        if self._host_code is None:
            from orgtree_lang.runtime.config import read_config

            settings = self._settings if self._settings is not None else self.root / SETTINGS_FILE_NAME
            self._host_code = HostCode.of(self.root, read_config(settings),
                                          writable_sources=self.writable_sources, generated=self.generated)
        return self._host_code

    def write_refusal(self, real: Path) -> Refusal | None:
        """Why a run may not write the resolved path `real`, or None: see runtime/host_code.py."""
        from orgtree_lang.runtime.config import ConfigError

        try:
            return self.host_code.refusal(real)
        except ConfigError as err:  # what the host executes is unknown, so nothing may be written
            return Refusal(f"cannot be checked against the workspace's settings: {err}",
                           "fix orgtree.toml; until then a run writes nothing")

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Workspace) and other.root == self.root

    def __hash__(self) -> int:
        return hash(self.root)


def _is_absolute(path: str) -> bool:
    # Windows spellings are refused everywhere so a program behaves the same on every machine.
    return PurePosixPath(path).is_absolute() or PureWindowsPath(path).anchor != ""


def _normalize(path: str) -> list[str] | None:
    """The path's parts with `.` and `..` applied lexically, or None if `..` climbs above the start."""
    parts: list[str] = []
    for part in path.replace("\\", "/").split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return None
            parts.pop()
        else:
            parts.append(part)
    return parts
