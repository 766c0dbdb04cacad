"""What reaching a saved ambiguous block costs a journaled run with no model: `pipe run` of a loop that reaches one
block N times, against the same run with `--no-journal` and, with `--baseline REV`, against git revision REV.

    python benchmarks/block_reach.py [--reaches 1000] [--repeat 3] [--baseline 241669c~1]

In a fresh workspace a first run writes the block's module with scripted models; the timed runs reuse it and call
no model. Each timed run is a `pipe run` subprocess, this tree's and REV's alternating so a busy moment of a shared
machine hits both alike; the best of `--repeat` is kept. Target (issue 26): a no-model run no slower than before
the run-time agents (241669c made finding a block's module a journaled step, taken at every reach).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROGRAM = '''use text

pipeline main(n: int) -> int:
    bugs = 0
    for i in range(n):
        report = f"question number {i}"
        if i % 2 == 0:
            report = f"crash number {i}"
        ambiguous classify(report: str) -> label: str:
            """Label the report: bug if it mentions a crash, else question."""
        if label == "bug":
            bugs += 1
    return bugs
'''
MODULE = '''```pipe
use text

pipeline main(report: str) -> str:
    if text.contains(text.lower(report), "crash"):
        return "bug"
    return "question"
```'''


def pipe(root: str, workspace: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=root, PIPE_NO_PLUGINS="1")
    return subprocess.run([sys.executable, "-P", "-m", "orgtree_lang.cli.main", *args], cwd=workspace, env=env,
                          capture_output=True, text=True)


def workspace_for(root: str, folder: Path) -> Path:
    """A workspace whose block's module is written and saved (scripted models), for the tree at `root`."""
    folder.mkdir(parents=True)
    (folder / "triage.pipe").write_text(PROGRAM)
    (folder / "author.json").write_text(json.dumps([{"match": {"contains": "Write a module"}, "reply": MODULE}]))
    (folder / "reviewer.json").write_text(json.dumps([{"reply": json.dumps({"concerns": [], "summary": "fits"})}]))
    done = pipe(root, folder, "run", "triage.pipe", "-i", "n=2", "--model", "scripted:author.json",
                "--review-model", "scripted:reviewer.json")
    if done.returncode != 0:
        raise SystemExit(f"the first run in {folder} failed:\n{done.stdout}{done.stderr}")
    return folder


def timed(root: str, workspace: Path, reaches: int, *flags: str) -> float:
    started = time.perf_counter()
    done = pipe(root, workspace, "run", "triage.pipe", "-i", f"n={reaches}", *flags)
    seconds = time.perf_counter() - started
    if done.returncode != 0 or done.stdout.strip().splitlines()[-1] != str(reaches // 2 + reaches % 2):
        raise SystemExit(f"the timed run in {workspace} failed:\n{done.stdout}{done.stderr}")
    return seconds


def checkout(rev: str, folder: Path) -> str:
    archive = subprocess.run(["git", "-C", str(HERE.parent), "archive", rev], check=True, capture_output=True)
    folder.mkdir()
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    for name in ("stdlib", "grammar"):  # installed as orgtree_lang.stdlib and orgtree_lang.grammar
        if (folder / name).is_dir() and not (folder / "orgtree_lang" / name).exists():
            os.symlink(folder / name, folder / "orgtree_lang" / name)
    return str(folder)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reaches", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", metavar="REV", help="also time the run with the code of this git revision")
    args = parser.parse_args()
    here = str(Path(__import__("orgtree_lang").__file__).resolve().parent.parent)
    with tempfile.TemporaryDirectory(prefix="pipe-reach-") as tmp:
        trees = {"now": (here, workspace_for(here, Path(tmp) / "now"))}
        if args.baseline:
            root = checkout(args.baseline, Path(tmp) / "baseline")
            trees[args.baseline] = (root, workspace_for(root, Path(tmp) / "baseline-workspace"))
        best: dict[tuple[str, str], float] = {}
        for _ in range(args.repeat):
            for name, (root, workspace) in trees.items():
                for mode, flags in (("journaled", ()), ("no journal", ("--no-journal",))):
                    seconds = timed(root, workspace, args.reaches, *flags)
                    best[name, mode] = min(best.get((name, mode), seconds), seconds)
    print(f"`pipe run` of a loop reaching a saved ambiguous block {args.reaches:,} times, no model, best of "
          f"{args.repeat}")
    for name in trees:
        journaled, plain = best[name, "journaled"], best[name, "no journal"]
        print(f"  {name:<12} journaled {journaled:6.2f} s ({journaled / args.reaches * 1000:5.2f} ms a reach), "
              f"--no-journal {plain:6.2f} s: journaled {journaled / plain:.2f}x")
    if args.baseline:
        ratio = best["now", "journaled"] / best[args.baseline, "journaled"]
        print(f"journaled now / at {args.baseline}: {ratio:.2f}x; "
              f"{'meets' if ratio <= 1.0 else 'MISSES'} the target of 1.0 (no slower)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
