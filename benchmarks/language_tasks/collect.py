"""Have a model write each language task's module through `pipe run`, and collect the saved modules for measure.py.

Every task runs at once (one `pipe run` per task, in its own workspace under OUT/ws/TASK, on the task's first
case), so an endpoint that answers slowly (a person or an LLM behind ../shared/tools/model_bridge.py) sees all
the first requests together. The module each run saved goes to OUT/gen/TASK.pipe; each run's output to
OUT/ws/TASK/run.log.

    python3 ../shared/tools/model_bridge.py 18777 /tmp/bridge &
    OPENAI_API_KEY=sk-bridge python benchmarks/language_tasks/collect.py /tmp/lang-after \\
        --model openai/bridge-author --review-model openai/bridge-reviewer --api-base http://127.0.0.1:18777/v1
    python benchmarks/language_tasks/measure.py --generated /tmp/lang-after/gen
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from measure import HERE, cases_of, tasks


def collect(task: str, out: Path, pipe: list[str], model_args: list[str]) -> str:
    """Run one task's program with the model; copy the module it saved to OUT/gen/TASK.pipe."""
    workspace = out / "ws" / task
    shutil.rmtree(workspace, ignore_errors=True)
    workspace.mkdir(parents=True)
    shutil.copy(HERE / task / "task.pipe", workspace / "task.pipe")
    (workspace / "in.json").write_text(json.dumps(cases_of(task)[0]["inputs"]), encoding="utf-8")
    started = time.monotonic()
    proc = subprocess.run([*pipe, "run", "task.pipe", "--inputs", "in.json", "--workspace", ".", *model_args],
                          cwd=workspace, capture_output=True, text=True)
    (workspace / "run.log").write_text(f"exit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n"
                                       f"{proc.stderr}", encoding="utf-8")
    store = workspace / ".orgtree" / "modules"
    modules = sorted(store.rglob("*.pipe")) if store.is_dir() else []
    if modules:
        shutil.copy(modules[0], out / "gen" / f"{task}.pipe")
    return f"{task}: exit {proc.returncode} in {time.monotonic() - started:.0f} s, {len(modules)} module(s) saved"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     epilog="example: collect.py /tmp/lang --model openai/m --api-base URL",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="a folder for the workspaces (OUT/ws) and the modules (OUT/gen)")
    parser.add_argument("--model", required=True, help="the author model (a `pipe run --model` spec)")
    parser.add_argument("--review-model", help="the reviewer model (default: the author's)")
    parser.add_argument("--api-base", help="the OpenAI-compatible endpoint, e.g. http://127.0.0.1:18777/v1")
    parser.add_argument("--model-timeout", default="3600", help="seconds one model call may take (default 3600)")
    parser.add_argument("--pipe", default=f"{sys.executable} -m orgtree_lang.cli.main",
                        help="the command that runs `pipe` (default: this Python's orgtree_lang)")
    args = parser.parse_args(argv)
    (args.out / "gen").mkdir(parents=True, exist_ok=True)
    model_args = ["--model", args.model, "--model-timeout", args.model_timeout]
    if args.review_model:
        model_args += ["--review-model", args.review_model]
    if args.api_base:
        model_args += ["--api-base", args.api_base]
    names = tasks()
    with ThreadPoolExecutor(len(names)) as pool:
        for line in pool.map(lambda task: collect(task, args.out, args.pipe.split(), model_args), names):
            print(line, flush=True)
    saved = len(list((args.out / "gen").glob("*.pipe")))
    print(f"collected {saved} of {len(names)} task modules into {args.out / 'gen'} "
          f"(measure them: python benchmarks/language_tasks/measure.py --generated {args.out / 'gen'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
