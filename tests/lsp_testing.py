"""A Language Server Protocol client for tests and benchmarks: starts `pipe lsp` as a subprocess and speaks
JSON-RPC to it over its stdin and stdout, as an editor does."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable


class LspClient:
    """One server process; requests wait for their response, notifications are kept until a test reads them."""

    def __init__(self, cwd: Path, *, utf16: bool = True, env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "orgtree_lang.cli.main", "lsp", "--stdio"], cwd=cwd,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=dict(os.environ, PIPE_NO_PLUGINS="1", **(env or {})))
        self.messages: queue.Queue = queue.Queue()
        self.notifications: list[dict] = []
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()
        encodings = ["utf-16"] if utf16 else ["utf-32", "utf-16"]
        self.initialized = self.request("initialize", {
            "processId": os.getpid(), "rootUri": Path(cwd).resolve().as_uri(),
            "capabilities": {"general": {"positionEncodings": encodings},
                             "textDocument": {"hover": {"contentFormat": ["markdown"]},
                                              "documentSymbol": {"hierarchicalDocumentSymbolSupport": True}}}})
        self.notify("initialized", {})

    # -- the wire

    def _send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    self.messages.put(None)
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            self.messages.put(json.loads(stream.read(length)))

    def _next(self, deadline: float) -> dict:
        message = self.messages.get(timeout=max(deadline - time.monotonic(), 0.01))
        if message is None:
            raise AssertionError(f"the server exited: {self.process.stderr.read().decode(errors='replace')}")
        if "method" in message and "id" in message:  # a request from the server (registerCapability, ...)
            self._send({"id": message["id"], "result": None})
        return message

    # -- what tests call

    def request(self, method: str, params: dict, timeout: float = 60) -> Any:
        self.next_id += 1
        ident = self.next_id
        self._send({"id": ident, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            message = self._next(deadline)
            if message.get("id") == ident and "method" not in message:
                if "error" in message:
                    raise AssertionError(f"{method} failed: {message['error']}")
                return message.get("result")
            if "method" in message and "id" not in message:
                self.notifications.append(message)

    def notify(self, method: str, params: dict) -> None:
        self._send({"method": method, "params": params})

    def wait_for(self, method: str, test: Callable[[dict], bool] = lambda params: True, timeout: float = 60) -> dict:
        """The params of the first notification `method` (kept or still to come) that passes `test`."""
        deadline = time.monotonic() + timeout
        while True:
            for index, message in enumerate(self.notifications):
                if message["method"] == method and test(message["params"]):
                    del self.notifications[index]
                    return message["params"]
            try:
                message = self._next(deadline)
            except queue.Empty:
                raise AssertionError(f"no {method} within {timeout} s") from None
            if "method" in message and "id" not in message:
                self.notifications.append(message)

    def open(self, path: Path, text: str | None = None, version: int = 1) -> dict:
        """didOpen the file (with `text`, or what is on disk); return its first publishDiagnostics."""
        uri = path.resolve().as_uri()
        text = path.read_text(encoding="utf-8") if text is None else text
        self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "pipe", "version": version,
                                                              "text": text}})
        return self.diagnostics(uri, version)

    def change(self, path: Path, version: int, changes: list[dict]) -> dict:
        """didChange with `changes` (each {"text"} or {"range", "text"}); return the diagnostics of that version."""
        uri = path.resolve().as_uri()
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                               "contentChanges": changes})
        return self.diagnostics(uri, version)

    def diagnostics(self, uri: str, version: int) -> dict:
        return self.wait_for("textDocument/publishDiagnostics",
                             lambda p: p["uri"] == uri and p.get("version") == version)

    def at(self, method: str, path: Path, line: int, character: int, **extra) -> Any:
        """A request about a 0-based position of a document (hover, definition, completion)."""
        return self.request(method, {"textDocument": {"uri": path.resolve().as_uri()},
                                     "position": {"line": line, "character": character}, **extra})

    def close(self) -> None:
        try:
            self.request("shutdown", None, timeout=10)
            self.notify("exit", None)
            self.process.wait(timeout=10)
        except Exception:
            self.process.kill()
            self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            stream.close()


def position_of(text: str, needle: str, offset: int = 0, occurrence: int = 1) -> tuple[int, int]:
    """The 0-based (line, character) of the `occurrence`-th `needle` in `text`, plus `offset` characters."""
    at = -1
    for _ in range(occurrence):
        at = text.index(needle, at + 1)
    at += offset
    line = text.count("\n", 0, at)
    return line, at - (text.rfind("\n", 0, at) + 1)
