"""A session with a stdio MCP server in JSON-RPC lines, on asyncio alone: no import of the MCP SDK (seconds) per run.

The client side of a stdio server needs little: spawn it, `initialize`, list its tools, call them, answer its pings,
and stop it as the SDK's transport does (close stdin, wait, SIGTERM, SIGKILL). Its answers are read into the
shapes McpServerSkills reads (a tool's `input_schema`, a result's `content`, `structured_content`, `is_error`).
A server reached by URL keeps the SDK's streamable-HTTP client (mcp_client/connection.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from types import SimpleNamespace
from typing import Any

PROTOCOL_VERSION = "2025-06-18"  # asked for; a server answers with the version it speaks, which is taken
INHERITED_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")  # what the SDK's stdio client passes on
STOP_WAIT = 2.0  # seconds for the server to exit once its stdin is closed, then again after SIGTERM
LINE_LIMIT = 256 * 1024 * 1024  # one JSON-RPC message per line: a big tool result is one long line


class McpProtocolError(Exception):
    """The server answered a request with a JSON-RPC error, or the session ended before it answered."""


class StdioClient:
    """`async with StdioClient(command, args, env=..., cwd=..., errlog=...) as client:` a started, initialized
    session; `list_tools(cursor=)` and `call_tool(name, arguments)` as the SDK's Client has them."""

    def __init__(self, command: str, args: list[str], *, env: dict[str, str] | None = None, cwd: str | None = None,
                 errlog=None) -> None:
        self.command, self.args = command, list(args)
        self.env = {k: os.environ[k] for k in INHERITED_ENV if k in os.environ} | dict(env or {})
        self.cwd, self.errlog = cwd, errlog
        self._process: asyncio.subprocess.Process | None = None
        self._pending: dict[int, asyncio.Future] = {}
        self._next_id = 0
        self._reader: asyncio.Task | None = None
        self.server_info: dict[str, Any] = {}

    async def __aenter__(self) -> StdioClient:
        program = shutil.which(self.command, path=self.env.get("PATH")) or self.command
        self._process = await asyncio.create_subprocess_exec(
            program, *self.args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=self.errlog if self.errlog is not None else sys.stderr, env=self.env, cwd=self.cwd,
            limit=LINE_LIMIT)
        self._reader = asyncio.ensure_future(self._read())
        try:
            self.server_info = await self._request("initialize", {
                "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                "clientInfo": {"name": "orgtree_lang", "version": "1"}})
            await self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        except BaseException:
            await self._stop()
            raise
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self._stop()

    async def list_tools(self, cursor: str | None = None):
        result = await self._request("tools/list", {"cursor": cursor} if cursor else {})
        tools = [SimpleNamespace(name=t.get("name", ""), title=t.get("title"), description=t.get("description"),
                                 input_schema=t.get("inputSchema") or {}, output_schema=t.get("outputSchema"))
                 for t in result.get("tools") or [] if isinstance(t, dict)]
        return SimpleNamespace(tools=tools, next_cursor=result.get("nextCursor"))

    async def call_tool(self, name: str, arguments: dict[str, Any]):
        result = await self._request("tools/call", {"name": name, "arguments": arguments})
        content = [SimpleNamespace(**{"type": None, **block}) for block in result.get("content") or []
                   if isinstance(block, dict)]
        return SimpleNamespace(content=content, structured_content=result.get("structuredContent"),
                               is_error=bool(result.get("isError")))

    # ---- the wire --------------------------------------------------------------------------------

    async def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next_id += 1
        ident = self._next_id
        answer = self._pending[ident] = asyncio.get_running_loop().create_future()
        try:
            await self._send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
            return await answer
        finally:
            self._pending.pop(ident, None)

    async def _send(self, message: dict[str, Any]) -> None:
        process = self._process
        if process is None or process.stdin is None or process.returncode is not None:
            raise McpProtocolError("the server has exited")
        try:
            process.stdin.write(json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n")
            await process.stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise McpProtocolError(f"the server closed its input ({exc})") from None

    async def _read(self) -> None:
        """Hand each answer to its request; answer the server's own requests (ping; others are not supported)."""
        stdout = self._process.stdout
        why = "the server closed its output"
        try:
            while True:
                line = await stdout.readline()
                if not line:
                    break
                try:
                    message = json.loads(line)
                except ValueError:
                    continue  # a stray line on stdout: not a message
                if not isinstance(message, dict):
                    continue
                if "method" in message:
                    if "id" in message:
                        await self._answer_server(message)
                    continue
                waiting = self._pending.get(message.get("id"))
                if waiting is None or waiting.done():
                    continue
                error = message.get("error")
                if error is not None:
                    text = error.get("message") if isinstance(error, dict) else str(error)
                    waiting.set_exception(McpProtocolError(str(text or "error")))
                else:
                    result = message.get("result")
                    waiting.set_result(result if isinstance(result, dict) else {})
        except (asyncio.LimitOverrunError, ValueError, ConnectionError) as exc:
            why = f"its output could not be read ({exc})"
        process, code = self._process, None
        if process is not None:
            try:  # its output closed: it is likely exiting, and its status says more than the closing
                code = await asyncio.wait_for(process.wait(), 1.0)
            except asyncio.TimeoutError:
                pass
        for waiting in self._pending.values():
            if not waiting.done():
                ended = f", exit status {code}" if code is not None else ""
                waiting.set_exception(McpProtocolError(f"{why}{ended}"))

    async def _answer_server(self, message: dict[str, Any]) -> None:
        if message.get("method") == "ping":
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": {}}
        else:
            reply = {"jsonrpc": "2.0", "id": message["id"],
                     "error": {"code": -32601, "message": f"method not supported: {message.get('method')}"}}
        try:
            await self._send(reply)
        except McpProtocolError:
            pass

    async def _stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin is not None:
            try:
                process.stdin.close()
            except (BrokenPipeError, ConnectionResetError, RuntimeError):
                pass
        for stop in (None, process.terminate, process.kill):
            if process.returncode is not None:
                break
            if stop is not None:
                try:
                    stop()
                except ProcessLookupError:
                    break
            try:
                await asyncio.wait_for(process.wait(), STOP_WAIT)
            except asyncio.TimeoutError:
                continue
        if self._reader is not None:
            self._reader.cancel()
            try:
                await self._reader
            except BaseException:
                pass
