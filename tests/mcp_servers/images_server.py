"""An MCP server for the tests whose tools answer with images and embedded resources instead of text.

Run as `python images_server.py [PORT]`: streamable HTTP on 127.0.0.1:PORT/mcp with PORT, else stdio. The PNG is a
real 1x1 image; the tools return it as an image, beside a caption, and as blob and text resources."""

from __future__ import annotations

import base64
import sys

import mcp_types as types
from mcp.server.mcpserver import Image, MCPServer

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
PDF = b"%PDF-1.4\n% a tiny stand-in for a report\n%%EOF\n"
app = MCPServer("images")


@app.tool()
def logo() -> Image:
    """The logo, as a PNG image."""
    return Image(data=PNG, format="png")


@app.tool()
def chart(title: str) -> list:
    """A chart with its caption: a text block, then the image."""
    return [f"chart: {title}", Image(data=PNG, format="png")]


@app.tool()
def report() -> list:
    """A report as an embedded PDF resource, and its summary as an embedded text resource."""
    return [types.EmbeddedResource(type="resource", resource=types.BlobResourceContents(
                uri="file:///report.pdf", mime_type="application/pdf", blob=base64.b64encode(PDF).decode())),
            types.EmbeddedResource(type="resource", resource=types.TextResourceContents(
                uri="file:///summary.md", mime_type="text/markdown", text="# Summary\nall good\n"))]


if __name__ == "__main__":
    if len(sys.argv) > 1:
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
    else:
        app.run()
