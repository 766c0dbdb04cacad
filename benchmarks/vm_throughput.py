"""Time the same loops in the .pipe VM and as plain Python in this process; print each time and the slowdown.

    python benchmarks/vm_throughput.py [--scale 1.0] [--repeat 3]

Programs are compiled once with compile_source and run by a Machine with no tracer and no step budget,
so the numbers measure the dispatch loop, not tracing. Target: the integer-arithmetic loop within 30x
of CPython.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from typing import Any, Callable

from orgtree_lang.compile.api import compile_source
from orgtree_lang.engine.registries import default_registry
from orgtree_lang.runtime.skills import SkillContext
from orgtree_lang.runtime.workspace import Workspace
from orgtree_lang.vm.budget import Budget
from orgtree_lang.vm.machine import Machine
from orgtree_lang.vm.services import Services

TARGET_ARITHMETIC_RATIO = 30.0

SOURCE = '''\
use lists

pipeline arithmetic(n: int) -> int:
    """Integer arithmetic in a while loop."""
    total = 0
    i = 0
    while i < n:
        total = total + i * 2 % 7
        i = i + 1
    return total

pipeline for_range(n: int) -> int:
    """A for loop over range() with an if."""
    count = 0
    for i in range(n):
        if i % 3 == 0:
            count += i
    return count

pipeline list_append_skill(n: int) -> int:
    """Build a list with the lists.append skill (a new list each time, so quadratic)."""
    xs = []
    i = 0
    while i < n:
        xs = lists.append(xs, i)
        i += 1
    return len(xs)

pipeline list_concat(n: int) -> int:
    """Build a list by concatenation (a new list each time, so quadratic)."""
    xs = []
    i = 0
    while i < n:
        xs = xs + [i]
        i += 1
    return len(xs)

pipeline string_build(n: int) -> int:
    """Build a string piece by piece with + and str()."""
    s = ""
    i = 0
    while i < n:
        s = s + str(i % 10)
        i += 1
    return len(s)

pipeline fstring_build(n: int) -> int:
    """Format a line per iteration with an f-string."""
    size = 0
    for i in range(n):
        line = f"item {i}: {i * 2}"
        size += len(line)
    return size
'''


# The same algorithms in Python: values are immutable in .pipe, so the list loops copy in both.
def arithmetic(n: int) -> int:
    total = 0
    i = 0
    while i < n:
        total = total + i * 2 % 7
        i = i + 1
    return total


def for_range(n: int) -> int:
    count = 0
    for i in range(n):
        if i % 3 == 0:
            count += i
    return count


def list_append_skill(n: int) -> int:
    xs: list[int] = []
    i = 0
    while i < n:
        xs = [*xs, i]
        i += 1
    return len(xs)


def list_concat(n: int) -> int:
    xs: list[int] = []
    i = 0
    while i < n:
        xs = xs + [i]
        i += 1
    return len(xs)


def string_build(n: int) -> int:
    s = ""
    i = 0
    while i < n:
        s = s + str(i % 10)
        i += 1
    return len(s)


def fstring_build(n: int) -> int:
    size = 0
    for i in range(n):
        line = f"item {i}: {i * 2}"
        size += len(line)
    return size


CASES: list[tuple[str, Callable[[int], int], int]] = [
    ("arithmetic", arithmetic, 1_000_000),
    ("for_range", for_range, 1_000_000),
    ("list_append_skill", list_append_skill, 10_000),
    ("list_concat", list_concat, 10_000),
    ("string_build", string_build, 100_000),
    ("fstring_build", fstring_build, 100_000),
]


def best_of(repeat: int, run: Callable[[], Any]) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - started)
    return best, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every iteration count")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best counts")
    args = parser.parse_args(argv)

    registry = default_registry(plugins=False)
    program = compile_source(SOURCE, "vm_throughput.pipe", registry).program
    workspace = Workspace(tempfile.mkdtemp(prefix="pipe-bench-"))

    def run_vm(name: str, n: int) -> Any:
        machine = Machine(program, Services(registry=registry, context=SkillContext(workspace, run_id="bench"),
                                            budget=Budget(max_steps=None)))
        machine.start(name, {"n": n})
        return machine.run().result

    print(f"python {sys.version.split()[0]}, best of {args.repeat}")
    print(f"{'loop':<18} {'iterations':>10} {'vm s':>9} {'python s':>9} {'slowdown':>9}")
    ratios = {}
    for name, python_version, count in CASES:
        n = max(1, int(count * args.scale))
        vm_seconds, vm_result = best_of(args.repeat, lambda: run_vm(name, n))
        py_seconds, py_result = best_of(args.repeat, lambda: python_version(n))
        if vm_result != py_result:
            print(f"{name}: the VM computed {vm_result!r} but Python {py_result!r}", file=sys.stderr)
            return 1
        ratios[name] = vm_seconds / py_seconds
        print(f"{name:<18} {n:>10} {vm_seconds:>9.4f} {py_seconds:>9.4f} {ratios[name]:>8.1f}x")
    ratio = ratios["arithmetic"]
    verdict = "meets" if ratio <= TARGET_ARITHMETIC_RATIO else "MISSES"
    print(f"arithmetic loop: {ratio:.1f}x slower than CPython; {verdict} the target of "
          f"{TARGET_ARITHMETIC_RATIO:.0f}x (ratio to target {ratio / TARGET_ARITHMETIC_RATIO:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
