"""What the README promises after a plain `pip install .` (no extras) works with only what that installs.

The test environment has every extra installed, so a missing core dependency is invisible to the other tests.
Here a child process refuses to import any third-party module that a plain install would not bring: the
dependencies of pyproject.toml's [project] table and, recursively, theirs (from the installed metadata). `.ci/run`
also installs the checkout into a fresh venv and runs the README's examples there (tests/readme_examples.py).
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from readme_examples import Outcome, check_memory, check_offline_ambiguous_block

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"

# Run first in the child: a finder that refuses the modules a plain install lacks, then the `pipe` command.
CHILD = '''
import sys
BLOCKED = frozenset(sys.argv[1].split(","))

class PlainInstall:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (not installed by a plain pip install)", name=name)
        return None

sys.meta_path.insert(0, PlainInstall)
from orgtree_lang.cli.main import main
sys.exit(main(sys.argv[2:]))
'''


def _name(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def plain_distributions() -> set[str]:
    """The distributions `pip install .` brings: the core dependencies and theirs, as installed here."""
    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    todo, seen = [Requirement(text) for text in declared], set()
    while todo:
        requirement = todo.pop()
        name = _name(requirement.name)
        if name in seen or (requirement.marker and not requirement.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        try:
            todo.extend(Requirement(text) for text in metadata.requires(requirement.name) or [])
        except metadata.PackageNotFoundError:
            pass  # not installed here: nothing can import it anyway
    return seen


def blocked_modules() -> set[str]:
    """Top-level modules installed here only by distributions outside a plain install."""
    plain = plain_distributions()
    return {module for module, owners in metadata.packages_distributions().items()
            if module.isidentifier() and not any(_name(owner) in plain for owner in owners)
            and module != "orgtree_lang"}


@pytest.fixture(scope="module")
def blocked() -> str:
    if not (REPO / "pyproject.toml").is_file():
        pytest.skip("not running from a source checkout")
    modules = blocked_modules()
    # The check means something only if the extras' libraries are here to be refused.
    assert {"faiss", "sentence_transformers", "torch"} & modules, sorted(modules)
    return ",".join(sorted(modules))


def plain_install(blocked: str):
    """A runner of `pipe` (as readme_examples.py's checks take) in a child that has only a plain install's modules."""

    def run(args: list[str], cwd: Path) -> Outcome:
        done = subprocess.run([sys.executable, "-c", CHILD, blocked, *args], cwd=cwd, capture_output=True,
                              text=True, timeout=120, env=dict(os.environ, PIPE_NO_PLUGINS="1"))
        return Outcome(done.returncode, done.stdout, done.stderr)

    return run


def test_the_child_refuses_what_a_plain_install_lacks(blocked):
    probe = subprocess.run([sys.executable, "-c", CHILD.split("from orgtree_lang")[0] + "import faiss", blocked],
                           capture_output=True, text=True, timeout=60)
    assert "No module named 'faiss' (not installed by a plain pip install)" in probe.stderr


def test_the_readmes_offline_ambiguous_block_runs_with_a_plain_install(blocked, tmp_path):
    shutil.copytree(EXAMPLES, tmp_path / "examples", ignore=shutil.ignore_patterns(".orgtree"))
    check_offline_ambiguous_block(plain_install(blocked), tmp_path)


def test_pipe_ctx_add_of_a_multi_line_file_and_a_search_work_with_a_plain_install(blocked, tmp_path):
    check_memory(plain_install(blocked), tmp_path)
