"""Helpers shared by the language tests: find golden programs, read their inline expectations, compile and run."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from orgtree_lang.compile.api import Compiled, compile_source
from orgtree_lang.run.runner import RunOptions, run_program
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.run.registries import default_registry

TESTS_DIR = Path(__file__).resolve().parent
GOLDEN_DIR = TESTS_DIR / "golden"
REPO_DIR = TESTS_DIR.parent
EXAMPLES_DIR = REPO_DIR / "examples"

# `# runtime error:` is listed before `# error:` so the longer marker wins where both could match.
# A line may carry several markers (`# error: a  # error: b`) when the compiler reports two problems there.
_MARKER = re.compile(r"#\s*(runtime error|expect|error|warning|hint):")


@dataclass
class Expectations:
    """What a golden program says about itself, one list per kind of marker, in file order."""

    output: list[str] = field(default_factory=list)
    errors: list[tuple[int, str]] = field(default_factory=list)
    warnings: list[tuple[int, str]] = field(default_factory=list)
    runtime_errors: list[tuple[int, str]] = field(default_factory=list)
    hints: list[tuple[int, str]] = field(default_factory=list)

    def add(self, kind: str, line: int, text: str) -> None:
        if kind == "expect":
            self.output.append(text)
        elif kind == "error":
            self.errors.append((line, text))
        elif kind == "warning":
            self.warnings.append((line, text))
        elif kind == "hint":
            self.hints.append((line, text))
        else:
            self.runtime_errors.append((line, text))

    @property
    def compiles(self) -> bool:
        return not self.errors

    @property
    def runs_cleanly(self) -> bool:
        return not self.errors and not self.runtime_errors


def read_expectations(source: str) -> Expectations:
    """Collect `# expect:`, `# error:`, `# warning:`, `# runtime error:` and `# hint:` markers with their lines."""
    found = Expectations()
    for number, line in enumerate(source.splitlines(), 1):
        matches = list(_MARKER.finditer(line))
        for match, following in zip(matches, matches[1:] + [None]):
            kind = match.group(1)
            text = line[match.end() : following.start() if following else len(line)]
            text = text[1:] if text.startswith(" ") else text
            found.add(kind, number, text.rstrip())
    return found


def golden_files() -> list[Path]:
    return sorted(GOLDEN_DIR.glob("*/*.pipe"))


def golden_id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def example_files() -> list[Path]:
    return sorted(EXAMPLES_DIR.glob("*.pipe")) if EXAMPLES_DIR.is_dir() else []


def registry():
    """The stdlib skills only: plugins installed on the machine must not change results."""
    return default_registry(plugins=False)


def compile_text(source: str, file: str = "test.pipe", reg=None) -> Compiled:
    return compile_source(source, file, reg if reg is not None else registry())


@dataclass
class RunResult:
    output: list[str]
    result: object = None
    error: PipeRuntimeError | None = None
    machine: object = None


def run_compiled(program, root: Path, reg=None, **options) -> RunResult:
    """Run a compiled program in workspace `root`, collecting printed lines and the result or runtime error."""
    printed: list[str] = []
    opts = RunOptions(printer=printed.append, trace=root / "trace.jsonl", **options)
    reg = reg if reg is not None else registry()
    try:
        machine = run_program(program, root, reg, opts)
    except PipeRuntimeError as err:
        return RunResult(printed, error=err)
    return RunResult(printed, machine.state.result, machine=machine)


def run_source(source: str, root: Path, file: str = "test.pipe", **options) -> RunResult:
    reg = registry()
    return run_compiled(compile_text(source, file, reg).program, root, reg, **options)


def output_lines(printed: list[str]) -> list[str]:
    """Printed text as lines: a printed string holding newlines counts as several lines."""
    lines: list[str] = []
    for text in printed:
        lines.extend(line.rstrip() for line in text.split("\n"))
    return lines
