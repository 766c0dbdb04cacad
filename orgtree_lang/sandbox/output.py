"""Read a child's stdout or stderr into memory up to a byte cap, draining the rest so the child never blocks."""

from __future__ import annotations

import threading
from typing import IO


def truncation_marker(limit: int) -> str:
    return f"\n[... truncated: output exceeded {limit} bytes ...]\n"


class CappedReader:
    """Collects at most `limit` bytes of a stream in a background thread; `text()` adds a marker if it cut."""

    def __init__(self, stream: IO[bytes], limit: int) -> None:
        self.limit = limit
        self.truncated = False
        self._chunks: list[bytes] = []
        self._kept = 0
        self._thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._thread.start()

    def _pump(self, stream: IO[bytes]) -> None:
        with stream:
            while chunk := stream.read1(1 << 16):
                room = self.limit - self._kept
                if room > 0:
                    self._chunks.append(chunk[:room])
                    self._kept += min(room, len(chunk))
                if len(chunk) > room:
                    self.truncated = True

    def text(self, wait: float = 5.0) -> str:
        self._thread.join(wait)
        text = b"".join(self._chunks).decode("utf-8", errors="replace")
        return text + truncation_marker(self.limit) if self.truncated else text
