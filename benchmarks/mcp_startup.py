"""What an MCP server adds to `pipe run`: a program calling two tools of a stdio server (tests/mcp_servers/
notes_server.py, the SDK's own server class), over the same program with two pure text skills in their place.

    python benchmarks/mcp_startup.py [--repeat 3] [--baseline REV]

Each run is a fresh `pipe run` process in a workspace whose orgtree.toml declares the server; the first run of
a workspace is timed apart from the later ones (a later run may reuse what an earlier one learned, such as the
server's tool list). Best of --repeat, by wall clock. Target (issue 26): a later run within 1.5 s of the run with
no server. With --baseline REV, git revision REV's code runs the same programs too, in the same invocation.
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

SERVER = Path(__file__).resolve().parent.parent / "tests" / "mcp_servers" / "notes_server.py"
PROGRAM = '''\
use mcp.notes

pipeline main(text: str) -> str:
    n = mcp.notes.word_count(text, minimum_length=3)
    return str(n) + " " + mcp.notes.shout(text)
'''
NO_SERVER = '''\
use text

pipeline main(text: str) -> str:
    n = text.len(text)
    return str(n) + " " + text.upper(text)
'''
TARGET_S = 1.5


def timed(root: str, folder: Path, program: str) -> float:
    command = [sys.executable, "-m", "orgtree_lang.cli.main", "run", program, "-i", "text=the big red fox"]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, env=child_env(root))
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"pipe run {program} failed ({done.returncode}):\n{done.stderr}")
    return seconds


def workspace(folder: Path) -> None:
    command = json.dumps([sys.executable, str(SERVER), str(folder / "calls.txt")])
    (folder / "orgtree.toml").write_text(f"[mcp.servers.notes]\ncommand = {command}\n")
    (folder / "mcp.pipe").write_text(PROGRAM)
    (folder / "plain.pipe").write_text(NO_SERVER)


def measure(label: str, root: str, repeat: int) -> None:
    plain, first, later = [], [], []
    for _ in range(repeat):  # interleaved, so load on the machine hits every variant alike
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            workspace(folder)
            plain.append(timed(root, folder, "plain.pipe"))
            first.append(timed(root, folder, "mcp.pipe"))
            later.append(timed(root, folder, "mcp.pipe"))
    print(f"{label}: no server {min(plain):.2f} s; with the MCP server: first run {min(first):.2f} s, "
          f"a later run {min(later):.2f} s (best of {repeat})")
    print(f"{label}: the MCP server adds {min(later) - min(plain):.2f} s to a later run, "
          f"{min(first) - min(plain):.2f} s to the first (target <= {TARGET_S} s)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", metavar="REV", help="also time git revision REV")
    args = parser.parse_args()
    measure("this tree", this_tree(), args.repeat)
    if args.baseline:
        with tempfile.TemporaryDirectory(prefix="pipe-baseline-") as tmp:
            measure(f"baseline {args.baseline}", checkout(args.baseline, tmp), args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
