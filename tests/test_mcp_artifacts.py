"""MCP images and resources as bytes values: a real MCP server's image and embedded resource contents reach the
program (over stdio and streamable HTTP), and `pipe mcp serve` answers a bytes result with image/resource contents."""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp")

import anyio  # noqa: E402
from cli_testing import pipe  # noqa: E402

SERVER = Path(__file__).resolve().parent / "mcp_servers" / "images_server.py"
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
PDF = b"%PDF-1.4\n% a tiny stand-in for a report\n%%EOF\n"
PROGRAM = '''use mcp.images, fs

pipeline main() -> str:
    logo = mcp.images.logo()
    fs.write_bytes("logo.png", logo)
    parts = mcp.images.chart("sales")
    docs = mcp.images.report()
    fs.write_bytes("report.pdf", docs[0])
    return f"{logo.media_type} {parts[0]} {parts[1] == logo} {docs[0].media_type} {docs[1].media_type} {docs[1].size}"
'''
EXPECTED = "image/png chart: sales true application/pdf text/markdown 19"


def _check_run(root: Path) -> None:
    (root / "p.pipe").write_text(PROGRAM)
    done = pipe("run", "p.pipe", "--json", cwd=root, env={"PIPE_NO_PLUGINS": "1"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == EXPECTED
    assert (root / "logo.png").read_bytes() == PNG and (root / "report.pdf").read_bytes() == PDF
    blobs = sorted(p.read_bytes() for p in (root / ".orgtree" / "blobs").rglob("*") if p.is_file())
    assert blobs == sorted([PNG, PDF, b"# Summary\nall good\n"])  # the logo twice, stored once
    replay = pipe("replay", json.loads(done.stdout)["run_id"], cwd=root, env={"PIPE_NO_PLUGINS": "1"})
    assert "0 outside call(s)" in replay.stderr and "identical to the original run" in replay.stderr, replay.stderr


def test_images_and_resources_of_a_stdio_server_are_bytes_values(tmp_path):
    (tmp_path / "orgtree.toml").write_text(f"[mcp.servers.images]\ncommand = {json.dumps([sys.executable, str(SERVER)])}\n")
    _check_run(tmp_path)
    listed = pipe("skills", "mcp.images.logo", cwd=tmp_path)
    assert "mcp.images.logo() -> any" in listed.stdout, listed.stdout


@pytest.fixture
def http_server():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen([sys.executable, str(SERVER), str(port)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_images_and_resources_of_a_streamable_http_server_are_bytes_values(tmp_path, http_server):
    origin = http_server.rsplit("/", 1)[0]
    (tmp_path / "orgtree.toml").write_text(f'[http]\nallow = ["{origin}"]\n\n[mcp.servers.images]\nurl = "{http_server}"\n')
    _check_run(tmp_path)


SERVED = '''use fs

pipeline logo(name: str) -> bytes:
    """The workspace's picture of that name."""
    return fs.read_bytes(name)

pipeline measure(picture: bytes) -> str:
    """The media type and size of a picture."""
    return f"{picture.media_type} {picture.size}"

pipeline bundle() -> list[bytes]:
    """A picture and a document."""
    return [fs.read_bytes("logo.png"), fs.read_bytes("report.pdf")]
'''


def test_pipe_mcp_serve_answers_bytes_with_image_and_resource_contents(tmp_path):
    from mcp import Client, StdioServerParameters

    (tmp_path / "tools.pipe").write_text(SERVED)
    (tmp_path / "logo.png").write_bytes(PNG)
    (tmp_path / "report.pdf").write_bytes(PDF)
    server = StdioServerParameters(command=sys.executable, args=[
        "-m", "orgtree_lang.cli.main", "mcp", "serve", "tools.pipe:logo", "tools.pipe:measure", "tools.pipe:bundle"],
        cwd=str(tmp_path), env={"PIPE_NO_PLUGINS": "1", "PYTHONSAFEPATH": "1"})

    async def work(client):
        return [await client.call_tool("logo", {"name": "logo.png"}),
                await client.call_tool("measure", {"picture": {"media_type": "image/png",
                                                               "base64": base64.b64encode(PNG).decode()}}),
                await client.call_tool("bundle", {})]

    async def main():
        async with Client(server) as client:
            return await work(client)

    logo, measured, bundle = anyio.run(main)
    assert not logo.is_error, logo.content
    text, image = logo.content
    assert text.text.startswith("<bytes image/png 70 B sha256:") and base64.b64encode(PNG).decode() not in text.text
    assert image.type == "image" and image.mime_type == "image/png" and base64.b64decode(image.data) == PNG
    assert measured.structured_content == {"result": "image/png 70"}
    kinds = [(block.type, getattr(block, "mime_type", None)) for block in bundle.content[1:]]
    assert kinds == [("image", "image/png"), ("resource", None)]
    resource = bundle.content[2].resource
    assert resource.mime_type == "application/pdf" and base64.b64decode(resource.blob) == PDF
    assert str(resource.uri).startswith("orgtree://blobs/")


def test_a_bytes_value_goes_both_ways_between_two_workspaces_over_pipe_mcp_serve(tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    (served / "tools.pipe").write_text(SERVED)
    (served / "logo.png").write_bytes(PNG)
    (served / "report.pdf").write_bytes(PDF)
    client = tmp_path / "client"
    client.mkdir()
    command = [sys.executable, "-m", "orgtree_lang.cli.main", "mcp", "serve", "--workspace", str(served),
               "tools.pipe:logo", "tools.pipe:measure"]
    (client / "orgtree.toml").write_text(f"[mcp.servers.served]\ncommand = {json.dumps(command)}\n")
    (client / "p.pipe").write_text('use mcp.served, fs\n\npipeline main() -> str:\n'
                                   '    logo = mcp.served.logo("logo.png")\n'
                                   '    fs.write_bytes("copy.png", logo)\n'
                                   '    return mcp.served.measure(logo)\n')
    listed = pipe("skills", "mcp.served.logo", cwd=client, env={"PIPE_NO_PLUGINS": "1"})
    assert "mcp.served.logo(name: str) -> bytes" in listed.stdout, listed.stdout + listed.stderr
    done = pipe("run", "p.pipe", cwd=client, env={"PIPE_NO_PLUGINS": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "image/png 70" and (client / "copy.png").read_bytes() == PNG
