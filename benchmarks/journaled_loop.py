"""What journaling costs a long loop: journaled over unjournaled time, at two sizes, over a range and over a list.

    python benchmarks/journaled_loop.py [--n 1000000] [--repeat 1] [--loops range,list] [--baseline REV]

Each figure comes from a fresh worker process that compiles the loop and runs it the way `pipe run` does
(engine.runner.run_program in a new workspace), once journaled and once with `--no-journal`'s options, at n/4 and
n iterations. A journaled run checkpoints its whole state every 50,000 steps; when each checkpoint costs O(n) (a
materialized range of n items on the stack, or a list of n words re-encoded each time) the run is quadratic, which
shows as a per-iteration cost at n well above that at n/4. The `range` loop is `for i in range(n)`; the `list` loop
goes over the n words of `text.split("a " * n)`. Target (issue 26): journaled <= 1.3x unjournaled at n.
With --baseline REV the same workers run git revision REV's code too, in the same invocation.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baseline import checkout, child_env, this_tree  # noqa: E402

SOURCES = {
    "range": '''\
pipeline main(n: int) -> int:
    total = 0
    for i in range(n):
        total = total + i
    return total
''',
    "list": '''\
use text

pipeline main(n: int) -> int:
    words = text.split("a " * n)
    total = 0
    for w in words:
        total = total + len(w)
    return total
''',
}
TARGET = 1.3


def worker(loop: str, n: int, durable: bool) -> float:
    """Seconds of one run of loop `loop` over `n`, as `pipe run` runs it (journaled or not)."""
    from orgtree_lang.compile.api import compile_source
    from orgtree_lang.run.registries import default_registry
    from orgtree_lang.run.runner import RunOptions, run_program

    registry = default_registry(plugins=False)
    source = SOURCES[loop]
    program = compile_source(source, "loop.pipe", registry).program
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        path = root / "loop.pipe"
        path.write_text(source)
        options = RunOptions(inputs={"n": n}, workspace=root, registry=registry, durable=durable,
                             printer=lambda line: None)
        started = time.perf_counter()
        run_program(program, root, registry, options, source=source, program_path=path)
        return time.perf_counter() - started


def measure(root: str, loop: str, n: int, durable: bool) -> float:
    command = [sys.executable, __file__, "--worker", str(n), "--loop", loop, "--durable" if durable else "--plain"]
    done = subprocess.run(command, capture_output=True, text=True, env=child_env(root), check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def figures(root: str, loop: str, n: int, repeat: int) -> dict[str, float]:
    best: dict[str, float] = {}
    for _ in range(repeat):
        for size in (n // 4, n):
            for durable in (True, False):
                key = f"{'journaled' if durable else 'plain'} {size}"
                best[key] = min(best.get(key, float("inf")), measure(root, loop, size, durable))
    return best


def report(label: str, best: dict[str, float], n: int) -> None:
    quarter = n // 4
    ratio = best[f"journaled {n}"] / best[f"plain {n}"]
    growth = best[f"journaled {n}"] / (4 * best[f"journaled {quarter}"])
    print(f"{label}: n={quarter:,} journaled {best[f'journaled {quarter}']:.2f} s, plain "
          f"{best[f'plain {quarter}']:.2f} s; n={n:,} journaled {best[f'journaled {n}']:.2f} s, plain "
          f"{best[f'plain {n}']:.2f} s")
    print(f"{label}: journaled / unjournaled at n={n:,}: {ratio:.2f}x (target <= {TARGET}x); "
          f"per-iteration cost at n over n/4, journaled: {growth:.2f} (1.0 is linear)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--loops", default="range,list", help="which loops to time (range, list)")
    parser.add_argument("--baseline", metavar="REV", help="also time git revision REV")
    parser.add_argument("--loop", default="range", help=argparse.SUPPRESS)
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--durable", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--plain", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        print(json.dumps(worker(args.loop, args.worker, args.durable)))
        return 0
    loops = args.loops.split(",")
    for loop in loops:
        report(f"this tree, {loop} loop", figures(this_tree(), loop, args.n, args.repeat), args.n)
    if args.baseline:
        with tempfile.TemporaryDirectory(prefix="pipe-baseline-") as tmp:
            root = checkout(args.baseline, tmp)
            for loop in loops:
                report(f"baseline {args.baseline}, {loop} loop", figures(root, loop, args.n, args.repeat), args.n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
