"""The language tasks (benchmarks/language_tasks): hand-written solutions pass their hidden cases; the scorer
notices a wrong module, a module that does not compile, and counts lines."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from pipe_testing import compile_text, registry

FOLDER = Path(__file__).resolve().parent.parent / "benchmarks" / "language_tasks"
_spec = importlib.util.spec_from_file_location("language_tasks_measure", FOLDER / "measure.py")
measure = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = measure  # its dataclasses look their module up while they are built
_spec.loader.exec_module(measure)
TASKS = measure.tasks()


def test_there_are_at_least_eight_tasks() -> None:
    assert len(TASKS) >= 8


@pytest.mark.parametrize("task", TASKS)
def test_the_task_compiles_and_its_idiomatic_solution_passes_every_hidden_case(task: str) -> None:
    program = compile_text((FOLDER / task / "task.pipe").read_text(encoding="utf-8"), f"{task}.pipe", registry())
    assert [a.name for p in program.program.pipelines.values() for a in p.ambiguous]
    result, failures = measure.score(task, (FOLDER / task / "solution.pipe").read_text(encoding="utf-8"))
    assert failures == [] and result.passed == result.cases >= 3 and not result.problem


def test_the_scorer_notices_wrong_and_broken_modules() -> None:
    wrong, failures = measure.score("flatten", "pipeline main(items: list[any]) -> list[any]:\n    return items\n")
    assert wrong.passed < wrong.cases and failures
    broken, _ = measure.score("flatten", "pipeline main(items: list[any]) -> list[any]:\n    return [x for x in items]\n")
    assert broken.problem == "does not compile" and broken.passed == 0
    assert measure.nonblank_lines("a\n\n  \nb\n") == 2
    saved = "# orgtree: block = flatten\n# orgtree: review-rounds = 1\n\n# the author's own comment\nx\n"
    assert measure.nonblank_lines(saved) == 2  # the store's provenance header is not the author's answer
    assert measure.report([wrong]).splitlines()[-1].startswith("mean ratio 0.25 over 1 module(s)")
