"""An MCP server's start is off the check's path and overlaps the compile: its tool list is kept (keyed by its command
and the mtimes of its code), so a later `pipe check` starts nothing, an edit to the server lists it again, and
`pipe run` starts a server its program uses while compiling, once (tests/mcp_servers/notes_server.py counts starts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli_testing import pipe
from orgtree_lang.cli.run import used_namespaces

SERVER = Path(__file__).resolve().parent / "mcp_servers" / "notes_server.py"
PROGRAM = '''# notes
use text
use mcp.notes

pipeline main(text: str) -> str:
    return text.upper(mcp.notes.shout(text))
'''




@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    server = tmp_path / "notes_server.py"
    server.write_text(SERVER.read_text())  # a copy of its own, whose mtime the test may change
    command = json.dumps([sys.executable, str(server), str(tmp_path / "calls.txt")])
    (tmp_path / "orgtree.toml").write_text(f"[mcp.servers.notes]\ncommand = {command}\n")
    (tmp_path / "p.pipe").write_text(PROGRAM)
    return tmp_path


def starts(root: Path) -> int:
    path = root / "calls.txt.starts"
    return len(path.read_text().splitlines()) if path.is_file() else 0


def test_a_run_starts_the_server_it_uses_once_and_a_later_check_starts_none(workspace):
    run = pipe("run", "p.pipe", "-i", "text=hi", cwd=workspace)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "HI!\n" and starts(workspace) == 1  # the early start and the first call share one
    assert pipe("check", "p.pipe", cwd=workspace).returncode == 0
    assert starts(workspace) == 1  # checked against the tool list the run kept
    again = pipe("run", "p.pipe", "-i", "text=yo", "--no-journal", cwd=workspace)
    assert again.stdout == "YO!\n" and starts(workspace) == 2


def test_an_edited_server_is_listed_again(workspace):
    assert pipe("check", "p.pipe", cwd=workspace).returncode == 0
    assert starts(workspace) == 1
    server = workspace / "notes_server.py"
    stat = server.stat()
    os.utime(server, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert pipe("check", "p.pipe", cwd=workspace).returncode == 0
    assert starts(workspace) == 2


def test_a_data_file_the_server_writes_does_not_count_as_its_code(workspace):
    assert pipe("check", "p.pipe", cwd=workspace).returncode == 0
    (workspace / "calls.txt").write_text("changed\n")  # an argument of its command, but not code
    assert pipe("check", "p.pipe", cwd=workspace).returncode == 0
    assert starts(workspace) == 1


def test_the_early_start_reads_the_use_lines_at_the_top_only(tmp_path):
    program = tmp_path / "p.pipe"
    program.write_text(PROGRAM + "\n# use mcp.other\nuse mcp.late\n")
    assert used_namespaces(program) == ["text", "mcp.notes"]
    program.write_text("use mcp.a, mcp.b  # two\n\npipeline main() -> int:\n    return 1\n")
    assert used_namespaces(program) == ["mcp.a", "mcp.b"]
    assert used_namespaces(tmp_path / "missing.pipe") == []


RAW_SERVER = Path(__file__).resolve().parent / "mcp_servers" / "raw_server.py"


@pytest.fixture
def raw_workspace(tmp_path: Path) -> Path:
    command = json.dumps([sys.executable, str(RAW_SERVER)])
    (tmp_path / "orgtree.toml").write_text(f"[mcp.servers.raw]\ncommand = {command}\n")
    return tmp_path


def _run(root: Path, body: str) -> subprocess.CompletedProcess:
    (root / "p.pipe").write_text(f"use mcp.raw\n\npipeline main() -> int:\n{body}")
    return pipe("run", "p.pipe", "--no-journal", cwd=root)


def test_the_stdio_client_answers_a_servers_ping_and_reads_a_result_longer_than_a_stream_buffer(raw_workspace):
    result = _run(raw_workspace, "    return len(mcp.raw.big(300000))\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "300000\n"


def test_a_json_rpc_error_is_the_calls_error_with_the_servers_message(raw_workspace):
    result = _run(raw_workspace, "    return len(mcp.raw.refuse(7))\n")
    assert result.returncode == 70
    assert "failed to run the tool `refuse`" in result.stderr and "no thanks to 7" in result.stderr


def test_a_server_that_exits_mid_call_fails_the_call_instead_of_hanging(raw_workspace):
    result = _run(raw_workspace, "    return len(mcp.raw.die(1))\n")
    assert result.returncode == 70
    assert "failed to run the tool `die`" in result.stderr and "exit status 3" in result.stderr


def test_a_stdio_server_is_called_without_importing_the_mcp_sdk(raw_workspace):
    (raw_workspace / "p.pipe").write_text("use mcp.raw\n\npipeline main() -> int:\n    return len(mcp.raw.big(5))\n")
    script = ("import sys\nfrom orgtree_lang.cli.main import main\ncode = main(['run', 'p.pipe', '--no-journal'])\n"
              "print('SDK' if any(m == 'mcp' or m.startswith('mcp.') for m in sys.modules) else 'no SDK')\n")
    ran = subprocess.run([sys.executable, "-c", script], cwd=raw_workspace, capture_output=True, text=True,
                         timeout=120)
    assert ran.stdout.split() == ["5", "no", "SDK"], ran.stderr


def test_a_plain_run_of_a_program_using_an_sdk_server_imports_no_telemetry_web_stack_or_sdk(workspace):
    # The notes server is the SDK's own server class, whose process imports opentelemetry, uvicorn and starlette
    # (the SDK's package imports them); `pipe run`'s process speaks JSON-RPC lines to it and must import none of them.
    script = ("import sys\nfrom orgtree_lang.cli.main import main\ncode = main(['run', 'p.pipe', '-i', 'text=hi'])\n"
              "heavy = ('opentelemetry', 'uvicorn', 'starlette', 'mcp')\n"
              "print('EXIT', code, 'IMPORTED', sorted({m.split('.')[0] for m in sys.modules} & set(heavy)))\n")
    ran = subprocess.run([sys.executable, "-c", script], cwd=workspace, capture_output=True, text=True, timeout=120)
    assert ran.stdout.splitlines() == ["HI!", "EXIT 0 IMPORTED []"], ran.stderr
    assert starts(workspace) == 1  # the server really ran, with the SDK it imports in its own process
