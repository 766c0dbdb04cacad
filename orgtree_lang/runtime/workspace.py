"""Map a relative path given by a program to a real path confined to the workspace root folder."""

from __future__ import annotations

import os
from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath

from orgtree_lang.runtime.errors import SkillError

STATE_DIR_NAME = ".orgtree"
SETTINGS_FILE_NAME = "orgtree.toml"
SOURCE_SUFFIX = ".pipe"

_RELATIVE_HINT = "fs paths are relative to the workspace root, e.g. `notes/todo.txt`"


class Workspace:
    """The folder a run may read and write; every fs path is resolved against it and must stay inside.

    `writable_sources` (`[fs] writable_sources = true` in orgtree.toml, which only a person can write) lets the
    fs skills change program sources; `generated` marks the view a generated module gets, which never may."""

    def __init__(self, root: Path | str, *, writable_sources: bool = False, generated: bool = False) -> None:
        # Resolve symlinks in the root itself so that real paths of entries can be compared with it.
        self.root = Path(root).expanduser().resolve()
        self.writable_sources = writable_sources and not generated
        self.generated = generated

    @classmethod
    def for_run(cls, root: Path | str, config=None) -> Workspace:
        """The workspace of a run started by a person, with the source policy its orgtree.toml sets (`config`: the
        run's runtime.config.ConfigSnapshot; None reads the file)."""
        from orgtree_lang.runtime.config import ConfigError, config_section
        from orgtree_lang.runtime.errors import PipeRuntimeError

        root = Path(root).expanduser().resolve()
        try:
            section = config_section("fs", config if config is not None else root / SETTINGS_FILE_NAME,
                                     types={"writable_sources": bool})
        except ConfigError as err:
            raise PipeRuntimeError(str(err), kind="config", catchable=False,
                                   hint="fix the setting in orgtree.toml, then run again") from None
        return cls(root, writable_sources=section.get("writable_sources", False))

    def for_generated_module(self) -> Workspace:
        """The same folder as a generated module sees it: program sources stay read-only whatever the settings."""
        return Workspace(self.root, generated=True)

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

    def is_state_path(self, real: Path) -> bool:
        """True if a resolved path lies in the run's own state folder, or is the workspace's settings file
        (which says what the sandbox and http.fetch may do: a program must not widen its own limits).

        The settings file counts under every name that reaches it: its own, the target of a symbolic link
        it is, and a hard link to it."""
        state = Path(os.path.realpath(self.state_dir))
        if real == state or real.is_relative_to(state):
            return True
        settings = self.root / SETTINGS_FILE_NAME
        target = Path(os.path.realpath(settings))
        if real in (settings, target):
            return True
        try:
            return os.path.samefile(real, target)
        except OSError:  # one of them does not exist (yet): no hard link between them
            return False

    def is_program_source(self, real: Path) -> bool:
        """True if a resolved path is a program's source (a `.pipe` file): changing one would change what a later
        run of it does, with no person reading the change."""
        return real.suffix.lower() == SOURCE_SUFFIX

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
