"""`pipe mcp serve` answers a real MCP client (the SDK's stdio and streamable HTTP clients): its tools are the chosen
pipelines and learned skills with schemas from their signatures, and each call is a durable run of the workspace."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp")

import anyio  # noqa: E402  (after the skip: part of the mcp extra)
from cli_testing import pipe  # noqa: E402

TRIAGE = '''use text

record Note:
    title: str
    words: int = 0

pipeline main(report: str, max_words: int = 3) -> Note:
    """Title a bug report with its first words.

    Args:
        report: the text of the report
        max_words: how many words the title keeps
    Returns:
        the note, titled
    """
    words = text.split(report)
    if len(words) == 0:
        fail "the report is empty"
    return Note(title=text.join(words[:max_words], " "), words=len(words))

pipeline shout(word: str) -> str:
    """Say a word louder."""
    return text.upper(word) + "!"
'''


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "triage.pipe").write_text(TRIAGE)
    return tmp_path


def serve_command(workspace: Path, *args: str):
    from mcp import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=["-m", "orgtree_lang.cli.main", "mcp", "serve", *args],
                                 cwd=str(workspace), env={"PIPE_NO_PLUGINS": "1", "PYTHONSAFEPATH": "1"})


def session(server, work):
    """Connect the SDK's client to `server` (stdio parameters or a URL) and return what `work(client)` returns."""
    from mcp import Client

    async def main():
        async with Client(server) as client:
            return await work(client)

    return anyio.run(main)


def runs(workspace: Path) -> list[dict]:
    result = pipe("runs", "--json", cwd=workspace)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_the_tools_carry_schemas_from_the_signatures_and_docstrings(workspace):
    async def work(client):
        return (await client.list_tools()).tools

    tools = {tool.name: tool for tool in session(serve_command(workspace, "tools/triage.pipe",
                                                               "tools/triage.pipe:shout"), work)}
    assert set(tools) == {"triage", "shout"}
    triage = tools["triage"]
    assert triage.description == "Title a bug report with its first words."
    assert triage.input_schema["required"] == ["report"]
    assert triage.input_schema["properties"]["report"] == {"type": "string", "description": "the text of the report"}
    assert triage.input_schema["properties"]["max_words"]["default"] == 3
    result = triage.output_schema["properties"]["result"]
    assert result["properties"] == {"title": {"type": "string"}, "words": {"type": "integer"}}
    assert result["required"] == ["title"]
    assert tools["shout"].input_schema["properties"] == {"word": {"type": "string"}}


def test_a_tool_call_is_a_durable_run_of_the_workspace(workspace):
    async def work(client):
        return await client.call_tool("triage", {"report": "the export button crashes the app"})

    result = session(serve_command(workspace, "tools/triage.pipe"), work)
    assert not result.is_error
    assert result.structured_content == {"result": {"title": "the export button", "words": 6}}
    run_id = result.meta["orgtree/run_id"]
    (run,) = runs(workspace)
    assert run["id"] == run_id and run["status"] == "done"
    tree = pipe("tree", run_id, cwd=workspace)
    assert "text.split  skill  ok" in tree.stdout


def test_a_failing_run_is_a_tool_error_with_the_pipe_message(workspace):
    async def work(client):
        return await client.call_tool("triage", {"report": "   "})

    result = session(serve_command(workspace, "tools/triage.pipe"), work)
    assert result.is_error
    text = result.content[0].text
    assert "the report is empty" in text and "triage.pipe:18" in text
    assert [run["status"] for run in runs(workspace)] == ["failed"]


def test_bad_arguments_and_unknown_tools_are_tool_errors(workspace):
    async def work(client):
        return [await client.call_tool("triage", {"report": 3}),
                await client.call_tool("triage", {"reprot": "x"}),
                await client.call_tool("nope", {}),
                await client.call_tool("triage", {"report": json.loads("[" * 120 + "]" * 120)})]

    wrong_type, misspelled, unknown, deep = session(serve_command(workspace, "tools/triage.pipe"), work)
    assert deep.is_error and "input `report` nests lists or dicts 120 deep: expected at most 100 levels" in \
        deep.content[0].text
    assert wrong_type.is_error and "input `report` (str): got 3" in wrong_type.content[0].text
    assert misspelled.is_error and "did you mean `report`?" in misspelled.content[0].text
    assert unknown.is_error and "no tool `nope` here; the tools are: triage" in unknown.content[0].text
    assert runs(workspace) == []  # refused before a run started


def test_learned_skills_and_the_configured_pipelines_are_served(workspace):
    from orgtree_lang.run.registries import workspace_registry
    from orgtree_lang.pool.learned import LearnedStore

    LearnedStore(workspace).save("double", 'pipeline main(n: int) -> int:\n    """Twice n."""\n    return n * 2\n',
                                 "Double a number.", {}, workspace_registry(workspace))
    (workspace / "orgtree.toml").write_text('[mcp]\nexpose = ["tools/triage.pipe:shout"]\n')

    async def work(client):
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        return tools, await client.call_tool("learned_double", {"n": 21})

    tools, doubled = session(serve_command(workspace), work)
    assert sorted(tools) == ["learned_double", "shout"]
    assert tools["learned_double"].description == "Double a number."  # the learned skill's own description
    assert tools["learned_double"].input_schema["properties"] == {"n": {"type": "integer"}}
    assert doubled.structured_content == {"result": 42}
    assert [run["status"] for run in runs(workspace)] == ["done"]


def test_serving_nothing_says_how_to_choose(workspace):
    result = subprocess.run([sys.executable, "-m", "orgtree_lang.cli.main", "mcp", "serve"], cwd=workspace,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "no pipelines to serve" in result.stderr and "[mcp] expose" in result.stderr


def http_serve(workspace: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "orgtree_lang.cli.main", "mcp", "serve", "tools/triage.pipe:shout",
                             *args], cwd=workspace, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PIPE_NO_PLUGINS="1", **(env or {})))


def stop(server: subprocess.Popen) -> None:
    server.terminate()
    server.wait(timeout=10)


def http_session(url: str, work, headers: dict | None = None, uds: str | None = None):
    """The SDK's streamable HTTP client, with the headers given (and over a unix socket when `uds`)."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def main():
        client = httpx2.AsyncClient(headers=headers or {}, transport=httpx2.AsyncHTTPTransport(uds=uds) if uds else None,
                                    timeout=30)
        async with client, Client(streamable_http_client(url, http_client=client)) as session:
            return await work(session)

    return anyio.run(main)


async def shout(client):
    return await client.call_tool("shout", {"word": "hey"})


def test_streamable_http_on_localhost_needs_the_printed_token(workspace):
    import re
    import urllib.error
    import urllib.request

    server = http_serve(workspace, "--http", "--port", "0")
    try:
        url = re.search(r"at (http://127\.0\.0\.1:\d+/mcp)", server.stderr.readline()).group(1)
        token = re.search(r"`Authorization: Bearer (\S+)`", server.stderr.readline()).group(1)
        for headers in ({}, {"Authorization": "Bearer wrong-" + token}, {"Authorization": token}):
            request = urllib.request.Request(url, data=b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":'
                                             b'{"name":"shout","arguments":{"word":"x"}}}', headers={
                "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=30)
            assert refused.value.code == 401 and "Bearer" in refused.value.headers["WWW-Authenticate"]
        with pytest.raises(Exception):
            http_session(url, shout)  # the SDK's client without the token is refused too
        result = http_session(url, shout, headers={"Authorization": f"Bearer {token}"})
        assert result.structured_content == {"result": "HEY!"}
    finally:
        stop(server)
    assert [run["status"] for run in runs(workspace)] == ["done"]  # the refused requests ran nothing


def test_the_token_may_come_from_the_environment_but_not_a_short_one(workspace):
    short = subprocess.run([sys.executable, "-m", "orgtree_lang.cli.main", "mcp", "serve", "tools/triage.pipe:shout",
                            "--http"], cwd=workspace, capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, PIPE_NO_PLUGINS="1", PIPE_MCP_TOKEN="abc"))
    assert short.returncode == 2 and "$PIPE_MCP_TOKEN is 3 characters long" in short.stderr
    server = http_serve(workspace, "--http", "--port", "0", env={"PIPE_MCP_TOKEN": "a-token-the-person-chose"})
    try:
        import re

        url = re.search(r"at (http://127\.0\.0\.1:\d+/mcp)", server.stderr.readline()).group(1)
        assert "Bearer a-token-the-person-chose" in server.stderr.readline()
        result = http_session(url, shout, headers={"Authorization": "Bearer a-token-the-person-chose"})
        assert result.structured_content == {"result": "HEY!"}
    finally:
        stop(server)


def test_a_unix_socket_is_only_the_owners_and_needs_no_token(workspace, tmp_path):
    import stat

    path = tmp_path / "mcp.sock"
    server = http_serve(workspace, "--socket", str(path))
    try:
        assert f"on the unix socket {path} (mode 0600" in server.stderr.readline()
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and stat.S_ISSOCK(os.stat(path).st_mode)
        result = http_session("http://localhost/mcp", shout, uds=str(path))
        assert result.structured_content == {"result": "HEY!"}
    finally:
        stop(server)
    assert not path.exists()
    path.write_text("not a socket")
    taken = subprocess.run([sys.executable, "-m", "orgtree_lang.cli.main", "mcp", "serve", "tools/triage.pipe:shout",
                            "--socket", str(path)], cwd=workspace, capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, PIPE_NO_PLUGINS="1"))
    assert taken.returncode == 2 and f"cannot listen on {path}" in taken.stderr and path.read_text() == "not a socket"


def test_a_served_pipeline_resolves_its_ambiguous_block_with_the_models_given(tmp_path):
    """examples/ambiguous_triage.pipe with the scripted author and reviewer of examples/models/ (their story is in
    tests/test_examples.py): the module written for `classify` answers `feature` for a request."""
    import shutil

    examples = Path(__file__).resolve().parent.parent / "examples"
    shutil.copytree(examples, tmp_path / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    from mcp import StdioServerParameters

    server = StdioServerParameters(
        command=sys.executable, cwd=str(tmp_path), env={"PIPE_NO_PLUGINS": "1", "PYTHONSAFEPATH": "1"},
        args=["-m", "orgtree_lang.cli.main", "mcp", "serve", "--workspace", str(workspace),
              str(tmp_path / "examples" / "ambiguous_triage.pipe"),
              "--model", "scripted:examples/models/triage_author.yaml",
              "--review-model", "scripted:examples/models/triage_reviewer.yaml"])

    async def work(client):
        return await client.call_tool("ambiguous_triage", {"report": "Please add CSV export"})

    result = session(server, work)
    assert not result.is_error, result.content[0].text
    assert result.structured_content == {"result": "feature"}
    assert [run["status"] for run in runs(workspace)] == ["done"]
    assert list((workspace / ".orgtree" / "modules").rglob("*.pipe"))  # the module written for the block


def test_choosing_pipelines_that_are_not_there_says_what_is(workspace):
    from orgtree_lang.run.registries import workspace_registry
    from orgtree_lang.mcp_server.catalog import pipeline_tools
    from orgtree_lang.runtime.errors import UsageError

    registry = workspace_registry(workspace)
    (workspace / "two.pipe").write_text('pipeline a() -> int:\n    return 1\n\npipeline b() -> int:\n    return 2\n')
    cases = {
        "nothing.pipe": "no such pipeline file",
        "two.pipe": "has no `main` pipeline and several others: name one as",
        "two.pipe:c": "has no pipeline `c`",
    }
    for ref, message in cases.items():
        with pytest.raises(UsageError) as caught:
            pipeline_tools(workspace, registry, [ref], learned=False)
        assert message in caught.value.message, ref
    with pytest.raises(UsageError) as caught:
        pipeline_tools(workspace, registry, ["two.pipe:a", "two.pipe:a"], learned=False)
    assert "would both be the tool `a`" in caught.value.message
    assert [t.name for t in pipeline_tools(workspace, registry, ["two.pipe:b"], learned=False)] == ["b"]


def test_the_mcp_tables_of_orgtree_toml_are_checked(tmp_path):
    from orgtree_lang.mcp_client.settings import exposed, server_specs
    from orgtree_lang.runtime.config import ConfigError

    config = tmp_path / "orgtree.toml"
    bad = {
        '[mcp.servers.x]\ncommand = ["a"]\nurl = "http://127.0.0.1:1/mcp"\n': "needs exactly one of `command`",
        '[mcp.servers.x]\ncomand = ["a"]\n': "unknown key `comand`",
        '[mcp.servers.x]\nurl = "ftp://host/mcp"\n': "url must be an http:// or https:// URL",
        '[mcp.servers.x]\ncommand = ["a"]\ntimeout = 0\n': "timeout must be a positive number of seconds",
        '[mcp.servers."a-b"]\ncommand = ["a"]\n': "a server name must be letters, digits and `_`",
    }
    for text, message in bad.items():
        config.write_text(text)
        with pytest.raises(ConfigError) as caught:
            server_specs(config)
        assert message in caught.value.message, text
    config.write_text('[mcp]\nexpose = "tools/a.pipe"\n')
    with pytest.raises(ConfigError):
        exposed(config)
    config.write_text('[mcp]\nexpose = ["tools/a.pipe"]\n\n[mcp.servers.files]\ncommand = ["srv"]\ncwd = "srv"\n'
                      'env = { TOKEN = "t" }\n')
    (spec,) = server_specs(config)
    assert (spec.namespace, spec.command, spec.cwd, spec.env) == ("mcp.files", ("srv",), str(tmp_path / "srv"),
                                                                   (("TOKEN", "t"),))
    assert exposed(config) == ["tools/a.pipe"]
