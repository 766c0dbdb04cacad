"""File skills: take workspace-relative paths (and text) and read, write, list or test files inside the workspace."""

from __future__ import annotations

import difflib
import sqlite3
from pathlib import Path

from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.runtime.files import write_atomic
from orgtree_lang.runtime.skills import SkillContext, skill
from orgtree_lang.stdlib import fs_ledger


def _existing_names(folder: Path) -> list[str]:
    try:
        return sorted(entry.name for entry in folder.iterdir())
    except OSError:
        return []


def missing_file_error(skill_name: str, what: str, path: str, real: Path, ctx: SkillContext) -> SkillError:
    """A 'no such file' error whose hint names the closest existing entries."""
    ws = ctx.workspace
    folder = real.parent
    while folder != ws.root and not folder.is_dir():
        folder = folder.parent
    names = _existing_names(folder)
    prefix = "" if folder == ws.root else ws.relative(folder) + "/"
    close = difflib.get_close_matches(real.name, names, n=3, cutoff=0.5)
    if close:
        hint = "did you mean " + " or ".join(f"`{prefix}{n}`" for n in close) + "?"
    elif names:
        shown = ", ".join(f"`{prefix}{n}`" for n in names[:10]) + (", …" if len(names) > 10 else "")
        hint = f"`{prefix or '.'}` has {shown}"
    else:
        hint = f"`{prefix or '.'}` is empty" if folder.is_dir() else None
    return SkillError(f"{skill_name}: no {what} `{path}` in workspace {ws.root}", hint=hint)


def writable_path(skill_name: str, ctx: SkillContext, path: str) -> Path:
    real = ctx.workspace.resolve(path)
    refusal = ctx.workspace.write_refusal(real)
    if refusal is not None:
        raise SkillError(f"{skill_name}: `{path}` {refusal.what}", hint=refusal.hint)
    if real.is_dir():
        raise SkillError(f"{skill_name}: `{path}` is a folder, not a file")
    if real.parent.exists() and not real.parent.is_dir():
        raise SkillError(f"{skill_name}: `{ctx.workspace.relative(real.parent)}` is a file, not a folder")
    try:
        real.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SkillError(f"{skill_name}: cannot create the folder for `{path}`: {exc.strerror}") from None
    return real


@skill("fs.read", idempotent=True, unobserved=True)
def read(ctx: SkillContext, path: str) -> str:
    """The text of a file in the workspace (UTF-8).

    Example: `fs.read("notes/todo.txt")`

    Args:
        path: The file, relative to the workspace root.

    Returns:
        The whole file as text.
    """
    real = ctx.workspace.resolve(path)
    if real.is_dir():
        raise SkillError(f"fs.read: `{path}` is a folder, not a file", hint="use fs.list to see what it holds")
    if not real.exists():
        raise missing_file_error("fs.read", "file", path, real, ctx)
    try:
        return real.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SkillError(f"fs.read: `{path}` is not UTF-8 text (byte {exc.start} cannot be decoded)") from None
    except OSError as exc:
        raise SkillError(f"fs.read: cannot read `{path}`: {exc.strerror}") from None


@skill("fs.write", idempotent=True)
def write(ctx: SkillContext, path: str, text: str) -> int:
    """Replace a file's contents with text (UTF-8), creating the file and its folders if needed.

    Example: `fs.write("out/report.md", text)`

    The write is atomic: readers see either the old contents or the new, never a mix.

    Args:
        path: The file, relative to the workspace root.
        text: The new contents.

    Returns:
        The number of bytes written.
    """
    real = writable_path("fs.write", ctx, path)
    data = text.encode("utf-8")
    try:
        write_atomic(real, data)
    except OSError as exc:
        raise SkillError(f"fs.write: cannot write `{path}`: {exc.strerror}") from None
    return len(data)


@skill("fs.append")
def append(ctx: SkillContext, path: str, text: str) -> int:
    """Add text (UTF-8) to the end of a file, creating the file and its folders if needed.

    Example: `fs.append("log.txt", line + "\\n")`

    In a durable run the call carries an idempotency key, and the text is added at most once per key,
    even when the process is killed mid-append and resume repeats the call (see docs/skills.md).

    Args:
        path: The file, relative to the workspace root.
        text: What to add; include a trailing newline if you want lines.

    Returns:
        The number of bytes added.
    """
    real = writable_path("fs.append", ctx, path)
    data = text.encode("utf-8")
    try:
        return fs_ledger.append(ctx, real, data)
    except OSError as exc:
        raise SkillError(f"fs.append: cannot write `{path}`: {exc.strerror or exc}") from None
    except sqlite3.Error as exc:
        raise SkillError(
            f"fs.append: the append ledger {fs_ledger.state_db_path(ctx.workspace)} cannot be used: {exc}",
            hint="it records which keyed appends already happened; check the folder's permissions and free space",
        ) from None


@skill("fs.list", idempotent=True, unobserved=True)
def list_folder(ctx: SkillContext, path: str = ".") -> list[str]:
    """The entries of a folder in the workspace, sorted; folders end with `/`.

    Example: `fs.list("notes")  # names, sorted`

    Args:
        path: The folder, relative to the workspace root.

    Returns:
        Entry names relative to that folder, e.g. `["notes.txt", "src/"]`.
    """
    real = ctx.workspace.resolve(path)
    if not real.exists():
        raise missing_file_error("fs.list", "folder", path, real, ctx)
    if not real.is_dir():
        raise SkillError(f"fs.list: `{path}` is a file, not a folder", hint="use fs.read to read it")
    return sorted(entry.name + ("/" if entry.is_dir() else "") for entry in real.iterdir())


@skill("fs.exists", idempotent=True, unobserved=True)
def exists(ctx: SkillContext, path: str) -> bool:
    """Whether a file or folder exists in the workspace.

    Example: `fs.exists("notes/todo.txt")`

    Args:
        path: The path, relative to the workspace root.
    """
    return ctx.workspace.resolve(path).exists()
