"""Time a 1,000-step loop of cheap side-effecting calls with and without durability, here and in LangGraph; print µs/step.

    python benchmarks/step_overhead.py [--steps 1000] [--repeat 3]

Loops of the same shape, each the best of `--repeat` runs:

- orgtree_lang, journal off and journal on (durability "power" and "process"): a `.pipe` loop calling
  `time.now()` (a side-effecting skill, so a durable run journals every call) run through `runner.run_file`.
  "power" is group commit (time.now is unobserved: its steps share an fsync, at least one per 1,000 steps or
  0.5 s, docs/durability.md); "power, fsync per step" sets `[durable] group_steps = 1`, which is what "power"
  did before group commit (synchronous=FULL, one fsync per step);
- LangGraph without a checkpointer and with `SqliteSaver` on a file: a StateGraph whose one node counts
  and calls the same cheap clock function, looping back through a conditional edge.

Per-step overhead of durability = (time with it - time of the same loop without it) / steps, for each
system; the target is LangGraph's at least 5x ours. LangGraph is measured with durability="sync" (the
checkpoint is written before the next step starts, the guarantee our journal gives) and also with its
default "async" (written in a background thread while the next step runs), and once more with
`PRAGMA synchronous=NORMAL` on its connection to set against our "process" durability. `langgraph` and
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

from orgtree_lang.run.registries import default_registry
from orgtree_lang.run.runner import RunOptions, run_file

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

OURS_DURABILITY = "SQLite journal, WAL, one commit per side-effecting step, fsynced in groups (power)"


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
    """Best wall times of the loop: journal off, and on at each durability level RunOptions offers."""
    program = scratch / "loop.pipe"
    program.write_text(PROGRAM, encoding="utf-8")
    registry = default_registry(plugins=False)
    fields = {f.name for f in dataclasses.fields(RunOptions)}

    def loop(label: str, config: str = "", **settings: object) -> Callable[[], object]:
        # One workspace per setting, so the compile cache is warm and each run gets its own journal.
        workspace = scratch / f"ws-{label}"
        workspace.mkdir(exist_ok=True)
        if config:
            (workspace / "orgtree.toml").write_text(config, encoding="utf-8")
        options = RunOptions(inputs={"n": steps}, workspace=workspace, trace_level="calls", registry=registry,
                             **settings)

        def run() -> object:
            result = run_file(program, options).state.result
            assert result == steps, result
            return result

        return run

    times: dict[str, float | None] = {"plain": None, "power": None, "power_each": None, "process": None}
    if "durable" not in fields:
        print("orgtree_lang: RunOptions has no `durable` field yet; only the journal-off loop is timed")
        times["plain"] = best_of(repeat, loop("plain"))
        return times
    times["plain"] = best_of(repeat, loop("plain", durable=False))
    if "durability" in fields:
        times["power"] = best_of(repeat, loop("power", durable=True, durability="power"))
        times["power_each"] = best_of(repeat, loop("power_each", "[durable]\ngroup_steps = 1\n", durable=True,
                                                   durability="power"))
        times["process"] = best_of(repeat, loop("process", durable=True, durability="process"))
    else:
        times["power"] = best_of(repeat, loop("power", durable=True))
    return times


# --- LangGraph --------------------------------------------------------------------------------------


def langgraph_times(steps: int, repeat: int, scratch: Path) -> dict[str, object] | None:
    try:
        from typing import TypedDict

        from langgraph.checkpoint.sqlite import SqliteSaver
        from langgraph.graph import END, START, StateGraph
    except ImportError as exc:
        print(f"LangGraph: not installed ({exc.name}); skipped. For the comparison run\n"
              "    pip install -e \".[benchmark]\"   (langgraph, langgraph-checkpoint-sqlite)\n"
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

    def checkpointed(durability: str, synchronous: str | None = None) -> Callable[[], object]:
        def run() -> object:
            # A fresh database per run, as each orgtree_lang run gets a fresh journal.
            path = scratch / f"langgraph-{next(counter)}.sqlite"
            conn = sqlite3.connect(path, check_same_thread=False)
            try:
                saver = SqliteSaver(conn)
                if synchronous is not None:  # SqliteSaver leaves it alone, so a user may set it like this
                    saver.setup()
                    conn.execute(f"PRAGMA synchronous = {synchronous}")
                graph = builder.compile(checkpointer=saver)
                config = {"configurable": {"thread_id": "bench"}, **limit}
                result = graph.invoke({"i": 0, "t": ""}, config, durability=durability)
                assert result["i"] == steps, result
                if synchronous is None:
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
        "sync_normal": best_of(repeat, checkpointed("sync", "NORMAL")),
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

    def us(seconds: float) -> str:
        return f"{per_step_us(seconds, steps):8.1f}"

    def row(label: str, raw: float, base: float | None = None) -> float | None:
        overhead = None if base is None else per_step_us(raw - base, steps)
        print(f"  {label:56s} raw {us(raw)}" + ("" if overhead is None else f"   overhead {overhead:8.1f}"))
        return overhead

    print(f"\n{steps}-step loop of a cheap clock call, best of {args.repeat}; µs per step "
          "(overhead = raw - raw of the same loop without durability)")
    ours_full = ours_each = ours_normal = None
    row("orgtree_lang, journal off", ours["plain"])
    if ours["power"] is not None:
        ours_full = row("orgtree_lang, journal on, power (group commit)", ours["power"], ours["plain"])
    if ours["power_each"] is not None:
        ours_each = row("orgtree_lang, journal on, power, fsync per step (before)", ours["power_each"], ours["plain"])
    if ours["process"] is not None:
        ours_normal = row("orgtree_lang, journal on, process (synchronous=NORMAL)", ours["process"], ours["plain"])
    if theirs is not None:
        s = theirs["settings"]
        row("LangGraph, no checkpointer", theirs["plain"])
        lg_full = row("LangGraph, SqliteSaver as shipped, durability=sync", theirs["sync"], theirs["plain"])
        lg_async = row("LangGraph, SqliteSaver as shipped, durability=async", theirs["async"], theirs["plain"])
        lg_normal = row("LangGraph, SqliteSaver + synchronous=NORMAL, sync", theirs["sync_normal"], theirs["plain"])
    print(f"  (one SQLite commit, WAL, synchronous=FULL, on this disk: {floor:.1f} µs: the floor per fsynced step)")

    print("\ndurability")
    print("  orgtree_lang: SQLite journal in WAL mode, one commit per side-effecting step before the VM moves on;")
    print("                power = group commit: the WAL is fsynced before and after every step the outside world")
    print("                sees, before every print, at the end, and at least every 1,000 unobserved steps or 0.5 s")
    print("                (a power loss takes only unobserved steps, which a resume runs again);")
    print("                process = never fsynced (survives kill -9)")
    if theirs is not None:
        print(f"  LangGraph:    SqliteSaver runs `PRAGMA journal_mode=WAL` and leaves synchronous at SQLite's default "
              f"(here {s['journal_mode']}, {names.get(s['synchronous'], s['synchronous'])});")
        print(f"                it commits after every put and put_writes, 2 commits per step ({s['checkpoints']} "
              f"checkpoints and {s['writes']} writes rows per run);")
        print("                durability=sync waits for the checkpoint before the next step (our guarantee), "
              "async (its default) writes it")
        print("                in a background thread while the next step runs")

    if theirs is not None and ours_full is not None:
        print(f"\nratio of durability overhead per step, LangGraph / orgtree_lang (target >= {TARGET_RATIO:g}x)")
        pairs = [("power-loss safe: group commit vs sync as shipped", lg_full, ours_full),
                 ("power-loss safe: group commit vs async as shipped", lg_async, ours_full)]
        if ours_each is not None:
            pairs.append(("power-loss safe: fsync per step vs sync (before)", lg_full, ours_each))
        if ours_normal is not None:
            pairs.append(("kill -9 safe: NORMAL vs sync + NORMAL", lg_normal, ours_normal))
        for label, theirs_overhead, ours_overhead in pairs:
            ratio = theirs_overhead / ours_overhead if ours_overhead > 0 else float("inf")
            verdict = "meets" if ratio >= TARGET_RATIO else "MISSES"
            print(f"  {label:44s} {ratio:6.1f}x  {verdict} the target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
