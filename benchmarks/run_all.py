"""Run every benchmark in benchmarks/ at a quick scale and print one table of their figures against the targets.

    python benchmarks/run_all.py                  # all of them, one after another (minutes on a busy machine)
    python benchmarks/run_all.py context vm       # only the benchmarks whose file name contains a word given
    python benchmarks/run_all.py --show           # also print each benchmark's own output
    python benchmarks/run_all.py --model M --api-base URL   # also the real-model figures (long_context, research_eval)
    python benchmarks/run_all.py long_context research_eval --model M --api-base URL --window 32000 --review-model R

A helper for seeing where things stand, not a CI gate: it always exits 0 unless a benchmark could not be run.
Each figure is read from the benchmark's printed output with a regular expression; the RATIO column is the
figure over its target for "<=" targets and the target over the figure for ">=" ones, so below 1.00 meets.
A file in benchmarks/ that is not listed in BENCHMARKS is named at the end: adding it is one line.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Figure:
    """One number a benchmark prints: `pattern`'s first group, compared with `target` by `better` ("<=" or ">=")."""

    name: str
    pattern: str
    better: str | None = None  # None: shown for information, no target
    target: float | None = None
    unit: str = ""


@dataclass(frozen=True)
class Benchmark:
    script: str
    quick: tuple[str, ...]
    figures: tuple[Figure, ...]
    model: bool = False  # a real-model figure: run only with --model (and --api-base), which it is given
    takes: tuple[str, ...] = ()  # the further endpoint options it takes: --window, --review-model


# The targets are issue #12's where it sets one, else the benchmark's own.
BENCHMARKS = (
    Benchmark("cli_startup.py", ("--repeat", "3"), (
        Figure("pipe --help", r"cli\.main --help\s+([\d.]+) s", "<=", 0.3, "s"),)),
    Benchmark("lsp_latency.py", ("--edits", "20"), (
        Figure("LSP diagnostics after an edit, 500 lines (median)", r"over \d+ edits: median ([\d.]+) ms", "<=", 150.0,
               "ms"),)),
    Benchmark("compile_speed.py", ("--repeat", "2"), (
        Figure("compile 2,000 lines", r"best of \d+: ([\d.]+) s", "<=", 0.5, "s"),)),
    Benchmark("vm_throughput.py", ("--scale", "0.1", "--repeat", "1"), (
        Figure("arithmetic loop / CPython", r"arithmetic loop: ([\d.]+)x", "<=", 15.0, "x"),)),
    Benchmark("trace_levels.py", ("--repeat", "1", "--levels", "calls,off"), (
        Figure("pipe run default / bare VM (CPU)", r"default level \(calls\): ([\d.]+)x the bare VM by CPU", "<=", 1.3,
               "x"),
        Figure("pipe run default / bare VM (wall)", r"by CPU, ([\d.]+)x by wall", "<=", 1.3, "x"),
        Figure("default trace of the loop", r"trace ([\d,]+) bytes \(target", "<=", 1_000_000, "bytes"))),
    # A journaled run's fixed start (a journal, fsyncs) is ~0.3 s: below 1M iterations it outweighs the loop's cost.
    Benchmark("journaled_loop.py", ("--n", "1000000", "--loops", "range"), (
        Figure("journaled range loop / unjournaled", r"this tree, range loop: journaled / unjournaled at n=[\d,]+: "
               r"([\d.]+)x", "<=", 1.3, "x"),)),
    Benchmark("journaled_loop.py", ("--n", "400000", "--loops", "list"), (
        Figure("journaled list loop / unjournaled", r"this tree, list loop: journaled / unjournaled at n=[\d,]+: "
               r"([\d.]+)x", "<=", 1.3, "x"),
        Figure("journaled list loop, per-iteration cost n / n/4", r"this tree, list loop: .*journaled: ([\d.]+) \(1.0",
               "<=", 1.3, "x"))),
    Benchmark("model_startup.py", ("--repeat", "2"), (
        Figure("pipe run, a real provider over no model", r"this tree: the provider adds ([\d.-]+) s", "<=", 1.5, "s"),)),
    Benchmark("mcp_startup.py", ("--repeat", "1"), (
        Figure("pipe run, an MCP server over none (later run)", r"this tree: the MCP server adds ([\d.-]+) s", "<=",
               1.5, "s"),)),
    Benchmark("big_values.py", (), (
        Figure("run storage / 5 MB input", r"= ([\d.]+)x the input", "<=", 2.0, "x"),)),
    Benchmark("orgtree_overhead.py", ("--repeat", "1"), (
        Figure("org tree, skill calls", r"skill calls\s+[\d,]+\s+[\d.]+\s+[\d.]+\s+([\d.]+)x", "<=", 1.3, "x"),
        Figure("org tree, pipeline calls", r"pipeline calls\s+[\d,]+\s+[\d.]+\s+[\d.]+\s+([\d.]+)x", "<=", 1.3, "x"),
        Figure("org tree, skill calls (CPU)", r"skill calls(?:\s+[\d,.]+x?){6}\s+([\d.]+)x", "<=", 1.3, "x"),
        Figure("org tree, pipeline calls (CPU)", r"pipeline calls(?:\s+[\d,.]+x?){6}\s+([\d.]+)x", "<=", 1.3,
               "x"))),
    # LangGraph comes with the `benchmark` extra (pip install -e ".[benchmark]"); 300 steps were too few to be steady.
    Benchmark("step_overhead.py", ("--steps", "1000", "--repeat", "3"), (
        Figure("durable step, LangGraph / ours", r"group commit vs sync as shipped\s+([\d.-]+)x", ">=", 5.0, "x"),)),
    # The tree build at full size (5.8M tokens, 0.6 min): issue 26's figure is of that size, where a round of
    # summaries is big enough to share with a worker process; at --quick's 0.5M the whole build takes 0.4 s.
    Benchmark("context.py", ("--only", "tree", "--repeat", "3"), (
        Figure("tree build / tiktoken (wall)", r"RATIO ([\d.]+) of tokenizing alone\n", ">=", 0.3, "x"),
        Figure("tree build / tiktoken (CPU, workers too)", r"RATIO ([\d.]+) of tokenizing alone, by CPU", None, None,
               "x"))),
    Benchmark("context.py", ("--quick", "--only", "search", "--embed", "50"), (
        Figure("keyword search p50", r"search\s+keyword\s+k=10\s+p50\s+([\d.]+) ms", "<=", 10.0, "ms"),
        Figure("hybrid search p50, cached query", r"search\s+hybrid\s+k=10\s+p50\s+([\d.]+) ms", "<=", 10.0, "ms"))),
    Benchmark("vector_search.py", ("--real", "50"), (
        Figure("vector search p50 (60k)", r"search\s+p50\s+([\d.]+) ms", "<=", 10.0, "ms"),
        Figure("vector recall@10 (60k)", r"recall@10 ([\d.]+)", ">=", 0.95),
        Figure("embedding throughput", r"([\d,.]+) pieces/s", None, None, "pieces/s"))),
    Benchmark("ray_executor.py", ("--calls", "4", "--waits", "16", "--overhead", "10"), (
        Figure("Ray per-call overhead over threads", r"overhead over threads: ([\d.]+) ms", None, None, "ms"),
        Figure("Ray cold waits / threads", r"ray cold waits / threads: ([\d.]+)x", "<=", 1.5, "x"),
        Figure("Ray start-up (connect, waiting pool)", r"ray start-up: .* took ([\d.]+) s", None, None, "s"))),
    Benchmark("sandbox.py", ("--runs", "10"), (
        Figure("code.run overhead", r"overhead ([\d.]+) ms median", "<=", 100.0, "ms"),)),
    Benchmark("scratchpad.py", ("--processes", "4", "--notes", "50"), (
        Figure("scratchpad / plain SQLite", r"RATIO scratchpad time / baseline time: ([\d.]+)", None, None, "x"),)),
    Benchmark("decompose.py", (), (
        Figure("prompt tokens, 10 MB / 1 KB input", r"ratio 10 MB / 1 KB: ([\d.]+)", None, None, "x"),)),
    Benchmark("parallel.py", ("--counts", "1", "8", "--scale", "0.2", "--repeat", "2"), (
        Figure("parallel llm.ask, wall N=8 / N=1", r"wall\(N=8\) / wall\(N=1\): ([\d.]+)", "<=", 1.25, "x"),
        Figure("loop as a parallel branch / plain", r"scheduler turns on: ([\d.]+)x", "<=", 1.1, "x"))),
    Benchmark("parallel.py", ("--mode", "ambiguous", "--counts", "1", "8", "--scale", "0.1", "--repeat", "2"), (
        Figure("8 ambiguous blocks in parallel / 1, protocol on", r"wall\(N=8\) / wall\(N=1\): ([\d.]+)", "<=", 1.25,
               "x"),)),
    Benchmark("block_reach.py", ("--reaches", "300", "--repeat", "1"), (
        Figure("reused block, journaled run per reach", r"now\s+journaled\s+[\d.]+ s \(\s*([\d.]+) ms a reach", None, None,
               "ms"),
        Figure("reused block, journaled / --no-journal", r"now\s+journaled.*journaled ([\d.]+)x", None, None, "x"))),
    Benchmark("language_tasks/measure.py", (), (
        Figure("task solutions, lines / idiomatic", r"mean ratio ([\d.]+)", None, None, "x"),)),
    Benchmark("long_context.py", ("--sizes", "100k,1m"), (
        Figure("long documents, accuracy of plain long context (1 MB)",
               r"RESULT size=1\d{6} flow=plain accuracy=([\d.]+)", None, None),
        Figure("long documents, accuracy with extractive summaries (1 MB)",
               r"RESULT size=1\d{6} flow=extractive accuracy=([\d.]+)", None, None),
        Figure("long documents, accuracy with model summaries (1 MB)",
               r"RESULT size=1\d{6} flow=model accuracy=([\d.]+)", None, None),
        Figure("long documents, tokens per answer (1 MB, model summaries)",
               r"RESULT size=1\d{6} flow=model accuracy=[\d.]+ tokens=(\d+)", None, None, "tokens")), model=True,
              takes=("--window",)),
    Benchmark("decompose_eval.py", ("/tmp/pipe-run-all/decompose_eval",), (
        Figure("decomposer, hidden cases passed (data-driven flow)", r"(?sm)flow: after .*?^all [^\n]*?(\d+)/\d+ *$",
               None, None, "cases"),), model=True),
    Benchmark("language_tasks/collect.py", ("/tmp/pipe-run-all/language_tasks",), (
        Figure("language tasks, modules the model wrote", r"collected (\d+) of \d+ task modules", None, None,
               "modules"),), model=True),
    Benchmark("research_eval.py", (), (
        Figure("research, answered correctly with citations", r"RESULT answered correctly with citations: \d+/\d+ = "
               r"([\d.]+)", None, None),), model=True, takes=("--window", "--review-model")),
)


HELPERS = ("baseline.py",)  # modules the benchmarks import, not benchmarks themselves


def run(bench: Benchmark, show: bool, timeout: float, endpoint: tuple[str, ...] = (),
        further: dict[str, str] | None = None) -> tuple[str, float, int | str]:
    given = [part for option, value in (further or {}).items() if option in bench.takes for part in (option, value)]
    command = [sys.executable, str(HERE / bench.script), *bench.quick, *((*endpoint, *given) if bench.model else ())]
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=HERE.parent)
    except subprocess.TimeoutExpired as exc:
        output = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return output, time.perf_counter() - started, f"timed out after {timeout:g} s"
    if show:
        print(f"$ {' '.join(command[1:])}\n{done.stdout}{done.stderr}", flush=True)
    return done.stdout + done.stderr, time.perf_counter() - started, done.returncode


def row(figure: Figure, output: str) -> list[str]:
    match = re.search(figure.pattern, output)
    if not match:
        return [figure.name, "no figure", _target(figure), "", ""]
    value = float(match.group(1).replace(",", ""))
    if figure.better is None:
        return [figure.name, f"{value:g} {figure.unit}".strip(), "-", "", ""]
    ratio = value / figure.target if figure.better == "<=" else (figure.target / value if value else float("inf"))
    return [figure.name, f"{value:g} {figure.unit}".strip(), _target(figure), f"{ratio:.2f}",
            "meets" if ratio <= 1.0 else "MISSES"]


def _target(figure: Figure) -> str:
    return "-" if figure.better is None else f"{figure.better} {figure.target:g} {figure.unit}".strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("only", nargs="*", help="run only benchmarks whose file name contains one of these")
    parser.add_argument("--show", action="store_true", help="print each benchmark's own output too")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per benchmark (default 900)")
    parser.add_argument("--model", help="a real model for the benchmarks that need one (long_context, research_eval)")
    parser.add_argument("--api-base", help="the OpenAI-compatible endpoint of --model")
    parser.add_argument("--window", help="--model's context window, for the benchmarks that take it")
    parser.add_argument("--review-model", help="an independent reviewer model, for the benchmarks that take it "
                                               "(research_eval's insight review)")
    args = parser.parse_args()
    chosen = [b for b in BENCHMARKS if not args.only or any(word in b.script for word in args.only)]
    endpoint = (("--model", args.model) + (("--api-base", args.api_base) if args.api_base else ())) if args.model else ()
    rows, failed = [], []
    for bench in chosen:
        if bench.model and not args.model:
            rows += [[bench.script, "-", figure.name, "needs an endpoint (--model, --api-base)", "-", "", ""]
                     for figure in bench.figures]
            continue
        print(f"running {bench.script} {' '.join(bench.quick)} ...", flush=True)
        further = {option: value for option, value in (("--window", args.window),
                                                          ("--review-model", args.review_model)) if value}
        output, seconds, code = run(bench, args.show, args.timeout, endpoint, further)
        if code != 0:
            failed.append(f"{bench.script}: exit {code}" if isinstance(code, int) else f"{bench.script}: {code}")
        rows += [[bench.script, f"{seconds:.0f}"] + row(figure, output) for figure in bench.figures]
    header = ["benchmark", "s", "figure", "measured", "target", "RATIO", ""]
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    print()
    for line in [header] + rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip())
    listed = {b.script for b in BENCHMARKS}
    scripts = [p for p in [*HERE.glob("*.py"), *HERE.glob("*/*.py")] if not p.name.startswith("_")]
    unlisted = sorted(name for name in (p.relative_to(HERE).as_posix() for p in scripts)
                      if name not in listed and name not in HELPERS and name != Path(__file__).name)
    if unlisted:
        print(f"\nnot in BENCHMARKS (add a line for each): {', '.join(unlisted)}")
    for failure in failed:
        print(f"failed: {failure} (run it alone to see why)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
