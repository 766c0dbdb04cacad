"""What recording the org tree costs: the same programs run with and without a TreeRecorder, in this process.

    python benchmarks/orgtree_overhead.py [--repeat 5]

Each program runs on a Machine with no tracer and no journal, once with the recorder `pipe run` uses (nodes
batched into the workspace's state.db) and once without. Prints the median wall and CPU time of each and the
ratios (CPU time is steadier on a shared machine; the recorder does all its work in the run's thread).
A skill call is one node; a pipeline call opens and closes one; past 100,000 skill calls per run they are
only counted, so the skill-heavy loop also measures that path.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from orgtree_lang.compile.api import compile_source
from orgtree_lang.runlog.recorder import recorder_for
from orgtree_lang.run.registries import default_registry
from orgtree_lang.runtime.skills import SkillContext
from orgtree_lang.runtime.workspace import Workspace
from orgtree_lang.run.factory import plain_machine
from orgtree_lang.vm.machine import Machine

SOURCE = '''\
use text

pipeline skills(n: int) -> int:
    """A skill call per iteration."""
    total = 0
    for i in range(n):
        total = total + len(text.upper("ab"))
    return total

pipeline helper(x: int) -> int:
    return x + 1

pipeline calls(n: int) -> int:
    """A pipeline call per iteration."""
    total = 0
    for i in range(n):
        total = helper(total)
    return total

pipeline arithmetic(n: int) -> int:
    """No calls at all: the recorder should cost nothing here."""
    total = 0
    for i in range(n):
        total = total + i % 7
    return total
'''
CASES = (("skill calls", "skills", 150_000), ("pipeline calls", "calls", 100_000), ("arithmetic", "arithmetic", 500_000))


def one_run(program, registry, root: Path, entry: str, n: int, recorded: bool) -> tuple[float, float]:
    """Wall and CPU seconds of one run (the recorder writes in this thread, so CPU time counts all it does)."""
    recorder = recorder_for(root) if recorded else None
    machine = plain_machine(program, registry=registry, context=SkillContext(Workspace(root)), recorder=recorder)
    started, cpu = time.perf_counter(), time.process_time()
    machine.start(entry, {"n": n})
    machine.run()
    if recorder is not None:
        recorder.finish()
    return time.perf_counter() - started, time.process_time() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    registry = default_registry(plugins=False)
    program = compile_source(SOURCE, "bench.pipe", registry).program
    print(f"{'program':<16} {'n':>8} {'without (s)':>12} {'with tree (s)':>14} {'ratio':>7}   "
          f"{'CPU without':>11} {'CPU with':>9} {'CPU ratio':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for label, entry, n in CASES:
            plain, recorded = [], []
            for _ in range(args.repeat):  # interleaved, so load on the machine hits both alike
                plain.append(one_run(program, registry, root, entry, n, False))
                recorded.append(one_run(program, registry, root, entry, n, True))
            a, b = statistics.median(p[0] for p in plain), statistics.median(r[0] for r in recorded)
            ca, cb = statistics.median(p[1] for p in plain), statistics.median(r[1] for r in recorded)
            print(f"{label:<16} {n:>8,} {a:>12.3f} {b:>14.3f} {b / a:>6.2f}x   {ca:>11.3f} {cb:>9.3f} "
                  f"{cb / ca:>8.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
