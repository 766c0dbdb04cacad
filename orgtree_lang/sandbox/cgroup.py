"""A memory cgroup for one sandboxed run, where this host lets us make one: it bounds every byte the run holds."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

_MOUNT = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class _Hierarchy:
    """Where our own memory cgroup is, and the names of its limit files (cgroup v2 or v1)."""

    base: Path
    limit_file: str
    swap_file: str


@dataclass
class MemoryCgroup:
    """A child cgroup whose memory limit covers the processes, tmpfs pages, shared memory and page cache of a run."""

    path: Path

    @classmethod
    def create(cls, limit_bytes: int) -> MemoryCgroup | None:
        """A fresh cgroup limited to `limit_bytes`, or None when this host does not let us make one."""
        hierarchy = _hierarchy()
        if hierarchy is None:
            return None
        path = hierarchy.base / f"orgtree-sbx-{secrets.token_hex(6)}"
        try:
            path.mkdir()
        except OSError:
            return None
        group = cls(path)
        try:
            (path / hierarchy.limit_file).write_text(str(limit_bytes))
            swap = path / hierarchy.swap_file
            if swap.exists():  # without it, pages pushed to swap would not count
                swap.write_text("0" if hierarchy.swap_file == "memory.swap.max" else str(limit_bytes))
        except OSError:
            group.remove()
            return None
        return group

    def procs_file(self) -> str:
        return str(self.path / "cgroup.procs")

    def pids(self) -> list[int]:
        """The processes still in the cgroup (empty once every process of the run has ended)."""
        try:
            return [int(line) for line in Path(self.procs_file()).read_text().split()]
        except (OSError, ValueError):
            return []

    def remove(self) -> None:
        try:
            self.path.rmdir()
        except OSError:
            pass


def join(procs_file: str) -> None:
    """Move the calling process into the cgroup; run in the child before it starts bwrap."""
    fd = os.open(procs_file, os.O_WRONLY)
    try:
        os.write(fd, str(os.getpid()).encode())
    finally:
        os.close(fd)


@lru_cache(maxsize=1)
def _hierarchy() -> _Hierarchy | None:
    """Our own memory cgroup if we may create children in it: cgroup v2 with memory delegated, else v1's memory."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, rel = line.split(":", 2)
        if controllers == "":
            base = _MOUNT / rel.lstrip("/")
            try:
                delegated = "memory" in (base / "cgroup.subtree_control").read_text().split()
            except OSError:
                delegated = False
            if delegated and os.access(base, os.W_OK):
                return _Hierarchy(base, "memory.max", "memory.swap.max")
    for line in lines:
        _, controllers, rel = line.split(":", 2)
        if "memory" in controllers.split(","):
            base = _MOUNT / "memory" / rel.lstrip("/")
            if (base / "memory.limit_in_bytes").exists() and os.access(base, os.W_OK):
                return _Hierarchy(base, "memory.limit_in_bytes", "memory.memsw.limit_in_bytes")
    return None
