"""What `pipe run`'s default path costs over the bare VM, and how large its trace is, at each trace level.

    python benchmarks/trace_levels.py [--n 200000] [--repeat 3]

One process times the same compiled 200,000-iteration arithmetic loop twice over: on a Machine with no trace,
org tree or journal (the baseline), and as `pipe run` runs it (engine.runner.run_program with a journal, the
org tree and the trace, in a fresh workspace) at each trace level. Prints the median wall and CPU times, each
run's ratios to the baseline and the bytes of trace it left. Targets (issue #12): the default level within
1.3x of the baseline and under 1 MB of trace. A durable run's start and checkpoints wait for the disk (fsync):
that shows in wall time, not CPU time, and it is a fixed cost (a longer run's ratio comes closer to its CPU one).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from orgtree_lang.compile.api import compile_source
from orgtree_lang.run.factory import plain_machine
from orgtree_lang.run.registries import default_registry
from orgtree_lang.run.runner import RunOptions, run_program

SOURCE = '''\
pipeline main(n: int) -> int:
    """Integer arithmetic in a while loop."""
    total = 0
    i = 0
    while i < n:
        total = total + i * 2 % 7
        i = i + 1
    return total
'''
TARGET_RATIO = 1.3
TARGET_TRACE_BYTES = 1_000_000


def bare(program, n: int) -> tuple[float, float]:
    """Wall and CPU seconds of one run on a bare Machine."""
    machine = plain_machine(program)
    started, cpu = time.perf_counter(), time.process_time()
    machine.start("main", {"n": n})
    machine.run()
    return time.perf_counter() - started, time.process_time() - cpu


def as_pipe_run(program, registry, source: str, n: int, level: str) -> tuple[float, float, int]:
    """Wall and CPU seconds of one durable run at `level`, and the bytes of trace (every file of it) it left."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        path = root / "loop.pipe"
        path.write_text(source)
        options = RunOptions(inputs={"n": n}, workspace=root, registry=registry, durable=True, trace_level=level,
                             printer=lambda line: None)
        started, cpu = time.perf_counter(), time.process_time()
        run_program(program, root, registry, options, source=source, program_path=path)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        size = sum(p.stat().st_size for p in (root / ".orgtree" / "runs").glob("*/trace.jsonl*"))
    return seconds, cpu, size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--levels", default="calls,off,steps", help="comma-separated trace levels to time")
    args = parser.parse_args()
    registry = default_registry(plugins=False)
    program = compile_source(SOURCE, "loop.pipe", registry).program
    levels = args.levels.split(",")
    base: list[tuple[float, float]] = []
    runs: dict[str, list[tuple[float, float]]] = {level: [] for level in levels}
    sizes: dict[str, int] = {}
    for _ in range(args.repeat):  # interleaved, so load on the machine hits every variant alike
        base.append(bare(program, args.n))
        for level in levels:
            wall, cpu, sizes[level] = as_pipe_run(program, registry, SOURCE, args.n, level)
            runs[level].append((wall, cpu))

    def medians(samples):
        return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)

    base_wall, base_cpu = medians(base)
    print(f"arithmetic loop, n={args.n:,}, median of {args.repeat}")
    print(f"{'variant':<28} {'wall s':>7} {'ratio':>6} {'CPU s':>7} {'ratio':>6} {'trace bytes':>12}")
    print(f"{'VM, no trace/tree/journal':<28} {base_wall:>7.3f} {1.0:>5.2f}x {base_cpu:>7.3f} {1.0:>5.2f}x {'-':>12}")
    for level in levels:
        wall, cpu = medians(runs[level])
        label = f"pipe run --trace-level {level}"
        print(f"{label:<28} {wall:>7.3f} {wall / base_wall:>5.2f}x {cpu:>7.3f} {cpu / base_cpu:>5.2f}x "
              f"{sizes[level]:>12,}")
    if "calls" in runs:
        wall, cpu = medians(runs["calls"])
        print(f"default level (calls): {cpu / base_cpu:.2f}x the bare VM by CPU, {wall / base_wall:.2f}x by wall "
              f"(target <= {TARGET_RATIO}x); trace {sizes['calls']:,} bytes (target < {TARGET_TRACE_BYTES:,})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
