"""The `[sandbox]` table of orgtree.toml as typed settings, and the request and result of one sandboxed run."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orgtree_lang.runtime.config import CONFIG_NAME, ConfigError, config_section
from orgtree_lang.runtime.errors import SkillError

# The backends `backend = "auto"` tries, in this order: the name orgtree.toml uses and where its class is (imported
# only when code.run runs). A new backend is a module with a class taking SandboxSettings, with
# `unavailable_reason()` and `run(request, env_dir)`, plus one row here.
BACKEND_CLASSES = {
    "bubblewrap": "orgtree_lang.sandbox.bubblewrap:BubblewrapBackend",
    "docker": "orgtree_lang.sandbox.docker_backend:DockerBackend",
}
BACKENDS = ("auto", *BACKEND_CLASSES)
LANGUAGES = {"python": "main.py", "sh": "main.sh", "bash": "main.sh"}
SHELLS = {"sh": "/bin/sh", "bash": "/bin/bash"}
# Environment every backend gives the code. Python block-buffers stdout into a pipe, so a program killed at
# its timeout would lose everything it printed since the last 8 KB: unbuffered, each write reaches the
# host's reader at once (also for a python that a shell program starts). The shells' own echo and printf
# write at once already.
CODE_ENV = {"PYTHONUNBUFFERED": "1"}

_TYPES: dict[str, type | tuple[type, ...]] = {
    "backend": str, "bwrap": str, "python": str, "docker_image": str, "env_cache": str, "scratch_root": str,
    "timeout": (int, float), "max_timeout": (int, float), "memory_mb": int, "max_memory_mb": int,
    "max_output_bytes": int, "max_file_mb": int, "max_open_files": int, "max_processes": int,
    "allow_install": bool, "install_timeout": (int, float), "uid": int,
}


class SandboxError(SkillError):
    """A sandboxed run was refused or could not be set up; the message says why, the hint what to change."""


class SandboxUnavailable(SandboxError):
    """No configured backend can start, so the code is not run at all (the sandbox fails closed)."""


@dataclass(frozen=True)
class SandboxSettings:
    """Which backend runs code and the limits it gets; defaults are safe, orgtree.toml may tighten or relax them."""

    backend: str = "auto"
    bwrap: str = "bwrap"
    python: str = ""  # the interpreter inside the sandbox; "" picks one the sandbox user can reach
    docker_image: str = "python:3.11-slim"
    env_cache: str = ""  # where per-requirements virtualenvs are kept; "" is a folder in the temp dir
    scratch_root: str = ""  # where scratch folders are made; "" is the temp dir
    timeout: float = 10.0
    max_timeout: float = 120.0
    memory_mb: int = 512
    max_memory_mb: int = 4096
    max_output_bytes: int = 256 * 1024
    max_file_mb: int = 64
    max_open_files: int = 64
    max_processes: int = 64
    allow_install: bool = False
    install_timeout: float = 300.0
    uid: int = 65534  # when started as root, the sandbox runs as this user (`nobody`) so process limits hold

    @classmethod
    def from_config(cls, path: Path | str = CONFIG_NAME) -> SandboxSettings:
        """The settings in `[sandbox]` of the file at `path`, defaults for what it leaves out."""
        try:
            section = config_section("sandbox", path, types=_TYPES)
        except ConfigError as exc:
            raise SandboxError(str(exc), hint="see docs/sandbox.md for the keys of [sandbox]") from None
        unknown = sorted(set(section) - set(_TYPES))
        if unknown:
            raise SandboxError(f"{path}: [sandbox] has unknown key(s) {', '.join(unknown)}",
                               hint="known keys: " + ", ".join(sorted(_TYPES)))
        settings = cls(**{key: (float(v) if isinstance(_TYPES[key], tuple) else v) for key, v in section.items()})
        if settings.backend not in BACKENDS:
            raise SandboxError(f"{path}: [sandbox] backend must be one of {', '.join(BACKENDS)}, "
                               f"got {settings.backend!r}")
        return settings

    def interpreter(self) -> str:
        """The Python the sandbox runs: the configured one, else the system's, else this process's own."""
        if self.python:
            return self.python
        for candidate in ("/usr/bin/python3", os.path.realpath(sys.executable)):
            if os.path.exists(candidate) and (os.geteuid() != 0 or _reachable_by_others(candidate)):
                return candidate
        return os.path.realpath(sys.executable)

    def scratch_parent(self) -> Path:
        return Path(self.scratch_root or tempfile.gettempdir())

    def env_cache_dir(self) -> Path:
        return Path(self.env_cache) if self.env_cache else Path(tempfile.gettempdir()) / f"orgtree-sandbox-envs-{os.geteuid()}"

    def bwrap_path(self) -> str | None:
        """The bubblewrap executable, or None when it is not installed where the settings say."""
        found = shutil.which(self.bwrap)
        return found if found and os.access(found, os.X_OK) else None


def _reachable_by_others(path: str) -> bool:
    """True when a user other than the owner can traverse every folder above `path` (the sandbox user must)."""
    current = Path(path).resolve().parent
    while True:
        if not os.stat(current).st_mode & 0o001:
            return False
        if current.parent == current:
            return True
        current = current.parent


@dataclass(frozen=True)
class CodeRequest:
    """One piece of code to run: its language, source, input files, requirements and limits."""

    language: str
    source: str
    files: dict[str, str] = field(default_factory=dict)
    requirements: tuple[str, ...] = ()
    timeout: float = 10.0
    memory_mb: int = 512


@dataclass
class CodeResult:
    """What a sandboxed run produced; `exit_code` is negative (minus the signal) when the code was killed."""

    exit_code: int
    stdout: str
    stderr: str
    files: dict[str, str]
    timed_out: bool
    truncated: bool
    backend: str
    duration: float
    # False when the host could not show that every process of the run ended (then no files were read back).
    contained: bool = True

    def as_value(self) -> dict[str, Any]:
        """The result as a plain .pipe dict."""
        return {
            "exit_code": self.exit_code, "stdout": self.stdout, "stderr": self.stderr, "files": dict(self.files),
            "timed_out": self.timed_out, "truncated": self.truncated, "backend": self.backend,
            "duration": round(self.duration, 3),
        }
