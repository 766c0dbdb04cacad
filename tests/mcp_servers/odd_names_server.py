"""An MCP server for the tests whose tools have names .pipe cannot spell as they are (the SDK's low-level server,
which sends names as given): "", a name starting with a non-ASCII letter, names that clash once mapped, a keyword,
a leading digit, and one plain tool. Each tool answers `NAME:text`. Run as `python odd_names_server.py` (stdio)."""

from __future__ import annotations

import anyio

from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

NAMES = ["", "émoji", "a-b", "a_b", "if", "9lives", "日本", "plain"]
SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


async def list_tools(context, params) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[types.Tool(name=name, description=f"The tool {name!r}.", input_schema=SCHEMA)
                                        for name in NAMES])


async def call_tool(context, params) -> types.CallToolResult:
    text = (params.arguments or {}).get("text", "")
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"{params.name}:{text}")])


async def main() -> None:
    server = Server("odd", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
