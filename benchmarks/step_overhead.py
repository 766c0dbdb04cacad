"""Time a 1,000-step loop of cheap side-effecting calls with and without durability, here and in LangGraph; print µs/step.

    python benchmarks/step_overhead.py [--steps 1000] [--repeat 3]

Four loops of the same shape, each the best of `--repeat` runs:

- orgtree_lang, journal off and journal on: a `.pipe` loop calling `time.now()` (a side-effecting skill,
  so a durable run journals every call) run through `runner.run_file`;
- LangGraph without a checkpointer and with `SqliteSaver` on a file: a StateGraph whose one node counts
  and calls the same cheap clock function, looping back through a conditional edge.

Per-step overhead of durability = (time with it - time of the same loop without it) / steps, for each
system; the target is LangGraph's at least 5x ours. LangGraph is measured with durability="sync" (the
checkpoint is written before the next step starts, the guarantee our journal gives) and also with its
default "async" (written in a background thread while the next step runs). `langgraph` and
`langgraph-checkpoint-sqlite` are benchmark-only; without them the orgtree_lang figures are still printed.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sqlite3
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from orgtree_lang.runner import RunOptions, run_file
from orgtree_lang.runtime.skills import default_registry

TARGET_RATIO = 5.0

PROGRAM = """\
use time

pipeline main(n: int) -> int:
    i = 0
    while i < n:
        t = time.now()
        i += 1
    return i
"""

OURS_DURABILITY = "SQLite journal, WAL, synchronous=FULL, one commit per side-effecting step"


def best_of(repeat: int, run: Callable[[], object]) -> float:
    """The shortest wall time of `repeat` calls of `run`, in seconds (after one untimed warm-up call)."""
    run()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def clock_text() -> str:
    """What the stdlib skill time.now computes, for the LangGraph node to do the same work."""
    moment = datetime.fromtimestamp(time.time(), tz=timezone.utc)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


# --- orgtree_lang -----------------------------------------------------------------------------------


def orgtree_times(steps: int, repeat: int, scratch: Path) -> dict[str, float | None]:
    program = scratch / "loop.pipe"
    program.write_text(PROGRAM, encoding="utf-8")
    registry = default_registry(plugins=False)
    has_durable = "durable" in {f.name for f in dataclasses.fields(RunOptions)}

    def loop(durable: bool) -> Callable[[], object]:
        # One workspace per setting, so the compile cache is warm and each run gets its own journal.
        workspace = scratch / ("ws-durable" if durable else "ws-plain")
        workspace.mkdir(exist_ok=True)
        extra = {"durable": durable} if has_durable else {}
        options = RunOptions(inputs={"n": steps}, workspace=workspace, trace_steps=False, registry=registry, **extra)

        def run() -> object:
            result = run_file(program, options).state.result
            assert result == steps, result
            return result

        return run

    plain = best_of(repeat, loop(False))
    if not has_durable:
        print("orgtree_lang: RunOptions has no `durable` field yet; the journal-on loop is skipped")
        return {"plain": plain, "durable": None}
    return {"plain": plain, "durable": best_of(repeat, loop(True))}


# --- LangGraph --------------------------------------------------------------------------------------


def langgraph_times(steps: int, repeat: int, scratch: Path) -> dict[str, object] | None:
    try:
        from typing import TypedDict

        from langgraph.checkpoint.sqlite import SqliteSaver
        from langgraph.graph import END, START, StateGraph
    except ImportError as exc:
        print(f"LangGraph: not installed ({exc.name}); skipped. For the comparison run\n"
              "    pip install langgraph langgraph-checkpoint-sqlite\n"
              "(benchmark-only packages, not dependencies of orgtree_lang)")
        return None

    class LoopState(TypedDict):
        i: int
        t: str

    def step(state: LoopState) -> dict:
        return {"i": state["i"] + 1, "t": clock_text()}

    builder = StateGraph(LoopState)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", lambda state: "step" if state["i"] < steps else END, ["step", END])
    limit = {"recursion_limit": steps + 10}

    plain_graph = builder.compile()

    def plain() -> object:
        result = plain_graph.invoke({"i": 0, "t": ""}, limit)
        assert result["i"] == steps, result
        return result

    counter = iter(range(1_000_000))
    settings: dict[str, object] = {}

    def checkpointed(durability: str) -> Callable[[], object]:
        def run() -> object:
            # A fresh database per run, as each orgtree_lang run gets a fresh journal.
            path = scratch / f"langgraph-{next(counter)}.sqlite"
            conn = sqlite3.connect(path, check_same_thread=False)
            try:
                saver = SqliteSaver(conn)
                graph = builder.compile(checkpointer=saver)
                config = {"configurable": {"thread_id": "bench"}, **limit}
                result = graph.invoke({"i": 0, "t": ""}, config, durability=durability)
                assert result["i"] == steps, result
                settings["journal_mode"] = conn.execute("PRAGMA journal_mode").fetchone()[0]
                settings["synchronous"] = conn.execute("PRAGMA synchronous").fetchone()[0]
                settings["checkpoints"] = conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
                settings["writes"] = conn.execute("SELECT count(*) FROM writes").fetchone()[0]
            finally:
                conn.close()
            return result

        return run

    return {
        "plain": best_of(repeat, plain),
        "sync": best_of(repeat, checkpointed("sync")),
        "async": best_of(repeat, checkpointed("async")),
        "settings": settings,
    }


def fsync_commit_us(scratch: Path, commits: int = 300) -> float:
    """The cost of one small SQLite commit in WAL mode with synchronous=FULL on this disk: the floor per durable step."""
    conn = sqlite3.connect(scratch / "floor.sqlite", isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("CREATE TABLE steps (seq INTEGER PRIMARY KEY, result BLOB)")
        start = time.perf_counter()
        for seq in range(commits):
            conn.execute("INSERT INTO steps VALUES (?, ?)", (seq, b"x" * 100))
        return (time.perf_counter() - start) / commits * 1e6
    finally:
        conn.close()


# --- report -----------------------------------------------------------------------------------------


def per_step_us(seconds: float, steps: int) -> float:
    return seconds / steps * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    steps = args.steps

    scratch = Path(tempfile.mkdtemp(prefix="step_overhead-"))
    try:
        ours = orgtree_times(steps, args.repeat, scratch)
        theirs = langgraph_times(steps, args.repeat, scratch)
        floor = fsync_commit_us(scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    names = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
    print(f"\n{steps}-step loop of a cheap clock call, best of {args.repeat}; µs per step")
    print(f"  orgtree_lang, journal off            raw {per_step_us(ours['plain'], steps):8.1f}")
    ours_overhead = None
    if ours["durable"] is not None:
        ours_overhead = per_step_us(ours["durable"] - ours["plain"], steps)
        print(f"  orgtree_lang, journal on             raw {per_step_us(ours['durable'], steps):8.1f}"
              f"   overhead {ours_overhead:8.1f}")
    print(f"  (one SQLite commit, WAL, synchronous=FULL, on this disk: {floor:.1f} µs; the floor per durable step)")
    if theirs is not None:
        s = theirs["settings"]
        sync_overhead = per_step_us(theirs["sync"] - theirs["plain"], steps)
        async_overhead = per_step_us(theirs["async"] - theirs["plain"], steps)
        print(f"  LangGraph, no checkpointer           raw {per_step_us(theirs['plain'], steps):8.1f}")
        print(f"  LangGraph, SqliteSaver, sync         raw {per_step_us(theirs['sync'], steps):8.1f}"
              f"   overhead {sync_overhead:8.1f}")
        print(f"  LangGraph, SqliteSaver, async        raw {per_step_us(theirs['async'], steps):8.1f}"
              f"   overhead {async_overhead:8.1f}")
        print("\ndurability")
        print(f"  orgtree_lang: {OURS_DURABILITY}")
        print(f"  LangGraph:    SqliteSaver sets journal_mode=WAL and leaves synchronous at SQLite's default "
              f"(here journal_mode={s['journal_mode']}, synchronous={names.get(s['synchronous'], s['synchronous'])});")
        print(f"                commits after every put/put_writes ({s['checkpoints']} checkpoints and "
              f"{s['writes']} writes rows per run); 'sync' waits for the checkpoint before the next step,")
        print("                'async' (LangGraph's default) writes it in a background thread while the next step runs")
        if ours_overhead is not None:
            print("\nratio of durability overhead per step, LangGraph / orgtree_lang "
                  f"(target >= {TARGET_RATIO:g}x)")
            for label, theirs_overhead in (("sync (same guarantee)", sync_overhead), ("async (default)", async_overhead)):
                ratio = theirs_overhead / ours_overhead if ours_overhead > 0 else float("inf")
                verdict = "meets" if ratio >= TARGET_RATIO else "MISSES"
                print(f"  {label:24s} {ratio:6.1f}x  {verdict} the target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
