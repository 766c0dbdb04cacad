"""Serve exposed pipelines over MCP (stdio, or streamable HTTP on 127.0.0.1) with the `mcp` SDK's low-level server."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from orgtree_lang.mcp_server.catalog import ExposedTool, run_tool

SERVER_NAME = "orgtree"


def build_server(tools: list[ExposedTool], root: Path, registry, services=None):
    """An MCP server listing `tools` and running each call as a durable run of workspace `root` (with the models
    and decomposer `services(tool)` gives)."""
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
                                                 _to_stderr, services)
        meta = {"orgtree/run_id": outcome.run_id} if outcome.run_id else None
        if outcome.error is not None:
            return _error(outcome.error, meta)
        text = outcome.result if isinstance(outcome.result, str) else json.dumps(outcome.result, ensure_ascii=False)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content={"result": outcome.result}, meta=meta)

    return Server(SERVER_NAME, version=__version__, on_list_tools=list_tools, on_call_tool=call_tool,
                  instructions="Tools are .pipe pipelines; each call is a durable run (`pipe runs`, `pipe tree`).")


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


def serve_http(server, port: int, ready=None) -> None:
    """Streamable HTTP at http://127.0.0.1:PORT/mcp; `ready(port)` is called once it listens."""
    import anyio
    import uvicorn

    app = server.streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    web = uvicorn.Server(config)

    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(web.serve)
            while not web.started:
                await anyio.sleep(0.05)
            if ready is not None:
                ready(web.servers[0].sockets[0].getsockname()[1] if web.servers else port)

    anyio.run(main)
