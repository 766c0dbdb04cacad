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

from orgtree_lang.cli.run import used_namespaces

SERVER = Path(__file__).resolve().parent / "mcp_servers" / "notes_server.py"
PROGRAM = '''# notes
use text
use mcp.notes

pipeline main(text: str) -> str:
    return text.upper(mcp.notes.shout(text))
'''


def pipe(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "orgtree_lang.cli.main", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


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
