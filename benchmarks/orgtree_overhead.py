"""What recording the org tree costs: the same programs run with and without a TreeRecorder, in this process.

    python benchmarks/orgtree_overhead.py [--repeat 5] [--stages]

Each program runs on a Machine with no tracer and no journal, once with the recorder `pipe run` uses (nodes
batched into the workspace's state.db) and once without. Prints the median wall and CPU time of each and the
ratios (CPU time is steadier on a shared machine; the recorder does all its work in the run's thread).
A skill call is one node; a pipeline call opens and closes one; past 100,000 skill calls per run they are
only counted, so the skill-heavy loop also measures that path.

`--stages` says where the recording time goes: the skill and pipeline loops run again with recorders that stop
after each stage (events heard and dropped; calls kept, then dropped at the write; made into columns, never
stored (skill calls are summarized when heard and made into columns when stored, so this stage adds nothing to
them); everything), and the microseconds each adds to a call are printed against issue 26's 1.3x budget.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from orgtree_lang.compile.api import compile_source
from orgtree_lang.runlog.recorder import TreeRecorder, recorder_for
from orgtree_lang.runlog.store import TreeStore
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


class HeardOnly(TreeRecorder):
    """Hears each call and keeps nothing: what the machine's events and the observer (ids, summaries of a skill
    call's arguments and result) cost."""

    def open_call(self, *fields) -> None:
        pass

    def return_call(self, node_id, value) -> None:
        pass

    def skill_call(self, *fields, **named) -> None:
        pass


class KeptOnly(TreeRecorder):
    """Keeps each call until the write, then drops the batch unwritten (pipeline calls unsummarized)."""

    def flush(self) -> None:
        self._last_flush = self.clock()
        self._returned, self._rows = [], []
        self._dirty.clear()


STAGES = (("events heard, nothing kept", lambda root: HeardOnly(None)),
          ("+ calls kept until the write", lambda root: KeptOnly(None)),
          ("+ made into columns, not stored", lambda root: TreeRecorder(None)),
          ("+ encoded and stored (pipe run)", lambda root: TreeRecorder(TreeStore.for_workspace(root))))


def one_run(program, registry, root: Path, entry: str, n: int, recorded) -> tuple[float, float]:
    """Wall and CPU seconds of one run (the recorder writes in this thread, so CPU time counts all it does);
    `recorded` is False, True (the recorder `pipe run` uses) or a function of the workspace making a recorder."""
    recorder = (recorded(root) if callable(recorded) else recorder_for(root)) if recorded else None
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
    parser.add_argument("--stages", action="store_true", help="also say where the recording time goes, stage by stage")
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
        if args.stages:
            stages(program, registry, root, args.repeat)
    return 0


def stages(program, registry, root: Path, repeat: int) -> None:
    """CPU microseconds each stage of recording adds to one call of the skill and pipeline loops: the fastest of
    3 x `repeat` interleaved runs of 30,000 calls each (load only ever adds time, so the least is the steadiest
    figure for a difference this small)."""
    for label, entry, _ in CASES[:2]:
        n = 30_000
        plain, staged = [], [[] for _ in STAGES]
        for _ in range(3 * repeat):
            plain.append(one_run(program, registry, root, entry, n, False)[1])
            for times, (_, make) in zip(staged, STAGES):
                times.append(one_run(program, registry, root, entry, n, make)[1])
        base = min(plain)
        per_call = base / n * 1e6
        print(f"\nwhere recording {label} goes ({n:,}, CPU; an iteration alone is {per_call:.2f} us, "
              f"so 1.3x leaves {0.3 * per_call:.2f} us):")
        before = 0.0
        for (stage, _), times in zip(STAGES, staged):
            over = (min(times) - base) / n * 1e6
            print(f"  {stage:<34} {over:>6.2f} us a call ({over - before:+.2f})   "
                  f"{min(times) / base:.2f}x")
            before = over


if __name__ == "__main__":
    sys.exit(main())
