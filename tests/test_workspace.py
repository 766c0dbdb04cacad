"""Workspace confinement: relative paths resolve inside the root; everything that would leave it is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.runtime.workspace import Workspace

pytestmark = pytest.mark.fast


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("secret")
    return folder


def test_root_is_absolute_and_resolved(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(root.parent)
    ws = Workspace("ws")
    assert ws.root == Path(os.path.realpath(root))
    assert ws.root.is_absolute()


def test_state_dir_is_dot_orgtree_and_not_created(root: Path) -> None:
    ws = Workspace(root)
    assert ws.state_dir == ws.root / ".orgtree"
    assert not ws.state_dir.exists()


def test_relative_path_resolves_under_root(root: Path) -> None:
    ws = Workspace(root)
    assert ws.resolve("notes/todo.txt") == ws.root / "notes" / "todo.txt"


def test_dot_resolves_to_root(root: Path) -> None:
    assert Workspace(root).resolve(".") == Workspace(root).root


def test_dotdot_that_stays_inside_is_allowed(root: Path) -> None:
    ws = Workspace(root)
    assert ws.resolve("a/b/../c.txt") == ws.root / "a" / "c.txt"


@pytest.mark.parametrize("path", ["/etc/passwd", "/"])
def test_absolute_path_is_refused(root: Path, path: str) -> None:
    ws = Workspace(root)
    with pytest.raises(SkillError) as info:
        ws.resolve(path)
    assert f"absolute path `{path}`" in info.value.message
    assert str(ws.root) in info.value.message
    assert info.value.hint


@pytest.mark.parametrize("path", ["../x", "a/../../x", "..", "./a/./../.."])
def test_dotdot_escape_is_refused(root: Path, path: str) -> None:
    ws = Workspace(root)
    with pytest.raises(SkillError) as info:
        ws.resolve(path)
    assert f"`{path}`" in info.value.message
    assert "leaves the workspace" in info.value.message
    assert str(ws.root) in info.value.message


def test_backslash_dotdot_is_refused_too(root: Path) -> None:
    with pytest.raises(SkillError):
        Workspace(root).resolve("..\\x")


def test_symlink_to_etc_is_refused(root: Path) -> None:
    (root / "etc").symlink_to("/etc")
    ws = Workspace(root)
    with pytest.raises(SkillError) as info:
        ws.resolve("etc")
    assert "symbolic link" in info.value.message
    with pytest.raises(SkillError):
        ws.resolve("etc/passwd")


def test_file_under_symlinked_parent_dir_is_refused(root: Path, outside: Path) -> None:
    (root / "linked").symlink_to(outside, target_is_directory=True)
    with pytest.raises(SkillError) as info:
        Workspace(root).resolve("linked/secret.txt")
    assert "`linked/secret.txt`" in info.value.message


def test_nonexistent_file_under_symlinked_dir_is_refused(root: Path, outside: Path) -> None:
    (root / "linked").symlink_to(outside, target_is_directory=True)
    with pytest.raises(SkillError):
        Workspace(root).resolve("linked/new/deeper/file.txt")
    assert not (outside / "new").exists()


def test_dangling_symlink_pointing_outside_is_refused(root: Path, outside: Path) -> None:
    (root / "later.txt").symlink_to(outside / "does-not-exist-yet.txt")
    with pytest.raises(SkillError):
        Workspace(root).resolve("later.txt")


def test_symlink_inside_the_workspace_is_followed(root: Path) -> None:
    (root / "real").mkdir()
    (root / "alias").symlink_to(root / "real", target_is_directory=True)
    ws = Workspace(root)
    assert ws.resolve("alias/x.txt") == ws.root / "real" / "x.txt"


def test_root_reached_through_a_symlink_still_confines(tmp_path: Path, root: Path, outside: Path) -> None:
    link = tmp_path / "root-link"
    link.symlink_to(root, target_is_directory=True)
    ws = Workspace(link)
    assert ws.resolve("a.txt") == Path(os.path.realpath(root)) / "a.txt"
    with pytest.raises(SkillError):
        ws.resolve("../outside/secret.txt")


@pytest.mark.parametrize("path", ["", "a\0b"])
def test_empty_or_nul_path_is_refused(root: Path, path: str) -> None:
    with pytest.raises(SkillError):
        Workspace(root).resolve(path)


def test_relative_spelling_round_trips(root: Path) -> None:
    ws = Workspace(root)
    assert ws.relative(ws.resolve("a/b.txt")) == "a/b.txt"
    assert ws.relative(ws.root) == "."


def test_state_paths_are_recognised(root: Path) -> None:
    ws = Workspace(root)
    assert "state folder" in ws.write_refusal(ws.resolve(".orgtree/runs/x.jsonl")).what
    assert ws.write_refusal(ws.resolve("orgtree.txt")) is None
