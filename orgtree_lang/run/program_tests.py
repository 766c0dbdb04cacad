"""Run a program's tests (`test` blocks and pipeline examples), each in a fresh machine of its own."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.vm.budget import Budget

# A test that loops forever must not hang `pipe test`: each gets these limits unless the caller gives others.
TEST_BUDGET = Budget(max_steps=10_000_000, max_seconds=60)


@dataclass
class TestOutcome:
    """How one test ended: passed, or the error that stopped it, with what it printed."""

    file: str
    name: str
    error: PipeRuntimeError | None = None
    printed: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.error is None


def run_tests(program, root: Path, registry, *, budget: Budget | None = None, models: Any = None,
              resolver: Any = None, routes: dict | None = None, source: str | None = None,
              only: str | None = None) -> list[TestOutcome]:
    """Run each test of `program` (those whose name contains `only`, if given) in workspace `root`, as `pipe run`
    runs a program: with the module's routes and orgtree.toml's (`routes`), and the decomposer `resolver` (which
    reuses saved modules for ambiguous blocks, and writes new ones when it has a model)."""
    from orgtree_lang.run.factory import plain_machine
    from orgtree_lang.runtime.skills import SkillContext
    from orgtree_lang.runtime.workspace import Workspace

    outcomes = []
    for name, code in program.tests.items():
        if only is not None and only not in name:
            continue
        # The test becomes one more pipeline of the program; its name has a space, so nothing else can call it.
        runnable = dataclasses.replace(program, pipelines={**program.pipelines, name: code})
        outcome = TestOutcome(program.file, name)
        context = SkillContext(Workspace.for_run(root), run_id=f"test-{abs(hash(name)) % 10**8}", models=models)
        machine = plain_machine(runnable, registry, context, budget or TEST_BUDGET, resolver=resolver,
                                routes=routes, printer=outcome.printed.append)
        started = time.perf_counter()
        try:
            machine.start(name)
            machine.run()
        except PipeRuntimeError as err:
            err.source = err.source or source
            outcome.error = err
        outcome.seconds = time.perf_counter() - started
        outcomes.append(outcome)
    return outcomes
