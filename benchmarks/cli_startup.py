"""Time a cold `pipe --help` against a bare interpreter start; check no heavy library is imported on the way.

    python benchmarks/cli_startup.py [--repeat 5]

Each measurement is a fresh subprocess (best of --repeat). Target: `pipe --help` under 0.3 s.
Also imports orgtree_lang.cli.main, and runs `pipe check` on an example, in fresh interpreters and
reports whether litellm, torch or any other heavy dependency ended up in sys.modules.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

TARGET_SECONDS = 0.3
HEAVY = ("litellm", "torch", "sentence_transformers", "faiss", "tantivy", "docker", "openai", "numpy")
REPO = Path(__file__).resolve().parent.parent

_HEAVY_PROBE = """\
import json, sys
{setup}
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))
"""


def best_of(repeat: int, command: list[str]) -> float:
    env = dict(os.environ, PIPE_NO_PLUGINS="1")
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        result = subprocess.run(command, env=env, capture_output=True)
        elapsed = time.perf_counter() - started
        if result.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed with exit code {result.returncode}:\n"
                             f"{result.stderr.decode(errors='replace')}")
        best = min(best, elapsed)
    return best


def heavy_modules(setup: str) -> list[str]:
    code = _HEAVY_PROBE.format(setup=setup, heavy=HEAVY)
    # -P: measure the installed package, never the checkout that cwd=REPO would put first on sys.path.
    result = subprocess.run([sys.executable, "-P", "-c", code], env=dict(os.environ, PIPE_NO_PLUGINS="1"),
                            capture_output=True, text=True, cwd=REPO)
    if result.returncode != 0:
        raise SystemExit(f"probe failed:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    baseline = best_of(args.repeat, [sys.executable, "-c", "pass"])
    help_module = best_of(args.repeat, [sys.executable, "-P", "-m", "orgtree_lang.cli.main", "--help"])
    print(f"python -c pass                          {baseline:.3f} s")
    print(f"python -m orgtree_lang.cli.main --help  {help_module:.3f} s  "
          f"({help_module - baseline:.3f} s over the bare interpreter)")
    script = shutil.which("pipe")
    if script:
        help_script = best_of(args.repeat, [script, "--help"])
        print(f"pipe --help (console script)            {help_script:.3f} s")
    else:
        help_script = None
        print("pipe --help (console script)            not on PATH, skipped")
    measured = help_module if help_script is None else max(help_module, help_script)
    verdict = "meets" if measured <= TARGET_SECONDS else "MISSES"
    print(f"ratio to the {TARGET_SECONDS} s target: {measured / TARGET_SECONDS:.2f} ({verdict} it)")

    example = REPO / "examples" / "hello.pipe"
    probes = {
        "import orgtree_lang.cli.main": "import orgtree_lang.cli.main",
        "pipe --help": ("import orgtree_lang.cli.main as m\n"
                        "try:\n    m.main(['--help'])\nexcept SystemExit:\n    pass"),
        "pipe check examples/hello.pipe": f"import orgtree_lang.cli.main as m\nm.main(['check', {str(example)!r}])",
    }
    clean = True
    for label, setup in probes.items():
        found = heavy_modules(setup)
        clean = clean and not found
        print(f"heavy modules after {label}: {', '.join(found) if found else 'none'}")
    print("litellm/torch not imported: " + ("yes" if clean else "NO"))
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
