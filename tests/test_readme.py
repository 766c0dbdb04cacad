"""The README's examples say what really happens: its programs run and print exactly the output it shows."""

from __future__ import annotations

import shutil
from pathlib import Path

from cli_testing import pipe
from readme_examples import (README, Outcome, check_offline_ambiguous_block, check_people_are_nodes, check_quick_start,
                             check_sessions, programs, sessions)


def in_process(args: list[str], cwd: Path) -> Outcome:
    done = pipe(*args, cwd=cwd, env={"PIPE_NO_PLUGINS": "1"})
    return Outcome(done.returncode, done.stdout, done.stderr)


def test_readme_has_programs_and_sessions():
    assert {"words.pipe", "err.pipe", "fanout.pipe"} <= set(programs())
    assert [argv[:2] for argv, _ in sessions()][:3] == [["pipe", "run"], ["pipe", "check"], ["pipe", "run"]]


def test_every_console_session_prints_what_the_readme_shows(tmp_path):
    check_sessions(in_process, tmp_path)


def test_the_quick_start_and_the_offline_ambiguous_block_run_as_the_readme_says(tmp_path):
    shutil.copytree(README.parent / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns(".orgtree"))
    check_quick_start(in_process, tmp_path)
    check_offline_ambiguous_block(in_process, tmp_path)


def _files_under(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in folder.rglob("*") if p.is_file()}


def test_the_people_are_nodes_commands_work_from_the_repository_root_and_write_nothing_into_it(tmp_path):
    root = README.parent
    before = _files_under(root / "examples")
    check_people_are_nodes(in_process, root, tmp_path / "release")
    assert _files_under(root / "examples") == before, "running the example changed files in the clone"
