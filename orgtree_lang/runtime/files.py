"""Writing a file so that a crash leaves the old file or the whole new one, never a part."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def write_atomic(path: Path | str, data: bytes | str) -> None:
    """Write `data` (text is UTF-8) to a temporary file beside `path`, fsync it, and rename it over `path`.

    A file that already exists keeps its permission bits. The folder must exist. On any error the temporary
    file is removed and the error raised."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        try:
            os.fchmod(fd, stat.S_IMODE(os.stat(path).st_mode))  # mkstemp's file is 0600
        except FileNotFoundError:
            pass
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
