"""Score modules written for the language tasks: hidden cases passed and non-blank lines against the idiomatic one.

Each folder here is one task: `task.pipe` (a program whose `ambiguous` block is the task, as the author model
sees it), `cases.json` (hidden cases: `inputs` and the `expected` result, or `error` text the run must fail
with) and `solution.pipe` (an idiomatic module written by hand). A module written for a block declares
`pipeline main(INPUTS) -> OUTPUT`, so it runs on its own.

    python benchmarks/language_tasks/measure.py                     # the hand-written solutions
    python benchmarks/language_tasks/measure.py --generated DIR     # DIR/<task>.pipe: modules a model wrote
    python benchmarks/language_tasks/measure.py --module TASK FILE  # one saved module

No model is called here: collect the modules first (`collect.py OUT --model ...` runs every task's block
through `pipe run` and copies the saved modules to OUT/gen) and point --generated at them.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass
class Score:
    task: str
    lines: int
    idiomatic_lines: int
    passed: int
    cases: int
    problem: str = ""  # why the module could not be scored (does not compile, missing)

    @property
    def ratio(self) -> float:
        return self.lines / self.idiomatic_lines if self.idiomatic_lines else 0.0


def tasks() -> list[str]:
    return sorted(p.name for p in HERE.iterdir() if (p / "task.pipe").is_file())


def nonblank_lines(source: str) -> int:
    """Lines with anything but whitespace on them (comments and docstrings count: they are part of the answer).

    The `# orgtree:` provenance header the module store writes above a saved module is not the author's, so
    it does not count."""
    return sum(1 for line in source.splitlines() if line.strip() and not line.startswith("# orgtree:"))


def cases_of(task: str) -> list[dict]:
    return json.loads((HERE / task / "cases.json").read_text(encoding="utf-8"))


def run_cases(source: str, cases: list[dict], registry=None) -> tuple[int, list[str]]:
    """How many cases the module passes, and a line per failure."""
    import tempfile

    from orgtree_lang.compile.api import compile_source
    from orgtree_lang.run.registries import default_registry
    from orgtree_lang.run.runner import RunOptions, run_program
    from orgtree_lang.runtime.errors import PipeRuntimeError
    from orgtree_lang.runtime.values import strict_equal, to_plain
    from orgtree_lang.vm.budget import Budget

    registry = registry or default_registry(plugins=False)
    program = compile_source(source, "module.pipe", registry).program
    passed, failures = 0, []
    for number, case in enumerate(cases, 1):
        with tempfile.TemporaryDirectory() as folder:
            options = RunOptions(inputs=dict(case["inputs"]), budget=Budget(max_steps=5_000_000), tree=False,
                                 printer=lambda _text: None, trace=Path(folder) / "trace.jsonl", use_cache=False)
            try:
                machine = run_program(program, Path(folder), registry, options)
            except PipeRuntimeError as err:
                if "error" in case and case["error"] in err.message:
                    passed += 1
                else:
                    failures.append(f"case {number}: runtime error: {err.message}")
                continue
        result = to_plain(machine.state.result)
        if "expected" in case and strict_equal(result, case["expected"]):
            passed += 1
        else:
            failures.append(f"case {number}: got {json.dumps(result)}, expected "
                            f"{json.dumps(case.get('expected', 'error ' + case.get('error', '')))}")
    return passed, failures


def score(task: str, source: str | None) -> tuple[Score, list[str]]:
    from orgtree_lang.syntax.diagnostics import CompileError

    idiomatic = nonblank_lines((HERE / task / "solution.pipe").read_text(encoding="utf-8"))
    cases = cases_of(task)
    if source is None:
        return Score(task, 0, idiomatic, 0, len(cases), "no module"), []
    try:
        passed, failures = run_cases(source, cases)
    except CompileError as err:
        return Score(task, nonblank_lines(source), idiomatic, 0, len(cases), "does not compile"), [err.render()]
    return Score(task, nonblank_lines(source), idiomatic, passed, len(cases)), failures


def report(scores: list[Score]) -> str:
    rows = [f"{'task':<16} {'lines':>5} {'idiom':>5} {'ratio':>6} {'cases':>7}  note"]
    for s in scores:
        rows.append(f"{s.task:<16} {s.lines:>5} {s.idiomatic_lines:>5} {s.ratio:>6.2f} {s.passed:>3}/{s.cases:<3}  "
                    f"{s.problem}")
    scored = [s for s in scores if not s.problem]
    if scored:
        mean = sum(s.ratio for s in scored) / len(scored)
        passed = sum(s.passed for s in scores)
        total = sum(s.cases for s in scores)
        rows.append(f"mean ratio {mean:.2f} over {len(scored)} module(s); cases passed {passed}/{total}; "
                    f"valid modules {len(scored)}/{len(scores)}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generated", type=Path, help="a folder holding <task>.pipe modules to score")
    parser.add_argument("--module", nargs=2, metavar=("TASK", "FILE"), help="score one saved module")
    parser.add_argument("--verbose", action="store_true", help="show every failing case")
    args = parser.parse_args(argv)
    if args.module:
        task, file = args.module
        results = [score(task, Path(file).read_text(encoding="utf-8"))]
    elif args.generated:
        results = []
        for task in tasks():
            path = args.generated / f"{task}.pipe"
            results.append(score(task, path.read_text(encoding="utf-8") if path.is_file() else None))
    else:
        results = [score(task, (HERE / task / "solution.pipe").read_text(encoding="utf-8")) for task in tasks()]
    print(report([s for s, _ in results]))
    if args.verbose:
        for s, failures in results:
            for failure in failures:
                print(f"{s.task}: {failure}")
    return 0 if all(s.passed == s.cases for s, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
