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


def _people_commands() -> list[tuple[list[str], str]]:
    """The "People are nodes" block: each command (shell words) and the comment that says what it does."""
    section = README.read_text(encoding="utf-8").split("## People are nodes", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    commands = []
    for line in block.splitlines():
        command, _, comment = line.partition("  # ")
        commands.append((shlex.split(command), comment.strip()))
    return commands


def _files_under(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in folder.rglob("*") if p.is_file()}


def test_the_people_are_nodes_commands_work_from_the_repository_root_and_write_nothing_into_it(tmp_path):
    root = README.parent
    workspace = str(tmp_path / "release")
    before = _files_under(root / "examples")
    commands = _people_commands()
    assert [argv[:2] for argv, _ in commands] == [["pipe", "run"], ["pipe", "inbox"], ["pipe", "reply"],
                                                  ["pipe", "resume"], ["pipe", "reply"], ["pipe", "replay"]]
    run_id, seen = None, []
    for argv, comment in commands:
        argv = [workspace if word == "/tmp/release" else run_id if word == "RUN" else word for word in argv[1:]]
        result = pipe(*argv, cwd=root, env={"PIPE_NO_PLUGINS": "1"})
        text = result.stdout + result.stderr
        if run_id is None:
            run_id = re.search(r"run ([0-9a-f]{12}) is waiting", text).group(1)
        expected_code = 75 if "(exit 75)" in comment else 0
        assert result.returncode == expected_code, f"{argv}: {text}"
        seen.append(text)
    assert "release 2.1.0" in seen[0]
    assert re.search(rf"h1 +{run_id} +approve .*Ship release 2\.1\.0 \(2 changes\)\?", seen[1])
    assert "Who signs off release 2.1.0?" in seen[3]
    assert "2.1.0 shipped, signed off by Ada Lovelace" in seen[4]
    assert "0 outside call(s)" in seen[5] and "identical to the original run" in seen[5]
    assert _files_under(root / "examples") == before, "running the example changed files in the clone"
    assert (tmp_path / "release" / "release.log").read_text() == \
        "prepared 2.1.0\nshipped 2.1.0, signed off by Ada Lovelace\n"
