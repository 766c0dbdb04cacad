"""One open session with an MCP server (a subprocess on stdio, or a URL), driven from synchronous skill calls."""

from __future__ import annotations

import asyncio
import atexit
import shlex
import threading
import time
from pathlib import Path
from typing import Any

from orgtree_lang.mcp_client.settings import INSTALL_HINT, ServerSpec
from orgtree_lang.runtime.errors import SkillError

LOG_TAIL_LINES = 12

# The connections this process has started and not stopped: a stdio server is stopped (not left to notice our exit)
# when the process ends, or when `close_all` is called (a command run inside another process, as the tests do).
_OPEN: set[McpConnection] = set()


def close_all() -> None:
    """Stop every MCP server this process started and has not stopped yet."""
    for connection in list(_OPEN):
        connection.close()


atexit.register(close_all)


class McpConnection:
    """Starts the server on first use and keeps its session open on an event loop of its own thread, so that calls
    from the VM's thread and its executor's workers share one session; `close` stops the server."""

    def __init__(self, spec: ServerSpec, log: Path | None = None) -> None:
        self.spec = spec
        self.log = log  # the server's stderr (a stdio server) goes here, for errors to quote
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._client = None
        self._closing: asyncio.Event | None = None
        self._held: asyncio.Task | None = None  # holds the session open until `_closing` is set
        self._lock = threading.Lock()
        self._opening = None  # the concurrent Future of a start begun and not yet waited for (`start`)
        self._opened_at = 0.0

    def start(self) -> None:
        """Begin starting the server (importing the SDK, spawning the process, the handshake) on the session's own
        thread, and return at once: the first `tools` or `call` waits for it. A failure shows there, not here."""
        with self._lock:
            if self._client is None and self._opening is None:
                self._begin_open()

    def tools(self) -> list:
        """Start the server if needed and list its tools (every page); SkillError saying why it could not."""
        self._ready()
        return self._submit(self._list_tools(), self.spec.startup_timeout, "list its tools")

    def call(self, tool: str, arguments: dict[str, Any]):
        """Call one tool; its CallToolResult (an `is_error` result is the tool's own failure, left to the caller)."""
        self._ready()
        return self._submit(self._client.call_tool(tool, arguments), self.spec.timeout, f"run the tool `{tool}`")

    def _ready(self) -> None:
        with self._lock:
            if self._client is None:
                if self._opening is None:
                    self._begin_open()
                self._finish_open()

    def close(self) -> None:
        _OPEN.discard(self)
        loop = self._loop
        if loop is None:
            return
        if self._closing is not None:
            loop.call_soon_threadsafe(self._closing.set)
        if self._held is not None:
            try:
                asyncio.run_coroutine_threadsafe(_await(self._held), loop).result(timeout=10)
            except BaseException:  # the server failed or did not stop in time: stopping the loop abandons it
                pass
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=10)
        if not loop.is_running():
            loop.close()
        self._loop = self._thread = self._client = self._held = self._opening = None

    def _begin_open(self) -> None:
        import importlib.util

        if self.spec.url is not None and importlib.util.find_spec("mcp") is None:
            raise SkillError(f"MCP server `{self.spec.name}`: the `mcp` Python SDK is not installed, so its tools "
                             f"cannot be called", hint=INSTALL_HINT)

        _OPEN.add(self)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"mcp-{self.spec.name}", daemon=True)
        self._thread.start()
        ready: asyncio.Future | None = None

        async def start():
            nonlocal ready
            self._closing = asyncio.Event()
            ready = asyncio.get_running_loop().create_future()
            self._held = asyncio.ensure_future(self._hold(ready))
            return await ready

        self._opening = asyncio.run_coroutine_threadsafe(start(), self._loop)
        self._opened_at = time.monotonic()

    def _finish_open(self) -> None:
        """Wait for the start `_begin_open` began, within startup_timeout of when it began."""
        opening, self._opening = self._opening, None
        left = max(self.spec.startup_timeout - (time.monotonic() - self._opened_at), 0.0)
        try:
            self._client = opening.result(timeout=left)
        except Exception as exc:
            self.close()
            raise self._start_failure(exc) from None

    async def _hold(self, ready: asyncio.Future) -> None:
        """Enter the client (and its transport) and stay in it until `close`: anyio wants one task to enter and
        leave it."""
        errlog = None
        try:
            if self.spec.url is not None:
                from mcp import Client

                session = Client(self.spec.url)
            else:
                from orgtree_lang.mcp_client.stdio import StdioClient  # JSON-RPC lines: no SDK import

                if self.log is not None:
                    self.log.parent.mkdir(parents=True, exist_ok=True)
                    errlog = open(self.log, "w", encoding="utf-8")  # this start's lines only, for errors to quote
                command, *args = self.spec.command
                session = StdioClient(command, args, env=dict(self.spec.env) or None, cwd=self.spec.cwd,
                                      errlog=errlog)
            async with session as client:  # each request is bounded by `_submit`
                ready.set_result(client)
                await self._closing.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            else:
                raise
        finally:
            if errlog is not None:
                errlog.close()

    async def _list_tools(self) -> list:
        tools, cursor = [], None
        while True:
            page = await self._client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools

    def _submit(self, coroutine, timeout: float, doing: str):
        if self._loop is None:
            coroutine.close()
            raise SkillError(f"the MCP server `{self.spec.name}` is closed")
        pending = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return pending.result(timeout=timeout)
        except TimeoutError:
            pending.cancel()
            raise SkillError(f"the MCP server `{self.spec.name}` ({self.spec.describe()}) did not {doing} within "
                             f"{timeout:g} s",
                             hint=f"raise `timeout` in [mcp.servers.{self.spec.name}] of orgtree.toml if it is "
                                  f"just slow{self._log_hint()}") from None
        except Exception as exc:
            raise SkillError(f"the MCP server `{self.spec.name}` ({self.spec.describe()}) failed to {doing}: "
                             f"{_reason(exc)}{self._log_tail()}",
                             hint=f"check that the server still runs{self._log_hint()}") from None

    def _start_failure(self, exc: BaseException) -> SkillError:
        if isinstance(exc, TimeoutError):
            what = f"did not start within {self.spec.startup_timeout:g} s (startup_timeout)"
        else:
            what = f"failed to start: {_reason(exc)}"
        if self.spec.command:
            fix = (f"check `command` in [mcp.servers.{self.spec.name}] of orgtree.toml: run "
                   f"`{shlex.join(self.spec.command)}` yourself to see its error")
        else:
            fix = f"check that a streamable HTTP MCP server answers at {self.spec.url}"
        return SkillError(f"MCP server `{self.spec.name}` ({self.spec.describe()}) {what}{self._log_tail()}",
                          hint=fix + self._log_hint())

    def _log_tail(self) -> str:
        if self.log is None or not self.log.is_file():
            return ""
        lines = [line for line in self.log.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
        if not lines:
            return ""
        return "\n  its last lines on stderr:\n" + "\n".join("    " + line for line in lines[-LOG_TAIL_LINES:])

    def _log_hint(self) -> str:
        written = self.log is not None and self.log.is_file() and self.log.stat().st_size > 0
        return f"; its stderr is in {self.log}" if self.spec.command and written else ""


async def _await(future):
    return await future


def _reason(exc: BaseException) -> str:
    """The innermost useful message of an exception (anyio wraps failures of a task group in ExceptionGroups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip()
    if isinstance(exc, FileNotFoundError):
        return f"no such program: {exc.filename or text}"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
