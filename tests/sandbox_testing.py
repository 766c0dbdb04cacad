"""Test helpers for the sandbox: a real HTTP server on 127.0.0.1 that counts its requests, and quick settings."""

from __future__ import annotations

import http.server
import threading
import time
from contextlib import contextmanager

from orgtree_lang.sandbox.settings import SandboxSettings

PAGE = b"<html><head><title>t</title><script>var hidden = 1;</script></head><body><p>hello from the test server</p></body></html>"


class _Handler(http.server.BaseHTTPRequestHandler):
    """Routes: /page, /redirect?to=URL (302), /loop (redirects to itself), /big (1 MB), /slow (2 s)."""

    def do_GET(self) -> None:
        self.server.hits.append(self.path)
        path, _, query = self.path.partition("?")
        if path == "/redirect":
            self._reply(302, b"", location=query.removeprefix("to="))
        elif path == "/loop":
            self._reply(302, b"", location="/loop")
        elif path == "/big":
            self._reply(200, b"x" * 1_000_000, "text/plain")
        elif path == "/slow":
            time.sleep(2)
            self._reply(200, b"late", "text/plain")
        else:
            self._reply(200, PAGE, "text/html; charset=utf-8")

    def _reply(self, status: int, body: bytes, kind: str = "text/plain", location: str | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        if location:
            self.send_header("Location", location)
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:  # the client stopped reading at its cap
            pass

    def log_message(self, *args) -> None:
        pass


@contextmanager
def local_server():
    """An HTTP server on 127.0.0.1 (a free port) in a thread; `.hits` lists the paths it was asked for."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.hits = []
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def quick_settings(**overrides) -> SandboxSettings:
    """Settings with short limits so tests stay fast."""
    values = dict(timeout=2.0, memory_mb=256, max_output_bytes=64 * 1024, max_file_mb=8, max_processes=32)
    values.update(overrides)
    return SandboxSettings(**values)
