"""A workspace's own Python skills (`skills/` beside the programs, or `[skills] paths`): `use NAME` finds them with
the same @skill decorator, docs and call history as packaged ones, and no run may write them (host code)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_testing import pipe as run_pipe

from orgtree_lang.runtime.workspace import Workspace

WEATHER = '''"""Weather words for the team's programs."""
from orgtree_lang.runtime.skills import skill

from ._units import celsius


@skill(pure=True)
def feels(temp_f: float) -> str:
    """Say how a Fahrenheit temperature feels.

    Args:
        temp_f: The temperature in degrees Fahrenheit.

    Returns:
        cold, mild or hot, with the Celsius value.
    """
    c = celsius(temp_f)
    return f"{'cold' if c < 10 else 'mild' if c < 25 else 'hot'} ({c:.0f} C)"


@skill
def log_reading(place: str, temp_f: float) -> str:
    """Record a reading (an effect, so each call is journaled).

    Args:
        place: Where it was read.
        temp_f: The reading in degrees Fahrenheit.

    Returns:
        The reading as one line.
    """
    return f"{place}: {temp_f:g} F"
'''

UNITS = "def celsius(f):\n    return (f - 32) * 5 / 9\n"

PROGRAM = '''use weather

pipeline main(temp: float) -> str:
    line = weather.log_reading("Oslo", temp)
    return f"{line}, {weather.feels(temp)}"
'''

WRITER = '''use fs

pipeline main(name: str) -> str:
    try:
        fs.write(name, "import os\\nos.system('touch /tmp/owned')\\n")
        return "wrote"
    except err:
        return err.message
'''


def pipe(*args, cwd: Path):
    return run_pipe(*args, cwd=cwd, env={"PIPE_NO_PLUGINS": "1", "PIPE_MODEL": None})


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "skills").mkdir()
    (tmp_path / "skills" / "weather.py").write_text(WEATHER)
    (tmp_path / "skills" / "_units.py").write_text(UNITS)
    (tmp_path / "weather.pipe").write_text(PROGRAM)
    (tmp_path / "writer.pipe").write_text(WRITER)
    return tmp_path


def test_a_program_uses_a_skill_from_the_workspace_skills_folder(workspace: Path) -> None:
    ran = pipe("run", "weather.pipe", "-i", "temp=86", cwd=workspace)
    assert (ran.returncode, ran.stdout) == (0, "Oslo: 86 F, hot (30 C)\n"), ran.stderr
    assert not (workspace / "skills" / "__pycache__").exists()  # importing it left nothing in the folder


def test_pipe_skills_shows_a_workspace_skill_with_its_docs_and_origin(workspace: Path) -> None:
    listed = pipe("skills", "weather", cwd=workspace)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == ["weather.feels        Say how a Fahrenheit temperature feels.",
                                          "weather.log_reading  Record a reading (an effect, so each call is "
                                          "journaled)."]
    shown = json.loads(pipe("skills", "weather.feels", "--json", cwd=workspace).stdout)[0]
    assert shown["signature"] == "weather.feels(temp_f: float) -> str"
    assert shown["origin"] == "workspace (skills/weather.py)" and shown["pure"] is True
    assert shown["params"][0]["doc"] == "The temperature in degrees Fahrenheit."
    assert "_units" not in pipe("skills", cwd=workspace).stdout  # a helper module is no skill module


def test_a_workspace_skill_call_is_in_the_call_history_and_the_journal(workspace: Path) -> None:
    assert pipe("run", "weather.pipe", "-i", "temp=50", cwd=workspace).returncode == 0
    history = json.loads(pipe("skills", "history", "weather.log_reading", "--json", cwd=workspace).stdout)
    assert [(call["name"], call["status"], call["inputs"]) for call in history] == [
        ("weather.log_reading", "ok", '"Oslo", 50.0')]
    run = json.loads(pipe("runs", "--json", cwd=workspace).stdout)[0]["id"]
    replayed = pipe("replay", run, cwd=workspace)
    assert replayed.returncode == 0 and "0 outside call(s)" in replayed.stderr, replayed.stderr


def test_skill_folders_named_in_the_settings_are_found_too(tmp_path: Path) -> None:
    (tmp_path / "tools" / "skills").mkdir(parents=True)
    (tmp_path / "tools" / "skills" / "weather.py").write_text(WEATHER)
    (tmp_path / "tools" / "skills" / "_units.py").write_text(UNITS)
    (tmp_path / "orgtree.toml").write_text('[skills]\npaths = ["tools/skills"]\n')
    (tmp_path / "weather.pipe").write_text(PROGRAM)
    ran = pipe("run", "weather.pipe", "-i", "temp=40", cwd=tmp_path)
    assert (ran.returncode, ran.stdout) == (0, "Oslo: 40 F, cold (4 C)\n"), ran.stderr


def test_an_edited_skill_module_is_read_again(workspace: Path) -> None:
    assert "hot (30 C)" in pipe("run", "weather.pipe", "-i", "temp=86", cwd=workspace).stdout
    module = workspace / "skills" / "weather.py"
    module.write_text(module.read_text().replace("'hot'", "'warm'"))
    assert "warm (30 C)" in pipe("run", "weather.pipe", "-i", "temp=86", "--no-journal", cwd=workspace).stdout


def test_a_module_that_fails_to_import_is_named_with_its_line(workspace: Path) -> None:
    (workspace / "skills" / "broken.py").write_text("from orgtree_lang.runtime.skills import skill\n\n"
                                                    "raise RuntimeError('no API key')\n")
    ran = pipe("run", "weather.pipe", "-i", "temp=86", cwd=workspace)
    assert ran.returncode == 70 and "internal error" not in ran.stderr
    assert "workspace skill module skills/broken.py:3 failed to load: RuntimeError: no API key" in ran.stderr


def test_a_workspace_skill_may_not_take_an_installed_skills_name(workspace: Path) -> None:
    (workspace / "skills" / "mine.py").write_text(
        'from orgtree_lang.runtime.skills import skill\n\n\n@skill("text.upper", pure=True)\n'
        'def upper(text: str) -> str:\n    """Shout."""\n    return text.upper() + "!"\n')
    listed = pipe("skills", cwd=workspace)
    assert listed.returncode == 70
    assert "workspace skill text.upper from workspace (skills/mine.py) has the name of one from" in listed.stderr


@pytest.mark.parametrize("path", ["skills/weather.py", "skills/_units.py", "skills/new.py", "skills/pkg/__init__.py",
                                  "skills/notes.txt", "tools/skills/x.py"])
def test_a_run_may_not_write_or_create_a_workspace_skill(workspace: Path, path: str) -> None:
    (workspace / "orgtree.toml").write_text('[skills]\npaths = ["tools/skills"]\n')
    before = {p: p.read_bytes() for p in workspace.rglob("*.py")}
    ran = pipe("run", "writer.pipe", "-i", f"name={path}", cwd=workspace)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith(f"fs.write: `{path}` is code the host executes"), ran.stdout
    assert {p: p.read_bytes() for p in workspace.rglob("*.py")} == before
    assert not (workspace / path).exists() or path in ("skills/weather.py", "skills/_units.py")


def test_the_file_behind_a_symlinked_skill_module_and_a_hard_link_to_one_are_protected(workspace: Path) -> None:
    (workspace / "shared").mkdir()
    (workspace / "shared" / "geo.py").write_text("ZONES = 24\n")
    (workspace / "skills" / "geo.py").symlink_to(workspace / "shared" / "geo.py")
    os.link(workspace / "skills" / "weather.py", workspace / "backup.py")
    for path in ("shared/geo.py", "backup.py"):
        ran = pipe("run", "writer.pipe", "-i", f"name={path}", cwd=workspace)
        assert "is code the host executes" in ran.stdout or "is a hard link to `skills/weather.py`" in ran.stdout, \
            ran.stdout
    assert (workspace / "shared" / "geo.py").read_text() == "ZONES = 24\n"
    assert (workspace / "skills" / "weather.py").read_text() == WEATHER


def test_a_generated_module_may_not_write_a_workspace_skill_whatever_the_settings_say(workspace: Path) -> None:
    (workspace / "orgtree.toml").write_text('[fs]\nwritable = ["skills/"]\n')
    person = Workspace(workspace)
    assert person.write_refusal(person.resolve("skills/weather.py")) is None  # a person opened it for their runs
    generated = person.for_generated_module()
    assert "is code the host executes" in generated.write_refusal(generated.resolve("skills/weather.py")).what


@pytest.mark.parametrize("paths", ['["/etc"]', '["../elsewhere"]', '"skills"', "[3]"])
def test_skill_paths_outside_the_workspace_or_malformed_are_a_settings_error(workspace: Path, paths: str) -> None:
    (workspace / "orgtree.toml").write_text(f"[skills]\npaths = {paths}\n")
    ran = pipe("run", "weather.pipe", "-i", "temp=86", cwd=workspace)
    assert ran.returncode == 2 and "[skills] paths" in ran.stderr, ran.stderr
