"""An MCP server for the tests (the SDK's MCPServer, FastMCP's 2.x name) that appends every tool call to a file.

Run as `python notes_server.py CALLS_FILE [PORT]`: each call adds one line `TOOL ARGUMENTS-AS-JSON` to CALLS_FILE,
so a test counts the calls the server really received; each start adds a line to CALLS_FILE.starts. With PORT it serves streamable HTTP on 127.0.0.1:PORT/mcp,
else stdio."""

from __future__ import annotations

import json
import sys

import anyio

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

CALLS = sys.argv[1]
app = MCPServer("notes")


def _record(tool: str, arguments: dict) -> None:
    with open(CALLS, "a", encoding="utf-8") as calls:
        calls.write(f"{tool} {json.dumps(arguments, sort_keys=True)}\n")


@app.tool()
def word_count(text: str, minimum_length: int = 1) -> int:
    """Count the words of a text that have at least `minimum_length` letters."""
    _record("word_count", {"text": text, "minimum_length": minimum_length})
    return len([word for word in text.split() if len(word) >= minimum_length])


@app.tool()
def tag(title: str, tags: list[str]) -> dict[str, str]:
    """Attach tags to a note title; returns one entry per tag."""
    _record("tag", {"title": title, "tags": tags})
    return {t: title.upper() for t in tags}


@app.tool()
def shout(text: str) -> str:
    """Refuse empty text, else return it in capitals."""
    _record("shout", {"text": text})
    if not text:
        raise ToolError("shout needs some text")
    return text.upper() + "!"


@app.tool()
async def nap(seconds: float, label: str) -> str:
    """Wait `seconds`, then return `label` (other calls are served meanwhile)."""
    _record("nap", {"label": label, "seconds": seconds})
    await anyio.sleep(seconds)
    return label


if __name__ == "__main__":
    with open(CALLS + ".starts", "a", encoding="utf-8") as starts:
        starts.write("started\n")
    if len(sys.argv) > 2:
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        app.run()
