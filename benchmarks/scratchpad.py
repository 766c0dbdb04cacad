"""Scratchpad throughput: notes per second written by P processes through lock turns, as a ratio to the same
processes inserting the same rows into state.db with no lock and no protocol (SQLite's own serialization is the floor).

    python benchmarks/scratchpad.py [--processes 8] [--notes 200]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

LOCKED = textwrap.dedent("""
    import sys
    from orgtree_lang.memory.scratchpad import Scratchpad
    root, agent, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with Scratchpad.for_workspace(root) as pad:
        for i in range(count):
            pad.note(agent, f"{agent} step {i}: read the others' notes, then go on with the plan")
""")

BASELINE = textwrap.dedent("""
    import os, sqlite3, sys, time
    root, agent, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    db = sqlite3.connect(os.path.join(root, "state.db"), isolation_level=None, timeout=60)
    db.execute("PRAGMA journal_mode=WAL"); db.execute("PRAGMA synchronous=FULL"); db.execute("PRAGMA busy_timeout=60000")
    db.execute("CREATE TABLE IF NOT EXISTS notes (seq INTEGER PRIMARY KEY AUTOINCREMENT, agent TEXT, text TEXT, at REAL)")
    for i in range(count):
        db.execute("INSERT INTO notes (agent, text, at) VALUES (?, ?, ?)",
                   (agent, f"{agent} step {i}: read the others' notes, then go on with the plan", time.time()))
""")


def timed(script: str, processes: int, notes: int) -> float:
    with tempfile.TemporaryDirectory(prefix="pipe-bench-pad-") as root:
        path = Path(root) / "writer.py"
        path.write_text(script)
        if script is BASELINE:  # create the table before the clock starts, as the scratchpad does on open
            subprocess.run([sys.executable, str(path), root, "setup", "0"], check=True)
        start = time.perf_counter()
        running = [subprocess.Popen([sys.executable, str(path), root, f"agent{k}", str(notes)])
                   for k in range(processes)]
        for process in running:
            if process.wait(timeout=600) != 0:
                raise SystemExit(f"a writer failed with exit code {process.returncode}")
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--processes", type=int, default=8, help="writer processes (default 8)")
    parser.add_argument("--notes", type=int, default=200, help="notes per process (default 200)")
    args = parser.parse_args()
    total = args.processes * args.notes
    print(f"{args.processes} processes x {args.notes} notes = {total} notes", flush=True)
    baseline = timed(BASELINE, args.processes, args.notes)
    print(f"baseline, plain SQLite inserts:    {baseline:6.2f} s  {total / baseline:8.0f} notes/s", flush=True)
    locked = timed(LOCKED, args.processes, args.notes)
    print(f"scratchpad turns (lock + protocol): {locked:6.2f} s  {total / locked:8.0f} notes/s", flush=True)
    print(f"RATIO scratchpad time / baseline time: {locked / baseline:.2f}")


if __name__ == "__main__":
    main()
