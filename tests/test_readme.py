"""The README's examples say what really happens: its programs run and print exactly the output it shows."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from cli_testing import pipe

README = Path(__file__).resolve().parent.parent / "README.md"


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def _sessions() -> list[tuple[list[str], str]]:
    """Each console block: the command after `$ ` and the expected output (stdout then stderr)."""
    sessions = []
    for block in _blocks("console"):
        command, _, output = block.partition("\n")
        sessions.append((shlex.split(command.removeprefix("$ ")), output))
    return sessions


def _programs() -> dict[str, str]:
    programs = {}
    for block in _blocks("pipe"):
        name = re.match(r"# (\S+\.pipe)", block).group(1)
        programs[name] = block
    return programs


@pytest.fixture
def workdir(tmp_path):
    for name, source in _programs().items():
        (tmp_path / name).write_text(source, encoding="utf-8")
    return tmp_path


def _same_ids(text: str) -> str:
    """Run ids are random: compare them as placeholders."""
    return re.sub(r"\b[0-9a-f]{12}\b", "RUN_ID", text)


def _run(argv: list[str], cwd: Path) -> str:
    assert argv[0] == "pipe"
    result = pipe(*argv[1:], cwd=cwd, env={"PIPE_NO_PLUGINS": "1"})
    return _same_ids(result.stdout + result.stderr)


def test_readme_has_programs_and_sessions():
    assert {"words.pipe", "err.pipe"} <= set(_programs())
    assert len(_sessions()) >= 3


def test_run_session_output_matches(workdir):
    argv, expected = next(s for s in _sessions() if s[0][:2] == ["pipe", "run"] and "words.pipe" in s[0])
    assert _run(argv, workdir) == expected


def test_check_session_shows_the_misspelled_skill(workdir):
    argv, expected = next(s for s in _sessions() if s[0][:2] == ["pipe", "check"])
    source = (workdir / "words.pipe").read_text()
    (workdir / "words.pipe").write_text(source.replace("text.split(sentence)", "text.splt(sentence)"))
    assert _run(argv, workdir) == expected


def test_runtime_error_session_matches(workdir):
    argv, expected = next(s for s in _sessions() if "err.pipe" in s[0])
    assert _run(argv, workdir) == _same_ids(expected)
