"""`python -m pytest` in a clone tests that clone: its package, its grammar and stdlib (which sit beside the package
folder), and the package that the processes its tests start import, whatever else is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# Written into the clone's tests/ folder and run there by the clone's own conftest.
INNER_TESTS = '''
import subprocess
import sys
from pathlib import Path

import orgtree_lang
from orgtree_lang import grammar, stdlib
from orgtree_lang.compile.api import compile_source
from orgtree_lang.run.registries import default_registry

CLONE = Path(__file__).resolve().parent.parent
PROGRAM = 'use text\\n\\npipeline main(s: str) -> str:\\n    return text.upper(s)\\n'


def test_the_package_its_grammar_and_its_stdlib_come_from_this_clone():
    for module in (orgtree_lang, grammar, stdlib):
        assert Path(module.__file__).resolve().is_relative_to(CLONE), module.__file__
    assert orgtree_lang.__version__ == "0.1.0+clone"
    assert compile_source(PROGRAM, "p.pipe", default_registry(plugins=False)).program is not None


def test_a_child_process_runs_this_clones_package_from_another_folder(tmp_path):
    (tmp_path / "p.pipe").write_text(PROGRAM)
    version = subprocess.run([sys.executable, "-m", "orgtree_lang.cli.main", "--version"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=60)
    assert version.stdout.strip() == "pipe 0.1.0+clone", version.stderr
    done = subprocess.run([sys.executable, "-m", "orgtree_lang.cli.main", "run", "p.pipe", "-i", "s=ok"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, "OK\\n"), done.stderr
'''


def test_python_m_pytest_in_a_clone_tests_that_clone_and_its_child_processes(tmp_path):
    if not (REPO / "pyproject.toml").is_file():
        pytest.skip("not running from a source checkout")
    clone = tmp_path / "clone"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", ".orgtree")
    for name in ("orgtree_lang", "grammar", "stdlib"):
        shutil.copytree(REPO / name, clone / name, ignore=ignore)
    shutil.copy(REPO / "pyproject.toml", clone / "pyproject.toml")
    (clone / "tests").mkdir()
    shutil.copy(REPO / "tests" / "conftest.py", clone / "tests" / "conftest.py")
    (clone / "tests" / "test_inside.py").write_text(INNER_TESTS)
    # A version only this clone has: a child that imported another orgtree_lang (the one installed, or this
    # checkout) would print another.
    init = clone / "orgtree_lang" / "__init__.py"
    init.write_text(init.read_text().replace('__version__ = "0.1.0"', '__version__ = "0.1.0+clone"'))
    # As a person types it in the clone: no variable of this test session says where the package is.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_inside.py"],
                          cwd=clone, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "2 passed" in done.stdout
