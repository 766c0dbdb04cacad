"""A run's folders on the host: the read-only program folder and the writable scratch folder, filled and read back safely."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from orgtree_lang.sandbox.output import truncation_marker
from orgtree_lang.sandbox.settings import LANGUAGES, CodeRequest, SandboxError

MAX_FILES_BACK = 200


@dataclass
class RunFolders:
    """`root/program` (source, read-only inside) and `root/scratch` (the only writable place inside)."""

    root: Path
    program: Path
    scratch: Path
    program_name: str

    @classmethod
    def create(cls, request: CodeRequest, parent: Path, owner: int | None) -> RunFolders:
        """Make the folders, write the source and copy `request.files` into scratch; `owner` gets scratch."""
        name = LANGUAGES[request.language]
        parent.mkdir(parents=True, exist_ok=True)
        root = Path(tempfile.mkdtemp(prefix="orgtree-sbx-", dir=parent))
        try:
            # Others may pass through (the sandbox user must reach scratch) but not list the folder.
            os.chmod(root, 0o711)
            program, scratch = root / "program", root / "scratch"
            program.mkdir(mode=0o755)
            scratch.mkdir(mode=0o700)
            (program / name).write_text(request.source, encoding="utf-8")
            os.chmod(program / name, 0o644)
            for rel, text in request.files.items():
                target = scratch.joinpath(*_safe_parts(rel))
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
            if owner is not None:
                for folder, dirs, files in os.walk(scratch):
                    for entry in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
                        os.lchown(entry, owner, owner)
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        return cls(root, program, scratch, name)

    def written_files(self, given: dict[str, str], budget: int) -> tuple[dict[str, str], bool]:
        """Regular files in scratch that are new or changed, as text, within `budget` bytes; and whether cut.

        Symbolic links are never followed: the code inside could point one at any file of the host.
        """
        found: dict[str, str] = {}
        truncated = False
        for folder, dirs, files in os.walk(self.scratch, followlinks=False):
            dirs.sort()
            for name in sorted(files):
                path = os.path.join(folder, name)
                rel = PurePosixPath(os.path.relpath(path, self.scratch)).as_posix()
                data = _read_regular(path, budget + 1)
                if data is None:
                    continue
                text = data.decode("utf-8", errors="replace")
                if given.get(rel) == text:
                    continue
                if len(found) >= MAX_FILES_BACK:
                    return found, True
                if len(data) > budget:
                    text = data[:budget].decode("utf-8", errors="replace") + truncation_marker(budget)
                    truncated = True
                budget = max(0, budget - len(data))
                found[rel] = text
        return found, truncated

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _read_regular(path: str, limit: int) -> bytes | None:
    """Up to `limit` bytes of a regular file, or None for links, pipes, devices and anything unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, left = [], limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _safe_parts(rel: str) -> tuple[str, ...]:
    """The parts of a relative file name for scratch; SandboxError for absolute names or `..`."""
    path = PurePosixPath(rel.replace("\\", "/"))
    if not rel or path.is_absolute() or any(part in ("..", "") for part in path.parts) or "\0" in rel:
        raise SandboxError(f"code.run: file name {rel!r} must be a relative path inside the scratch folder",
                           hint="use names like `data/input.csv`, without `..` or a leading `/`")
    return path.parts
