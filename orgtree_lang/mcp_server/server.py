"""Serve exposed pipelines over MCP (stdio, or streamable HTTP on 127.0.0.1) with the `mcp` SDK's low-level server."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from orgtree_lang.mcp_server.catalog import ExposedTool, run_tool
from orgtree_lang.runtime.values import display, to_plain

SERVER_NAME = "orgtree"


def build_server(tools: list[ExposedTool], root: Path, registry, options=None):
    """An MCP server listing `tools` and running each call as a durable run of workspace `root`, assembled from
    `options` (run.options.RunOptions: the models, settings and notices of every call)."""
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server

    from orgtree_lang import __version__

    by_name = {tool.name: tool for tool in tools}

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=t.name, description=t.description, input_schema=t.input_schema,
                       output_schema=t.output_schema) for t in tools])

    async def call_tool(ctx, params) -> types.CallToolResult:
        tool = by_name.get(params.name)
        if tool is None:
            known = ", ".join(sorted(by_name)) or "none"
            return _error(f"no tool `{params.name}` here; the tools are: {known}")
        # A run blocks on its skills and its journal: it gets a worker thread, the event loop serves other calls.
        outcome = await anyio.to_thread.run_sync(run_tool, tool, dict(params.arguments or {}), root, registry,
                                                 _to_stderr, options)
        meta = {"orgtree/run_id": outcome.run_id} if outcome.run_id else None
        if outcome.error is not None:
            return _error(outcome.error, meta)
        if isinstance(outcome.result, str):
            text = outcome.result
        elif len(outcome.artifacts) == 1 and outcome.result == to_plain(outcome.artifacts[0]):
            text = display(outcome.artifacts[0])  # the data is in the image or resource block, not again in text
        else:
            text = json.dumps(outcome.result, ensure_ascii=False)
        content = [types.TextContent(type="text", text=text), *map(_content_block, outcome.artifacts)]
        return types.CallToolResult(content=content, structured_content={"result": outcome.result}, meta=meta)

    return Server(SERVER_NAME, version=__version__, on_list_tools=list_tools, on_call_tool=call_tool,
                  instructions="Tools are .pipe pipelines; each call is a durable run (`pipe runs`, `pipe tree`).")


def _content_block(value):
    """A bytes value of the result as MCP content: an image for image/*, else an embedded blob resource named by its
    hash (`orgtree://blobs/SHA256`)."""
    import mcp_types as types

    if value.is_image:
        return types.ImageContent(type="image", data=value.base64, mime_type=value.media_type)
    return types.EmbeddedResource(type="resource", resource=types.BlobResourceContents(
        uri=f"orgtree://blobs/{value.sha256}", mime_type=value.media_type, blob=value.base64))


def _error(message: str, meta: dict | None = None):
    import mcp_types as types

    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True, meta=meta)


def _to_stderr(line: str) -> None:
    """A pipeline's printed lines: stdout carries the protocol, so they go to stderr (the client's log)."""
    print(line, file=sys.stderr, flush=True)


def serve_stdio(server) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


TOKEN_VARIABLE = "PIPE_MCP_TOKEN"


class BearerToken:
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer TOKEN`, else 401 and nothing runs.
    Without it any local account could run the exposed pipelines with the owner's files, models and keys."""

    def __init__(self, app, token: str) -> None:
        self.app = app
        self.expected = b"Bearer " + token.encode()

    async def __call__(self, scope, receive, send) -> None:
        import hmac

        if scope["type"] == "http":
            given = next((value for name, value in scope.get("headers", ()) if name == b"authorization"), b"")
            if not hmac.compare_digest(given, self.expected):
                body = b"pipe mcp serve: this server needs the header `Authorization: Bearer TOKEN` with the token " \
                       b"it printed at start\n"
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                        (b"www-authenticate", b'Bearer realm="pipe mcp serve"'),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def listen(port: int | None = None, unix_socket: Path | None = None):
    """A listening socket: TCP on 127.0.0.1:PORT, or a unix socket at `unix_socket` that only this user may
    connect to (mode 0600, made so before anyone can reach it). OSError when it cannot be made."""
    import os
    import socket

    if unix_socket is None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port or 0))
    else:
        path = Path(unix_socket)
        if path.exists() or path.is_symlink():
            raise FileExistsError(17, f"{path} exists already; remove it or pick another path", str(path))
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)  # the socket file is born 0600: there is no moment at which others may connect
        try:
            listener.bind(str(path))
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
    listener.listen(64)
    return listener


def serve_http(server, listener, token: str | None, ready=None) -> None:
    """Streamable HTTP at /mcp on `listener` (from `listen`); `token` is required on every request (None only for
    a 0600 unix socket); `ready()` is called once it serves."""
    import signal
    import socket

    import anyio
    import uvicorn

    if token is None and listener.family != socket.AF_UNIX:
        raise ValueError("streamable HTTP on TCP needs a token")
    security = None
    if listener.family == socket.AF_UNIX:  # clients name no port there: `Host: localhost`
        from mcp.server.transport_security import TransportSecuritySettings

        security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=["localhost"],
                                             allowed_origins=["http://localhost"])
    app = server.streamable_http_app(host="127.0.0.1", transport_security=security)
    if token is not None:
        app = BearerToken(app, token)
    config = uvicorn.Config(app, log_level="warning")
    web = uvicorn.Server(config)

    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: web.serve(sockets=[listener]))
            while not web.started:
                await anyio.sleep(0.05)
            if ready is not None:
                ready()

    path = Path(listener.getsockname()) if listener.family == socket.AF_UNIX else None
    # uvicorn hands a SIGTERM back once it has shut down: noted here, so the socket file is removed before we exit.
    stopped: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: stopped.append(signum))
    try:
        anyio.run(main)
    finally:
        signal.signal(signal.SIGTERM, previous)
        if path is not None:
            path.unlink(missing_ok=True)
