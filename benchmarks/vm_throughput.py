"""Time the same loops in the .pipe VM and as plain Python in this process; print each time and the slowdown.

    python benchmarks/vm_throughput.py [--scale 1.0] [--repeat 3] [--only arithmetic ...] [--baseline REV]

Programs are compiled once with compile_source and run by a Machine with no tracer and no step budget,
so the numbers measure the dispatch loop, not tracing. Target (issue #12): the integer-arithmetic loop
within 15x of CPython.

With `--baseline REV` every loop is also timed with the VM of git revision REV (e.g. `main`): each
measurement in a fresh subprocess that times the VM and then Python, this tree's and REV's alternating so
that a busy moment of a shared machine hits both alike; the table shows median slowdowns over `--repeat`
rounds and how much faster this tree's VM is than REV's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from orgtree_lang.compile.api import compile_source
from orgtree_lang.run.registries import default_registry
from orgtree_lang.runtime.skills import SkillContext
from orgtree_lang.runtime.workspace import Workspace
from orgtree_lang.vm.budget import Budget
from orgtree_lang.vm.machine import Machine
from orgtree_lang.vm.services import Services

TARGET_ARITHMETIC_RATIO = 15.0
HERE = Path(__file__).resolve()

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

pipeline double(x: int) -> int:
    return x * 2

pipeline pipeline_calls(n: int) -> int:
    """Call a pipeline in a loop: a frame pushed and popped each time."""
    total = 0
    for i in range(n):
        total += double(i)
    return total
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


def double(x: int) -> int:
    return x * 2


def pipeline_calls(n: int) -> int:
    total = 0
    for i in range(n):
        total += double(i)
    return total


CASES: list[tuple[str, Callable[[int], int], int]] = [
    ("arithmetic", arithmetic, 1_000_000),
    ("for_range", for_range, 1_000_000),
    ("list_append_skill", list_append_skill, 10_000),
    ("list_concat", list_concat, 10_000),
    ("string_build", string_build, 100_000),
    ("fstring_build", fstring_build, 100_000),
    ("pipeline_calls", pipeline_calls, 200_000),
]


def best_of(repeat: int, run: Callable[[], Any]) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - started)
    return best, result


def vm_runner() -> Callable[[str, int], Any]:
    """A function running pipeline `name` of SOURCE with input n in a fresh Machine, compiled once."""
    registry = default_registry(plugins=False)
    program = compile_source(SOURCE, "vm_throughput.pipe", registry).program
    workspace = Workspace(tempfile.mkdtemp(prefix="pipe-bench-"))

    def run_vm(name: str, n: int) -> Any:
        machine = Machine(program, Services(registry=registry, context=SkillContext(workspace, run_id="bench"),
                                            budget=Budget(max_steps=None)))
        machine.start(name, {"n": n})
        return machine.run().result

    return run_vm


def child(name: str, n: int) -> None:
    """One measurement for --baseline, in a process whose orgtree_lang is the tree under test."""
    run_vm = vm_runner()
    python_version = next(f for case, f, _ in CASES if case == name)
    times = {}
    for label, run in (("vm", lambda: run_vm(name, n)), ("py", lambda: python_version(n))):
        wall, cpu = time.perf_counter(), time.process_time()
        times[label] = run()
        times[label + "_cpu"] = time.process_time() - cpu
        times[label + "_wall"] = time.perf_counter() - wall
    print(json.dumps({**{k: v for k, v in times.items() if k.endswith(("_cpu", "_wall"))},
                      "agree": times["vm"] == times["py"]}))


def checkout(rev: str, folder: str) -> str:
    """Unpack git revision `rev` of this repository into `folder`, laid out as an installed copy."""
    archive = subprocess.run(["git", "-C", str(HERE.parent.parent), "archive", rev], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", folder], input=archive.stdout, check=True)
    # The stdlib and grammar folders are installed as orgtree_lang.stdlib and orgtree_lang.grammar.
    for part in ("stdlib", "grammar"):
        if (Path(folder) / part).is_dir() and not (Path(folder) / "orgtree_lang" / part).exists():
            os.symlink(Path(folder) / part, Path(folder) / "orgtree_lang" / part)
    return folder


def measure_in(root: str, name: str, n: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=root, PIPE_NO_PLUGINS="1")
    done = subprocess.run([sys.executable, "-P", str(HERE), "--child", name, str(n)], capture_output=True,
                          text=True, env=env, cwd=root)
    if done.returncode != 0:
        raise SystemExit(f"timing {name} with the VM in {root} failed:\n{done.stderr}")
    result = json.loads(done.stdout.splitlines()[-1])
    if not result["agree"]:
        raise SystemExit(f"{name}: the VM in {root} computed another result than Python")
    return result


def versus_baseline(rev: str, cases: list[tuple[str, int]], repeat: int) -> dict[str, float]:
    here = str(Path(__import__("orgtree_lang").__file__).resolve().parent.parent)
    print(f"python {sys.version.split()[0]}, median of {repeat} rounds, each in a fresh process; baseline {rev}")
    print("slowdown = VM time / Python time in the same process, by CPU time (steadier on a shared machine) "
          "and by wall time")
    print(f"{'loop':<18} {'iterations':>10} {'now cpu':>8} {'base cpu':>9} {'now wall':>9} {'base wall':>10} "
          f"{'VM speedup':>11}")
    ratios = {}
    with tempfile.TemporaryDirectory(prefix="pipe-baseline-") as tmp:
        base = checkout(rev, tmp)
        for name, n in cases:
            now, before = [], []
            for _ in range(repeat):
                now.append(measure_in(here, name, n))
                before.append(measure_in(base, name, n))

            def median(rounds, key):
                return statistics.median(key(r) for r in rounds)

            cpu, base_cpu = (median(r, lambda x: x["vm_cpu"] / x["py_cpu"]) for r in (now, before))
            wall, base_wall = (median(r, lambda x: x["vm_wall"] / x["py_wall"]) for r in (now, before))
            speedup = median(before, lambda x: x["vm_cpu"]) / median(now, lambda x: x["vm_cpu"])
            ratios[name] = cpu
            print(f"{name:<18} {n:>10} {cpu:>7.1f}x {base_cpu:>8.1f}x {wall:>8.1f}x {base_wall:>9.1f}x "
                  f"{speedup:>10.2f}x")
    return ratios


def in_process(cases: list[tuple[str, int]], repeat: int) -> dict[str, float]:
    run_vm = vm_runner()
    print(f"python {sys.version.split()[0]}, best of {repeat}")
    print(f"{'loop':<18} {'iterations':>10} {'vm s':>9} {'python s':>9} {'slowdown':>9}")
    ratios = {}
    for name, n in cases:
        python_version = next(f for case, f, _ in CASES if case == name)
        vm_seconds, vm_result = best_of(repeat, lambda: run_vm(name, n))
        py_seconds, py_result = best_of(repeat, lambda: python_version(n))
        if vm_result != py_result:
            raise SystemExit(f"{name}: the VM computed {vm_result!r} but Python {py_result!r}")
        ratios[name] = vm_seconds / py_seconds
        print(f"{name:<18} {n:>10} {vm_seconds:>9.4f} {py_seconds:>9.4f} {ratios[name]:>8.1f}x")
    return ratios


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every iteration count")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (best of; with --baseline, "
                                                               "rounds whose median counts)")
    parser.add_argument("--only", nargs="+", choices=[name for name, _, _ in CASES], help="time only these loops")
    parser.add_argument("--baseline", metavar="REV", help="also time the VM of this git revision")
    parser.add_argument("--child", nargs=2, metavar=("NAME", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], int(args.child[1]))
        return 0
    cases = [(name, max(1, int(count * args.scale))) for name, _, count in CASES
             if not args.only or name in args.only]
    if args.baseline:
        ratios = versus_baseline(args.baseline, cases, args.repeat)
    else:
        ratios = in_process(cases, args.repeat)
    if "arithmetic" in ratios:
        ratio = ratios["arithmetic"]
        verdict = "meets" if ratio <= TARGET_ARITHMETIC_RATIO else "MISSES"
        print(f"arithmetic loop: {ratio:.1f}x slower than CPython; {verdict} the target of "
              f"{TARGET_ARITHMETIC_RATIO:.0f}x (ratio to target {ratio / TARGET_ARITHMETIC_RATIO:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
