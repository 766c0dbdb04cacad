"""Binary file skills: fs.read_bytes turns a workspace file into a bytes value, fs.write_bytes writes one back."""

from __future__ import annotations

import os
import stat

from orgtree_lang.runtime.artifacts import BytesValue, guess_media_type
from orgtree_lang.runtime.errors import SkillError, UsageError
from orgtree_lang.runtime.files import write_atomic
from orgtree_lang.runtime.skills import SkillContext, skill
from orgtree_lang.stdlib.fs import missing_file_error, writable_path

MAX_BYTES = 64 * 1024 * 1024  # the largest file fs.read_bytes reads; `[fs] max_bytes` in orgtree.toml changes it


def _max_bytes(ctx: SkillContext) -> int:
    try:
        limit = ctx.config.tables().get("fs", {}).get("max_bytes", MAX_BYTES)
    except UsageError as err:  # the settings file could not be read (a ConfigError, which names the file)
        raise SkillError(f"fs.read_bytes: {err}", hint="fix orgtree.toml") from None
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        raise SkillError(f"fs.read_bytes: [fs] max_bytes in orgtree.toml must be a number of bytes, got {limit!r}",
                         hint="e.g. `max_bytes = 134217728` for 128 MiB")
    return limit


@skill("fs.read_bytes", idempotent=True, unobserved=True)
def read_bytes(ctx: SkillContext, path: str, media_type: str | None = None) -> BytesValue:
    """The contents of a file in the workspace as a bytes value (an image, a PDF, any binary file).

    Example: `logo = fs.read_bytes("assets/logo.png")  # <bytes image/png 12,345 B sha256:…>`

    The media type is guessed from the file name (`.png` is `image/png`; unknown suffixes are
    `application/octet-stream`) unless given. In a durable run the data is stored once, as a blob of the
    workspace, however many steps and checkpoints hold it. Files larger than `[fs] max_bytes` of orgtree.toml
    (64 MiB by default) are refused.

    Args:
        path: The file, relative to the workspace root.
        media_type: The media type to give the value instead of the guess, e.g. `"image/webp"`.

    Returns:
        A bytes value; read `.media_type`, `.size` and `.sha256`, or pass it to fs.write_bytes or llm.ask.
    """
    real = ctx.workspace.resolve(path)
    if real.is_dir():
        raise SkillError(f"fs.read_bytes: `{path}` is a folder, not a file", hint="use fs.list to see what it holds")
    if not real.exists():
        raise missing_file_error("fs.read_bytes", "file", path, real, ctx)
    limit = _max_bytes(ctx)
    try:
        # Non-blocking, and checked after opening: a pipe planted under the name would otherwise hang the run.
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as file:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise SkillError(f"fs.read_bytes: `{path}` is not a regular file",
                                 hint="only files of the workspace can be read, not devices or pipes")
            data = file.read(limit + 1)
    except OSError as exc:
        raise SkillError(f"fs.read_bytes: cannot read `{path}`: {exc.strerror}") from None
    if len(data) > limit:
        raise SkillError(f"fs.read_bytes: `{path}` is larger than the {limit:,} bytes a bytes value may hold",
                         hint="raise `[fs] max_bytes` in orgtree.toml if the run really needs all of it")
    return BytesValue(data, media_type or guess_media_type(real.name))


@skill("fs.write_bytes", idempotent=True)
def write_bytes(ctx: SkillContext, path: str, value: BytesValue) -> int:
    """Replace a file's contents with the data of a bytes value, creating the file and its folders if needed.

    Example: `fs.write_bytes("out/chart.png", chart)`

    The same rules as fs.write: the path stays inside the workspace (no `..` out, no symbolic link out), files
    the host executes or reads as settings are refused, and the write is atomic.

    Args:
        path: The file, relative to the workspace root.
        value: The bytes value to write (its media type is not written; name the file to match it).

    Returns:
        The number of bytes written.
    """
    real = writable_path("fs.write_bytes", ctx, path)
    try:
        write_atomic(real, value.data)
    except OSError as exc:
        raise SkillError(f"fs.write_bytes: cannot write `{path}`: {exc.strerror}") from None
    return value.size
