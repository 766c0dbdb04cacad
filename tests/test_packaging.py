"""A built wheel carries the grammar and the stdlib, and runs programs without the source checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    if not (REPO / "pyproject.toml").is_file():
        pytest.skip("not running from a source checkout")
    out = tmp_path_factory.mktemp("wheel")
    src = tmp_path_factory.mktemp("build") / "src"
    # Build from a copy so the checkout gets no build/ or egg-info litter.
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", ".orgtree")
    for name in ("grammar", "stdlib", "orgtree_lang"):
        shutil.copytree(REPO / name, src / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out),
         str(src)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    (wheel_path,) = out.glob("orgtree_lang-*.whl")
    return wheel_path


def test_wheel_contains_grammar_and_stdlib(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "orgtree_lang/grammar/pipe.lark" in names
    assert "orgtree_lang/grammar/card.md" in names  # the language card the author and reviewer prompts include
    assert "orgtree_lang/stdlib/__init__.py" in names
    assert "orgtree_lang/stdlib/text.py" in names
    assert any(n.endswith("entry_points.txt") and "pipe" in zipfile.ZipFile(wheel).read(n).decode() for n in names)


def test_wheel_contains_the_viewers_script_and_style(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "orgtree_lang" / "viewer" / "static").iterdir())
    assert shipped and [name for name in shipped if name not in names] == []


def test_wheel_contains_every_package_of_the_checkout(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = [p.parent.relative_to(REPO).as_posix() for p in (REPO / "orgtree_lang").rglob("__init__.py")]
    assert packages and [p for p in packages if f"{p}/__init__.py" not in names] == []


def test_unpacked_wheel_runs_a_program_from_another_folder(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    work = tmp_path / "work"
    work.mkdir()
    (work / "p.pipe").write_text('use text\n\npipeline main() -> str:\n    return text.upper("packaged")\n')
    env = dict(os.environ, PYTHONPATH=str(site), PIPE_NO_PLUGINS="1")
    where = subprocess.run([sys.executable, "-c", "import orgtree_lang; print(orgtree_lang.__file__)"],
                           cwd=work, env=env, capture_output=True, text=True, timeout=60)
    assert where.stdout.strip().startswith(str(site))
    result = subprocess.run([sys.executable, "-m", "orgtree_lang.cli.main", "run", "p.pipe"], cwd=work, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "PACKAGED\n"


def test_every_subpackage_is_listed_in_pyproject():
    import tomllib

    if not (REPO / "pyproject.toml").is_file():
        pytest.skip("not running from a source checkout")
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {"orgtree_lang." + ".".join(p.parent.relative_to(REPO / "orgtree_lang").parts)
               for p in (REPO / "orgtree_lang").rglob("__init__.py") if p.parent != REPO / "orgtree_lang"}
    missing = on_disk - listed
    assert not missing, f"add these to [tool.setuptools] packages in pyproject.toml: {sorted(missing)}"
