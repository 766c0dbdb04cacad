"""The fast subset, `python -m pytest -m fast`: what pytest selects is not empty, reaches every area of the package
(through the test module's own imports or the shared helpers it imports), and the README and docs/testing.md name it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TESTS = REPO / "tests"
COMMAND = "python -m pytest -m fast"

# Each area a change most often touches, and the package that holds it.
AREAS = {
    "parse": "orgtree_lang.syntax",
    "check": "orgtree_lang.check",
    "compile": "orgtree_lang.compile",
    "vm": "orgtree_lang.vm",
    "durable": "orgtree_lang.durable",
    "decompose": "orgtree_lang.decompose",
    "memory": "orgtree_lang.memory",
    "cli": "orgtree_lang.cli",
}


def selected_tests() -> list[str]:
    """The node ids `pytest -m fast` runs, as pytest itself selects them (markers on modules, classes and tests)."""
    # xdist (on in pyproject's addopts) stays out of a --collect-only run by itself.
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "fast", "-p", "no:cacheprovider"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    return [line for line in done.stdout.splitlines() if line.startswith("tests/") and "::" in line]


def packages_reached(source: str, helpers: dict[str, str], seen: set[str] | None = None) -> set[str]:
    """The packages of orgtree_lang (`orgtree_lang.X`) that `source` imports, at module level or inside functions,
    directly or through the shared helper modules of tests/ (`helpers`: name to source)."""
    seen = set() if seen is None else seen
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "orgtree_lang" and len(parts) > 1:
                found.add(".".join(parts[:2]))
            elif name in helpers and name not in seen:
                seen.add(name)
                found |= packages_reached(helpers[name], helpers, seen)
    return found


def missing_areas(modules: dict[str, str], helpers: dict[str, str]) -> list[str]:
    """The areas that none of the selected test modules (`modules`: path to source) reaches."""
    reached = set().union(*(packages_reached(source, helpers) for source in modules.values())) if modules else set()
    return [area for area, package in AREAS.items() if package not in reached]


def _helpers() -> dict[str, str]:
    return {path.stem: path.read_text(encoding="utf-8") for path in TESTS.glob("*.py")
            if not path.name.startswith(("test_", "conftest"))}


def test_the_fast_subset_is_not_empty_and_reaches_every_area():
    selected = selected_tests()
    assert len(selected) >= 100, selected
    files = sorted({node.split("::")[0] for node in selected})
    modules = {name: (REPO / name).read_text(encoding="utf-8") for name in files}
    assert missing_areas(modules, _helpers()) == [], f"the fast subset ({', '.join(files)}) reaches no test of these"


def test_a_selection_without_a_test_of_an_area_is_noticed():
    helpers = {"cli_testing": "def pipe():\n    from orgtree_lang.cli.main import main\n"}
    modules = {
        "tests/test_a.py": "from orgtree_lang.syntax.parser import parse\nfrom orgtree_lang.check import check\n"
                           "import orgtree_lang.compile.api\nfrom orgtree_lang.vm.machine import Machine\n",
        "tests/test_b.py": "from orgtree_lang.durable.journal import Journal\nimport cli_testing\n"
                           "def test_x():\n    from orgtree_lang.decompose.decomposer import Decomposer\n",
    }
    assert missing_areas(modules, helpers) == ["memory"]
    modules["tests/test_c.py"] = "from orgtree_lang.runtime.memory_budget import MemoryBudget\n"
    assert missing_areas(modules, helpers) == ["memory"]  # a name that says memory is not the package
    modules["tests/test_c.py"] = "from orgtree_lang import memory\n"
    assert missing_areas(modules, helpers) == []
    assert missing_areas({}, helpers) == list(AREAS)


def test_the_readme_and_the_testing_page_name_the_fast_subset():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    development = readme.split("## Development", 1)[1].split("\n## ", 1)[0]
    assert COMMAND in development
    testing = (REPO / "docs" / "testing.md").read_text(encoding="utf-8")
    assert COMMAND in testing and "pytestmark = pytest.mark.fast" in testing
