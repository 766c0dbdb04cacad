"""Full texts stored by their sha256 under `.orgtree/blobs/`: bytes in, a digest out, exact byte ranges back."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from orgtree_lang.runtime.files import write_atomic


class BlobStore:
    """A folder of immutable files named by the sha256 of their bytes (`ab/cdef…`); writes are atomic."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def path(self, digest: str) -> Path:
        return self.root / digest[:2] / digest[2:]

    def put(self, data: bytes) -> str:
        """Store `data` (once) and return its sha256; a crash leaves either the whole file or none."""
        digest = hashlib.sha256(data).hexdigest()
        target = self.path(digest)
        if target.exists():
            return digest
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, data)
        return digest

    def read(self, digest: str, start: int = 0, end: int | None = None) -> bytes:
        """Bytes `start:end` of the blob `digest` (all of it by default)."""
        path = self.path(digest)
        try:
            with open(path, "rb") as blob:
                if end is None:
                    blob.seek(start)
                    return blob.read()
                return os.pread(blob.fileno(), end - start, start)
        except FileNotFoundError:
            raise FileNotFoundError(f"the blob {digest} is missing from {self.root}; the memory store refers to "
                                    f"text that was deleted by hand") from None

    def delete(self, digest: str) -> None:
        self.path(digest).unlink(missing_ok=True)
