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
MAX_DEPTH = 64  # folder levels read back below scratch
MAX_ENTRIES = 20_000  # files and folders looked at when reading back
_NAME_MAX = 255
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


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
                try:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(text, encoding="utf-8")
                except (OSError, UnicodeEncodeError) as exc:
                    why = exc.strerror if isinstance(exc, OSError) else "it is not valid text"
                    raise SandboxError(f"code.run: cannot put file {rel!r} in the scratch folder: {why}",
                                       hint="check the names in `files=`: no file may also be a folder") from None
            if owner is not None:
                for folder, dirs, files in os.walk(scratch):
                    for entry in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
                        os.lchown(entry, owner, owner)
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        return cls(root, program, scratch, name)

    def written_files(self, given: dict[str, str], budget: int) -> tuple[dict[str, str], bool, list[str]]:
        """Regular files in scratch that are new or changed, as text, within `budget` bytes; whether cut; notes.

        Call it only when no process of the sandbox is left. Symbolic links are never followed, at any depth:
        every folder and file is opened relative to its parent's descriptor with O_NOFOLLOW. Names that are
        not UTF-8 come back with \\x escapes; folders below MAX_DEPTH are skipped, each with a note.
        """
        walk = _ScratchWalk(given, budget)
        try:
            top = os.open(self.scratch, _DIR_FLAGS)
        except OSError as exc:
            return {}, False, [f"the scratch folder could not be read back: {exc.strerror}"]
        try:
            walk.run(top)
        finally:
            os.close(top)
        return walk.found, walk.truncated, walk.notes

    def remove(self) -> None:
        """Delete the run's folders, however deep or locked down the code left scratch."""
        try:
            _remove_tree(self.root)
        except OSError:
            shutil.rmtree(self.root, ignore_errors=True)


class _ScratchWalk:
    """One depth-first pass over scratch by file descriptors, collecting what `written_files` returns."""

    def __init__(self, given: dict[str, str], budget: int) -> None:
        self.given, self.budget = given, budget
        self.found: dict[str, str] = {}
        self.truncated = False
        self.notes: list[str] = []
        self._seen = 0
        self._escaped = self._full = False

    def run(self, top: int) -> None:
        # A stack of (folder descriptor, its relative name, its subfolders still to visit), so that no depth of
        # folders can exhaust Python's recursion limit.
        stack: list[tuple[int, str, list[str]]] = []
        try:
            stack.append((top, "", self._visit(top, "")))
            while stack:
                fd, rel, subfolders = stack[-1]
                if self._full:
                    break
                if not subfolders:
                    stack.pop()
                    if fd != top:
                        os.close(fd)
                    continue
                name = subfolders.pop(0)
                child_rel = f"{rel}{self._shown(name)}/"
                if len(stack) >= MAX_DEPTH:
                    self.notes.append(f"folder {child_rel} is deeper than {MAX_DEPTH} levels and was not read back")
                    continue
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError:  # replaced by a link or made unreadable: skip it
                    continue
                stack.append((child, child_rel, self._visit(child, child_rel)))
        finally:
            for fd, _, _ in stack:
                if fd != top:
                    os.close(fd)
        if self._escaped:
            self.notes.append("some file names are not UTF-8 and are shown with \\x escapes")

    def _visit(self, fd: int, rel: str) -> list[str]:
        """Collect the folder's files; return its subfolders' names, sorted."""
        try:
            with os.scandir(fd) as entries:
                listed = sorted(((e.name, e.is_dir(follow_symlinks=False)) for e in entries), key=lambda p: p[0])
        except OSError:
            return []
        folders = []
        for name, is_dir in listed:
            self._seen += 1
            if self._seen > MAX_ENTRIES:
                if self._seen == MAX_ENTRIES + 1:
                    self.notes.append(f"scratch holds more than {MAX_ENTRIES} entries; the rest were not read back")
                    self.truncated = self._full = True
                return []
            if is_dir:
                folders.append(name)
            elif not self._full:
                self._collect(fd, name, rel + self._shown(name))
        return folders

    def _collect(self, folder_fd: int, name: str, rel: str) -> None:
        data = _read_regular(name, self.budget + 1, folder_fd)
        if data is None:
            return
        text = data.decode("utf-8", errors="replace")
        if self.given.get(rel) == text:
            return
        if len(self.found) >= MAX_FILES_BACK:
            self.truncated = self._full = True
            return
        if len(data) > self.budget:
            text = data[:self.budget].decode("utf-8", errors="replace") + truncation_marker(self.budget)
            self.truncated = True
        self.budget = max(0, self.budget - len(data))
        self.found[rel] = text

    def _shown(self, name: str) -> str:
        """The name as valid text: bytes that are not UTF-8 (surrogate-escaped by os) become \\xNN."""
        try:
            name.encode("utf-8")
            return name
        except UnicodeEncodeError:
            self._escaped = True
            return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _remove_tree(root: Path) -> None:
    """Delete a folder tree without recursion and with two descriptors open at most, never following a link.

    shutil.rmtree recurses once per level (a RecursionError past ~1000 levels) and `rm -rf` takes seconds on
    5000 levels. Each climb back through ".." is checked to land in the folder it came from: a process of
    the run that is somehow still alive and moves folders meanwhile makes this stop with an OSError.
    """
    top = os.open(root, _DIR_FLAGS)
    fd, pending = top, _clear_files(top)
    # Per level below the root: its name in the parent, the parent's folders still to go, the parent's identity.
    stack: list[tuple[str, list[str], tuple[int, int]]] = []
    try:
        while True:
            if pending:
                name = pending.pop()
                child = _open_for_removal(fd, name)
                if child is None:
                    continue
                stack.append((name, pending, _identity(fd)))
                if fd != top:
                    os.close(fd)
                fd, pending = child, _clear_files(child)
                continue
            if not stack:
                break
            name, pending, expected = stack.pop()
            parent = top if not stack else os.open("..", _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = parent
            if _identity(fd) != expected:
                raise OSError(f"a folder under {root} moved while it was being removed")
            try:
                os.rmdir(name, dir_fd=fd)
            except OSError:
                pass
    finally:
        if fd != top:
            os.close(fd)
        os.close(top)
    os.rmdir(root)


def _identity(fd: int) -> tuple[int, int]:
    found = os.fstat(fd)
    return found.st_dev, found.st_ino


def _clear_files(fd: int) -> list[str]:
    """Unlink everything in the folder that is not a folder; return the folders' names."""
    folders = []
    with os.scandir(fd) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                folders.append(entry.name)
            else:
                try:
                    os.unlink(entry.name, dir_fd=fd)
                except FileNotFoundError:
                    pass
    return folders


def _open_for_removal(fd: int, name: str) -> int | None:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except PermissionError:  # the code made it unreadable; we own it when we are not root
        pass
    except OSError:
        return None
    try:
        os.chmod(name, 0o700, dir_fd=fd)  # a folder, as scandir said without following links
        child = os.open(name, _DIR_FLAGS, dir_fd=fd)
    except OSError:
        return None
    os.fchmod(child, 0o700)
    return child


def _read_regular(name: str, limit: int, folder_fd: int) -> bytes | None:
    """Up to `limit` bytes of a regular file in a folder, or None for links, pipes, devices and the unreadable."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder_fd)
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
    too_long = next((part for part in path.parts if len(part.encode("utf-8", "surrogatepass")) > _NAME_MAX), None)
    if too_long is not None:
        raise SandboxError(f"code.run: file name {rel!r} has a part of {len(too_long)} characters, longer than "
                           f"the {_NAME_MAX} bytes a file system allows", hint="use shorter file and folder names")
    return path.parts
