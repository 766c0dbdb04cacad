"""MCP servers listed in orgtree.toml are skills `mcp.NAME.TOOL`: a real server subprocess (tests/mcp_servers/)
called by `pipe run`, journaled (replay makes no call), typed by its schemas, with clear errors."""

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

from cli_testing import PipeResult  # noqa: E402
from cli_testing import pipe as run_pipe  # noqa: E402

SERVER = Path(__file__).resolve().parent / "mcp_servers" / "notes_server.py"

PROGRAM = '''use mcp.notes

pipeline main(text: str) -> str:
    n = mcp.notes.word_count(text, minimum_length=3)
    tags = mcp.notes.tag("hello", ["a", "b"])
    return str(n) + " " + tags["b"] + " " + mcp.notes.shout(text)
'''


def pipe(*args, cwd: Path) -> PipeResult:
    """The `pipe` command in this process; the MCP servers it starts are real processes and stop when it ends."""
    return run_pipe(*args, cwd=cwd)


def calls(root: Path) -> list[str]:
    path = root / "calls.txt"
    return path.read_text().splitlines() if path.is_file() else []


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace whose orgtree.toml declares the test server as `notes`, which logs its calls to calls.txt."""
    command = json.dumps([sys.executable, str(SERVER), str(tmp_path / "calls.txt")])
    (tmp_path / "orgtree.toml").write_text(f"[mcp.servers.notes]\ncommand = {command}\n")
    (tmp_path / "p.pipe").write_text(PROGRAM)
    return tmp_path


def test_a_program_calls_the_tools_of_an_mcp_server(workspace):
    result = pipe("run", "p.pipe", "-i", "text=the big red fox", cwd=workspace)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "4 HELLO THE BIG RED FOX!\n"
    assert calls(workspace) == ['word_count {"minimum_length": 3, "text": "the big red fox"}',
                                'tag {"tags": ["a", "b"], "title": "hello"}',
                                'shout {"text": "the big red fox"}']


def test_a_replay_makes_no_call_to_the_server(workspace):
    run = pipe("run", "p.pipe", "-i", "text=one two three", "--json", cwd=workspace)
    assert run.returncode == 0, run.stderr
    run_id = json.loads(run.stdout)["run_id"]
    assert len(calls(workspace)) == 3
    starts = (workspace / "calls.txt.starts").read_text()
    replay = pipe("replay", run_id, cwd=workspace)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "3 journaled step(s) reused, 0 outside call(s)" in replay.stderr
    assert "identical to the original run" in replay.stderr
    assert len(calls(workspace)) == 3
    assert (workspace / "calls.txt.starts").read_text() == starts  # its saved tool list checked the program again
    (workspace / ".orgtree" / "mcp" / "notes.tools.json").unlink()
    again = pipe("replay", run_id, cwd=workspace)
    assert "identical to the original run" in again.stderr
    assert len(calls(workspace)) == 3  # no list saved: the server starts to list its tools, and still runs none
    assert len((workspace / "calls.txt.starts").read_text().splitlines()) == len(starts.splitlines()) + 1


def test_the_calls_are_skill_nodes_of_the_run_tree(workspace):
    run = pipe("run", "p.pipe", "-i", "text=a bb ccc", "--json", cwd=workspace)
    tree = pipe("tree", json.loads(run.stdout)["run_id"], cwd=workspace)
    assert tree.returncode == 0, tree.stderr
    assert "mcp.notes.word_count  skill  ok" in tree.stdout
    assert 'out: {"a": "HELLO", "b": "HELLO"}' in tree.stdout


def test_pipe_skills_lists_the_tools_with_types_from_their_schemas(workspace):
    listed = pipe("skills", cwd=workspace)
    assert listed.returncode == 0, listed.stderr
    assert "mcp.notes.word_count  Count the words of a text" in listed.stdout
    one = pipe("skills", "mcp.notes.tag", cwd=workspace)
    assert one.stdout.splitlines()[0] == "mcp.notes.tag(title: str, tags: list[str]) -> dict[str, str]"
    assert "has effects; from mcp server notes" in one.stdout
    counted = pipe("skills", "mcp.notes.word_count", "--json", cwd=workspace)
    (skill,) = json.loads(counted.stdout)
    assert skill["signature"] == "mcp.notes.word_count(text: str, minimum_length: int = 1) -> int"
    assert calls(workspace) == []  # listing tools calls none


def test_the_budget_counts_mcp_calls(workspace):
    result = pipe("run", "p.pipe", "-i", "text=x", "--max-skill-calls", "1", cwd=workspace)
    assert result.returncode == 70
    assert "skill_calls" in result.stderr or "skill calls" in result.stderr
    assert len(calls(workspace)) == 1


def test_parallel_branches_overlap_their_mcp_calls(workspace):
    (workspace / "naps.pipe").write_text(
        'use mcp.notes\n\npipeline main() -> str:\n    parallel:\n'
        '        a = mcp.notes.nap(1.5, "a")\n        b = mcp.notes.nap(1.5, "b")\n        c = mcp.notes.nap(1.5, "c")\n'
        '    return a + b + c\n')
    result = pipe("run", "naps.pipe", "--json", cwd=workspace)
    assert result.returncode == 0, result.stderr
    envelope = json.loads(result.stdout)
    assert envelope["output"] == "abc"
    assert len(calls(workspace)) == 3
    assert envelope["usage"]["seconds"] < 3.0  # one after another they take 4.5 s


def test_a_tool_call_longer_than_the_timeout_is_an_error_that_names_the_setting(workspace):
    config = workspace / "orgtree.toml"
    config.write_text(config.read_text() + "timeout = 0.5\n")
    (workspace / "nap.pipe").write_text('use mcp.notes\n\npipeline main() -> str:\n    return mcp.notes.nap(5, "late")\n')
    started = time.monotonic()
    result = pipe("run", "nap.pipe", cwd=workspace)
    assert result.returncode == 70
    assert "did not run the tool `nap` within 0.5 s" in result.stderr
    assert "raise `timeout` in [mcp.servers.notes]" in result.stderr
    assert time.monotonic() - started < 30


def test_checking_a_program_without_mcp_starts_no_server(tmp_path):
    marker = tmp_path / "started"
    command = json.dumps([sys.executable, "-c", f"open({str(marker)!r}, 'w')"])
    (tmp_path / "orgtree.toml").write_text(f"[mcp.servers.slow]\ncommand = {command}\n")
    (tmp_path / "p.pipe").write_text('use text\n\npipeline main() -> str:\n    return text.upper("x")\n')
    assert pipe("check", "p.pipe", cwd=tmp_path).returncode == 0
    assert pipe("run", "p.pipe", cwd=tmp_path).stdout == "X\n"
    assert not marker.exists()


def test_an_unknown_server_says_where_servers_are_declared(workspace):
    (workspace / "q.pipe").write_text('use mcp.files\n\npipeline main() -> str:\n    return "x"\n')
    result = pipe("check", "q.pipe", cwd=workspace)
    assert result.returncode == 65
    assert "unknown skill or namespace `mcp.files`" in result.stderr
    assert "[mcp.servers.files]" in result.stderr


def test_an_unknown_tool_and_bad_arguments_are_compile_errors(workspace):
    (workspace / "q.pipe").write_text('use mcp.notes\n\npipeline main() -> int:\n'
                                      '    mcp.notes.shuot("a")\n    return mcp.notes.word_count(3)\n')
    result = pipe("check", "q.pipe", cwd=workspace)
    assert result.returncode == 65
    assert "namespace `mcp.notes` has no skill `shuot`" in result.stderr
    assert "did you mean `mcp.notes.shout`?" in result.stderr
    assert "argument `text` of skill `mcp.notes.word_count` expects str, got int" in result.stderr
    assert calls(workspace) == []


def test_a_tool_error_is_a_runtime_error_with_the_servers_message(workspace):
    result = pipe("run", "p.pipe", "-i", "text=", cwd=workspace)
    assert result.returncode == 70
    assert "mcp.notes.shout: the tool failed" in result.stderr
    assert "shout needs some text" in result.stderr
    assert "p.pipe:6" in result.stderr


def test_a_server_that_fails_to_start_is_quoted_with_the_fix(tmp_path):
    command = json.dumps([sys.executable, "-c", "import sys; print('cannot open notes.db', file=sys.stderr); "
                                                "sys.exit(3)"])
    (tmp_path / "orgtree.toml").write_text(f"[mcp.servers.broken]\ncommand = {command}\n")
    (tmp_path / "p.pipe").write_text('use mcp.broken\n\npipeline main() -> str:\n    return mcp.broken.x()\n')
    result = pipe("run", "p.pipe", cwd=tmp_path)
    assert result.returncode != 0
    assert "MCP server `broken`" in result.stderr and "failed to start" in result.stderr
    assert "cannot open notes.db" in result.stderr  # its stderr, quoted
    assert "check `command` in [mcp.servers.broken] of orgtree.toml" in result.stderr


def test_a_server_command_that_does_not_exist(tmp_path):
    (tmp_path / "orgtree.toml").write_text('[mcp.servers.ghost]\ncommand = ["no-such-program-for-mcp"]\n')
    (tmp_path / "p.pipe").write_text('use mcp.ghost\n\npipeline main() -> str:\n    return mcp.ghost.x()\n')
    result = pipe("check", "p.pipe", cwd=tmp_path)
    assert "no such program: no-such-program-for-mcp" in result.stderr
    assert "[mcp.servers.ghost]" in result.stderr


def test_a_malformed_server_table_names_the_key(tmp_path):
    (tmp_path / "orgtree.toml").write_text('[mcp.servers.notes]\ncommand = "python server.py"\n')
    (tmp_path / "p.pipe").write_text('pipeline main() -> str:\n    return "x"\n')
    result = pipe("check", "p.pipe", cwd=tmp_path)
    assert result.returncode == 2
    assert "[mcp.servers.notes]: command must be a non-empty list of strings" in result.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def http_server(tmp_path: Path):
    """The test server on streamable HTTP at 127.0.0.1:PORT/mcp, logging its calls to tmp_path/calls.txt."""
    port = _free_port()
    process = subprocess.Popen([sys.executable, str(SERVER), str(tmp_path / "calls.txt"), str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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


def test_an_http_server_on_the_allowlist_is_called(tmp_path, http_server):
    origin = http_server.rsplit("/", 1)[0]
    (tmp_path / "orgtree.toml").write_text(f'[http]\nallow = ["{origin}"]\n\n[mcp.servers.notes]\nurl = "{http_server}"\n')
    (tmp_path / "p.pipe").write_text(PROGRAM)
    result = pipe("run", "p.pipe", "-i", "text=one two three", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "3 HELLO ONE TWO THREE!\n"
    assert len(calls(tmp_path)) == 3


def test_an_http_server_off_the_allowlist_is_refused(tmp_path, http_server):
    (tmp_path / "orgtree.toml").write_text(f'[mcp.servers.notes]\nurl = "{http_server}"\n')
    (tmp_path / "p.pipe").write_text(PROGRAM)
    result = pipe("run", "p.pipe", "-i", "text=x", cwd=tmp_path)
    assert result.returncode != 0
    assert "is not on the workspace's URL allowlist" in result.stderr
    assert f'add "{http_server.rsplit("/", 1)[0]}" to `allow` in the [http] table' in result.stderr
    assert calls(tmp_path) == []


def test_the_example_of_docs_mcp_md_runs_as_shown(tmp_path):
    """docs/mcp.md's server, orgtree.toml and program, run by its console lines (python: this interpreter)."""
    import re
    import shlex

    doc = (Path(__file__).resolve().parent.parent / "docs" / "mcp.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```(\w+)\n(.*?)```", doc, re.S)
    files = {}
    for kind, text in blocks:
        named = re.match(r"# (\S+\.(?:py|toml|pipe))\n", text)
        if named and kind in ("python", "toml", "pipe") and named.group(1) not in files:
            files[named.group(1)] = text
    assert set(files) == {"notes_server.py", "orgtree.toml", "count.pipe"}
    files["orgtree.toml"] = files["orgtree.toml"].replace('"python"', json.dumps(sys.executable))
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    sessions = [text for kind, text in blocks if kind == "console"]
    assert sessions
    for session in sessions:
        command, _, expected = session.partition("\n")
        argv = shlex.split(command.removeprefix("$ "))
        assert argv[0] == "pipe"
        result = pipe(*argv[1:], cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith(expected), (command, result.stdout)


def test_a_lazy_namespace_is_known_before_it_is_loaded_and_loaded_once():
    from orgtree_lang.runtime.skills import SkillRegistry, make_skill

    def ping(text: str) -> str:
        """Answer."""
        return text

    loads = []

    def load():
        loads.append(1)
        return [make_skill(ping, name="mcp.box.ping", origin="mcp server box")]

    registry = SkillRegistry()
    registry.add_lazy("mcp.box", "key-1", load)
    before = registry.fingerprint()
    assert {"mcp", "mcp.box"} <= registry.namespaces() and loads == []
    assert registry.get("text.nothing") is None and loads == []
    assert registry.get("mcp.box.ping").signature() == "mcp.box.ping(text: str) -> str"
    assert registry.get("mcp.box.nope") is None
    assert [s.name for s in registry.in_namespace("mcp")] == ["mcp.box.ping"]
    assert loads == [1]
    assert registry.fingerprint() == before  # the key stands for the tools, loaded or not
    other = SkillRegistry()
    other.add_lazy("mcp.box", "key-2", load)
    assert other.fingerprint() != before


def test_json_schemas_become_pipe_types():
    from orgtree_lang.mcp_client.skills import pipe_type

    cases = {
        '{"type": "string"}': "str", '{"type": "integer"}': "int", '{"type": "number"}': "float",
        '{"type": "array", "items": {"type": "boolean"}}': "list[bool]",
        '{"type": "object", "additionalProperties": {"type": "integer"}}': "dict[str, int]",
        '{"type": "object", "properties": {"a": {"type": "string"}}}': "dict[str, any]",
        '{"type": ["string", "null"]}': "str?",
        '{"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]}': "list[str]?",
        '{"anyOf": [{"type": "string"}, {"type": "integer"}]}': "any",
        '{"enum": ["a", "b"]}': "str", '{"$ref": "#/$defs/Thing"}': "any", "{}": "any",
    }
    assert {schema: str(pipe_type(json.loads(schema))) for schema in cases} == cases


def test_a_program_that_uses_an_mcp_server_is_not_cached(tmp_path):
    from orgtree_lang.compile.api import compile_source
    from orgtree_lang.runtime.skills import SkillRegistry, make_skill

    def ping(text: str) -> str:
        """Answer."""
        return text

    registry = SkillRegistry()
    registry.add_lazy("mcp.box", "key", lambda: [make_skill(ping, name="mcp.box.ping")])
    cache = tmp_path / "cache"
    compile_source('use mcp.box\n\npipeline main() -> str:\n    return mcp.box.ping("x")\n', "a.pipe", registry, cache)
    assert not cache.exists() or list(cache.iterdir()) == []
    compile_source('pipeline main() -> str:\n    return "x"\n', "b.pipe", registry, cache)
    assert len(list(cache.iterdir())) == 1


def test_the_decomposer_is_shown_the_tools_of_a_server_the_block_may_use():
    from orgtree_lang.compile.code import AmbiguousSpec
    from orgtree_lang.decompose.prompt import allowed_skills
    from orgtree_lang.runtime.skills import SkillRegistry, make_skill
    from orgtree_lang.syntax.spans import Span

    def ping(text: str) -> str:
        """Answer."""
        return text

    def failing():
        from orgtree_lang.runtime.errors import SkillError

        raise SkillError("MCP server `down` failed to start")

    registry = SkillRegistry()
    registry.add_lazy("mcp.box", "key", lambda: [make_skill(ping, name="mcp.box.ping")])
    registry.add_lazy("mcp.down", "key", failing)
    registry.add_lazy("mcp.other", "key", lambda: [make_skill(ping, name="mcp.other.ping")])
    spec = AmbiguousSpec("answer", "Answer.", (), (), ("mcp.box", "mcp.down"), "main", Span("a.pipe", 1, 1, 1, 1))
    assert [skill.name for skill in allowed_skills(spec, registry)] == ["mcp.box.ping"]
    assert registry.lazy_namespaces() == ["mcp.down", "mcp.other"]  # a server the block may not use is not started


ODD_SERVER = Path(__file__).resolve().parent / "mcp_servers" / "odd_names_server.py"


def test_tools_with_odd_names_are_renamed_or_skipped_with_a_warning_and_the_rest_work(tmp_path):
    (tmp_path / "orgtree.toml").write_text(f"[mcp.servers.odd]\ncommand = {json.dumps([sys.executable, str(ODD_SERVER)])}\n")
    listed = pipe("skills", "mcp.odd", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    names = [line.split()[0] for line in listed.stdout.splitlines() if line.startswith("mcp.odd.")]
    assert names == ["mcp.odd._9lives", "mcp.odd._moji", "mcp.odd.a_b", "mcp.odd.if_", "mcp.odd.plain"]
    assert 'warning: MCP server `odd`: the tool "" is skipped: its name has no letter or digit' in listed.stderr
    assert 'the tool "日本" is skipped' in listed.stderr
    assert 'the tool "a-b" is skipped: as a .pipe name it would be `mcp.odd.a_b`, which the tool "a_b" already has' \
        in listed.stderr
    assert 'the tool "émoji" is called `mcp.odd._moji` in .pipe' in listed.stderr
    (tmp_path / "odd.pipe").write_text('use mcp.odd\n\npipeline main() -> str:\n    return mcp.odd.plain("p") + " " + '
                                       'mcp.odd._moji("m") + " " + mcp.odd.if_("i") + " " + mcp.odd.a_b("u")\n')
    ran = pipe("run", "odd.pipe", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "plain:p émoji:m if:i a_b:u"  # each call reaches the tool by its MCP name
