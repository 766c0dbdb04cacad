"""The owner of "a run must never change what a later run executes" (runtime/host_code.py): what it protects,
what it leaves writable, and what a person may open with `[fs] writable`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_testing import PipeResult, pipe

from orgtree_lang.runtime.workspace import Workspace

WRITER = '''use fs

pipeline main(name: str) -> int:
    return fs.write(name, "print('hi')\\n")
'''


def pipe_in(folder: Path, *args: str) -> PipeResult:
    """`pipe ARGS` in `folder`, in this process (what is protected is the workspace's files, not a process)."""
    return pipe(*args, cwd=folder, env={"PIPE_NO_PLUGINS": "1"})


@pytest.fixture
def served(tmp_path: Path) -> Path:
    """A workspace that starts `python tools/server.py` (with `tools/` a folder of its own) as an MCP server."""
    (tmp_path / "tools" / "helpers").mkdir(parents=True)
    (tmp_path / "tools" / "server.py").write_text("import helpers\n")
    (tmp_path / "tools" / "helpers" / "__init__.py").write_text("")
    (tmp_path / "data").mkdir()
    (tmp_path / "orgtree.toml").write_text(
        '[mcp.servers.notes]\ncommand = ["python", "tools/server.py"]\ncwd = "tools"\n')
    (tmp_path / "writer.pipe").write_text(WRITER)
    return tmp_path


def refusal(root: Path, path: str, **kwargs) -> str | None:
    workspace = Workspace(root, **kwargs)
    found = workspace.write_refusal(workspace.resolve(path))
    return None if found is None else found.what


@pytest.mark.parametrize("path", ["tools/server.py", "tools/mcp.py", "tools/helpers/data.txt", "tools/new/x.py",
                                  "tools/__pycache__/a.pyc", "tools/node_modules/x/index.js"])
def test_the_code_an_mcp_server_executes_and_imports_is_protected(served, path):
    assert "is code the host executes" in refusal(served, path)
    assert "[mcp.servers.notes] command" in refusal(served, path)


@pytest.mark.parametrize("path", ["tools/results.txt", "tools/out/report.md", "data/table.csv", "notes.py"])
def test_data_beside_the_server_and_code_elsewhere_stay_writable(served, path):
    assert refusal(served, path) is None


def test_a_script_the_settings_name_is_protected_before_it_exists(tmp_path):
    (tmp_path / "orgtree.toml").write_text('[mcp.servers.late]\ncommand = ["node", "srv/index.mjs"]\n')
    assert "is code the host executes" in refusal(tmp_path, "srv/index.mjs")
    assert "is code the host executes" in refusal(tmp_path, "srv/lib.js")


@pytest.mark.parametrize("path", [".vscode/settings.json", "sub/.idea/workspace.xml", "a.sublime-project",
                                  ".sublime/x", ".git/hooks/pre-commit", ".envrc", "Makefile", "pyproject.toml"])
def test_editor_and_tool_settings_are_protected_wherever_they_are(tmp_path, path):
    assert "settings of an editor or tool" in refusal(tmp_path, path)


def test_a_person_may_list_paths_as_writable_and_a_generated_module_gets_none_of_them(served):
    settings = served / "orgtree.toml"
    settings.write_text(settings.read_text() + '\n[fs]\nwritable = ["tools/generated/", ".vscode/launch.json"]\n')
    assert refusal(served, "tools/generated/table.py") is None
    assert refusal(served, ".vscode/launch.json") is None
    assert refusal(served, ".vscode/settings.json") is not None
    assert refusal(served, "tools/server.py") is not None
    assert "is code the host executes" in refusal(served, "tools/generated/table.py", generated=True)


def test_writable_never_opens_the_settings_file_or_the_state_folder(tmp_path):
    (tmp_path / "orgtree.toml").write_text('[fs]\nwritable = ["orgtree.toml", ".orgtree/"]\n')
    assert "settings file" in refusal(tmp_path, "orgtree.toml")
    assert "state folder" in refusal(tmp_path, ".orgtree/modules/x.pipe")


def test_a_run_is_refused_with_the_setting_and_the_fix(served):
    done = pipe_in(served, "run", "writer.pipe", "-i", "name=tools/helpers.py")
    assert done.returncode == 70
    assert ("fs.write: `tools/helpers.py` is code the host executes: importable by `[mcp.servers.notes] command` in "
            "orgtree.toml, and a run must never change what a later run executes") in done.stderr
    assert '`[fs] writable = ["PATH"]`' in done.stderr
    assert not (served / "tools" / "helpers.py").exists()


@pytest.mark.parametrize("value", ['"tools/"', '["../elsewhere/"]', '[1]'])
def test_a_malformed_writable_setting_stops_the_run_at_its_start(tmp_path, value):
    (tmp_path / "orgtree.toml").write_text(f"[fs]\nwritable = {value}\n")
    (tmp_path / "writer.pipe").write_text(WRITER)
    done = pipe_in(tmp_path, "run", "writer.pipe", "-i", "name=x.txt")
    assert done.returncode == 70 and "[fs] writable" in done.stderr, done.stderr
    assert not (tmp_path / "x.txt").exists()


def test_an_unreadable_settings_file_lets_a_workspace_write_nothing(tmp_path):
    (tmp_path / "orgtree.toml").write_text("[mcp.servers.x\n")
    assert "cannot be checked against the workspace's settings" in refusal(tmp_path, "notes.txt")


def test_a_hard_link_to_protected_code_is_refused_under_its_other_name(served):
    os.link(served / "tools" / "server.py", served / "data" / "copy.txt")
    assert "is a hard link to `tools/server.py`" in refusal(served, "data/copy.txt")
    (served / "data" / "plain.txt").write_text("x")
    os.link(served / "data" / "plain.txt", served / "data" / "plain2.txt")
    assert refusal(served, "data/plain2.txt") is None


def test_a_url_server_executes_nothing_here(tmp_path):
    (tmp_path / "orgtree.toml").write_text('[mcp.servers.far]\nurl = "http://127.0.0.1:9/mcp"\n')
    assert refusal(tmp_path, "server.py") is None
