"""Time a no-op Python program run through code.run's sandbox and as a plain subprocess; print medians, p95s and the ratio.

    python benchmarks/sandbox.py [--runs 50]

Both sides run `python -c pass`-like code with the same interpreter the sandbox uses, interleaved in one
invocation so machine load affects them alike. The sandboxed side is the whole of `run_code`: choosing
the backend (which probes bubblewrap once per call), making and removing the scratch folders, the bwrap
launch with rlimits, and collecting the written files. Target: under 100 ms median overhead.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time

from orgtree_lang.sandbox.backends import run_code
from orgtree_lang.sandbox.settings import CodeRequest, SandboxSettings

TARGET_OVERHEAD_MS = 100.0


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50, help="timed runs of each side (default 50)")
    args = parser.parse_args()
    settings = SandboxSettings()
    python = settings.interpreter()
    request = CodeRequest("python", "pass", timeout=10, memory_mb=512)
    plain, sandboxed = [], []
    run_code(request, settings)  # warm-up: page cache, first bwrap start
    for _ in range(args.runs):
        start = time.perf_counter()
        subprocess.run([python, "-s", "-c", "pass"], check=True)
        plain.append(time.perf_counter() - start)
        start = time.perf_counter()
        result = run_code(request, settings)
        sandboxed.append(time.perf_counter() - start)
        assert result.exit_code == 0, result.stderr
    ms = 1000.0
    p_med, s_med = statistics.median(plain) * ms, statistics.median(sandboxed) * ms
    print(f"interpreter: {python}; backend: {result.backend}; runs: {args.runs} each")
    print(f"plain subprocess : median {p_med:7.1f} ms   p95 {p95(plain) * ms:7.1f} ms")
    print(f"sandboxed run    : median {s_med:7.1f} ms   p95 {p95(sandboxed) * ms:7.1f} ms")
    overhead = s_med - p_med
    print(f"RATIO sandboxed/plain (median): {s_med / p_med:.2f}x; overhead {overhead:.1f} ms median, "
          f"{p95(sandboxed) * ms - p95(plain) * ms:.1f} ms p95")
    verdict = "meets" if overhead < TARGET_OVERHEAD_MS else "MISSES"
    print(f"{verdict} the target of < {TARGET_OVERHEAD_MS:.0f} ms median overhead")


if __name__ == "__main__":
    main()
