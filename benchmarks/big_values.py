"""How much run storage a big input costs: `pipe run` with a 5 MB input to an ambiguous block, then replayed.

    python benchmarks/big_values.py [--mb 5]

In a fresh workspace, a program hands its input to an ambiguous block; scripted models write and accept the
module for it. The run is made with `pipe run --inputs FILE.json` (a subprocess, as a user runs it) and then
`pipe replay`. Prints the bytes the run left in .orgtree/ by area (its folder, blobs/, state.db, index/) and
their total over the input's size. Target (issue #12): under 2x the input.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

PROGRAM = '''use text

pipeline main(report: str) -> str:
    size = len(report)
    ambiguous classify(report: str) -> label: str:
        """Label the report: bug if it mentions a crash, else question."""
    return label
'''
MODULE = '''```pipe
use text

pipeline main(report: str) -> str:
    if text.contains(text.lower(report), "crash"):
        return "bug"
    return "question"
```'''
REVIEW = json.dumps({"concerns": [], "summary": "fits the spec"})
TARGET = 2.0


def pipe(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PIPE_NO_PLUGINS": "1"}
    return subprocess.run([sys.executable, "-P", "-m", "orgtree_lang.cli.main", *args], cwd=folder, env=env,
                          capture_output=True, text=True)


def sizes(workspace: Path) -> dict[str, int]:
    found = {}
    for path in sorted((workspace / ".orgtree").rglob("*")):
        if path.is_file() and "cache" not in path.relative_to(workspace / ".orgtree").parts[:1]:
            found[str(path.relative_to(workspace / ".orgtree"))] = path.stat().st_size
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=5.0)
    args = parser.parse_args()
    rng = random.Random(7)
    words = ["crash", "on", "start", "the", "editor", "window", "when", "saving", "a", "file"]
    report = []
    size = 0
    while size < args.mb * 1_000_000:
        word = rng.choice(words)
        report.append(word)
        size += len(word) + 1
    text = " ".join(report)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "triage.pipe").write_text(PROGRAM)
        # The context tree's summaries are the run's model's (docs/memory.md): a short one for each.
        (root / "author.json").write_text(json.dumps([{"match": {"contains": "Write a module"}, "reply": MODULE},
                                                      {"match": {"contains": "Summarize the text below"},
                                                       "reply": "Reports of the editor crashing on start."}]))
        (root / "reviewer.json").write_text(json.dumps([{"reply": REVIEW}]))
        (root / "inputs.json").write_text(json.dumps({"report": text}))
        done = pipe(root, "run", "triage.pipe", "--inputs", "inputs.json", "--model", "scripted:author.json",
                    "--review-model", "scripted:reviewer.json", "--json")
        if done.returncode != 0:
            print(done.stdout, done.stderr)
            return 1
        run_id = json.loads(done.stdout)["run_id"]
        after_run = sizes(root)
        replayed = pipe(root, "replay", run_id)
        print(f"input: {len(text):,} bytes; run {run_id}: {json.loads(done.stdout)['output']!r}; "
              f"replay exit {replayed.returncode}: {replayed.stderr.strip().splitlines()[-1]}")
        areas: dict[str, int] = {}
        for name, count in after_run.items():
            first = name.split("/")[0]
            area = ("the run's folder (journal, traces)" if first == "runs" else
                    "blobs/ (big values, memory pieces)" if first == "blobs" else
                    "state.db (org tree, memory, ...)" if first.startswith("state.db") else
                    "index/ (search index of the input)" if first == "index" else "other")
            areas[area] = areas.get(area, 0) + count
        for area, count in sorted(areas.items()):
            print(f"  {area:<40} {count:>12,}")
        biggest = max(after_run.values())
        print(f"  (largest file {biggest:,} bytes; {len(after_run)} files)")
        total = sum(areas.values())
        print(f"run storage {total:,} bytes = {total / len(text):.2f}x the input (target < {TARGET}x)")
        extra = sum(sizes(root).values()) - total
        print(f"pipe replay added {extra:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
