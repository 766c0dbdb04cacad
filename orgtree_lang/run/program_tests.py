"""Run a program's tests (`test` blocks and pipeline examples), each in a fresh machine of its own."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path

from orgtree_lang.run.assemble import assemble, decomposer_for, settle, tell_offline_models
from orgtree_lang.run.options import RunOptions
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


def run_tests(program, root: Path, registry, options: RunOptions | None = None, *, source: str | None = None,
              only: str | None = None) -> list[TestOutcome]:
    """Run each test of `program` (those whose name contains `only`, if given) in workspace `root`, each on a
    machine assemble() builds from `options` (default: TEST_BUDGET), untraced, unjournaled, with no org tree, as
    `pipe run` runs a program: the module's routes and orgtree.toml's, and (with the options' choices) the models
    and a decomposer that reuses saved modules for ambiguous blocks and writes new ones when it has a model."""

    options = settle(options or RunOptions(budget=TEST_BUDGET), root)
    tell_offline_models(options, program)
    if options.decomposer is None and source is not None:
        # One decomposer for the file's tests, as one run of it has.
        options.decomposer = decomposer_for(options, program, source, program.file, root, registry)
    outcomes = []
    for name, code in program.tests.items():
        if only is not None and only not in name:
            continue
        # The test becomes one more pipeline of the program; its name has a space, so nothing else can call it.
        # dataclasses.replace keeps the module's routes (a Program rebuilt by hand had none).
        runnable = dataclasses.replace(program, pipelines={**program.pipelines, name: code})
        outcome = TestOutcome(program.file, name)
        tested = dataclasses.replace(options, printer=outcome.printed.append, trace_level="off", tree=False)
        parts = assemble(runnable, root, registry, tested, f"test-{abs(hash(name)) % 10**8}", source=source)
        started = time.perf_counter()
        try:
            parts.machine.start(name)
            parts.machine.run()
        except PipeRuntimeError as err:
            err.source = err.source or source
            outcome.error = err
        finally:
            parts.close()
        outcome.seconds = time.perf_counter() - started
        outcomes.append(outcome)
    return outcomes
