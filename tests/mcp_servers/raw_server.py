"""A stdio MCP server written as bare JSON-RPC lines (no SDK), for the client's edges: before listing its tools it
pings the client and waits for the answer; `big` answers with one line of over 300 KB, `refuse` with a JSON-RPC
error, `die` exits without answering. Run as `python raw_server.py`."""

from __future__ import annotations

import json
import sys

TOOLS = [{"name": name, "description": f"The {name} tool.",
          "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}
         for name in ("big", "refuse", "die")]


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": ident, "result": {"protocolVersion": "2025-06-18", "capabilities": {
                "tools": {}}, "serverInfo": {"name": "raw", "version": "1"}}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": "ping-1", "method": "ping"})
            pong = json.loads(sys.stdin.readline())
            assert pong.get("id") == "ping-1" and pong.get("result") == {}, pong
            send({"jsonrpc": "2.0", "id": ident, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            name, n = message["params"]["name"], message["params"]["arguments"]["n"]
            if name == "big":
                send({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": "x" * n}]}})
            elif name == "refuse":
                send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32602, "message": f"no thanks to {n}"}})
            else:
                sys.exit(3)


if __name__ == "__main__":
    main()
