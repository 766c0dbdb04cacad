"""Measure the decomposer on tasks scored by hidden cases: the classic flow ("before"), the data-driven one ("after"), and the data-driven one repairing its modules on real data ("repair").

Each task folder (benchmarks/decompose_tasks/ by default) holds `task.pipe` (a program whose `ambiguous` block is
the task), `run.json` (the inputs of the writing run: the only values the author sees), `hidden.json` (cases the
models never see: `inputs` and the `expected` result, or `error` text the run must fail with) and
`solution.pipe` (a module written by hand, which tests/test_decompose_eval.py checks against the hidden cases).

    python3 ../shared/tools/model_bridge.py 18777 /tmp/bridge &
    OPENAI_API_KEY=sk-bridge python benchmarks/decompose_eval.py /tmp/ddeval \\
        --model openai/bridge-author --review-model openai/bridge-reviewer --api-base http://127.0.0.1:18777/v1

The real-data tasks (iso_date, csv_row, to_celsius) also state examples and `expect` lines, and their hidden cases
go past the examples: `naive.pipe` is a module that follows only the examples, and the tests check that it passes
them and that a run shows it wrong on some hidden cases (an error, a failed `expect`), which the repair flow repairs:

    OPENAI_API_KEY=sk-bridge python benchmarks/decompose_eval.py /tmp/rdeval --flows repair \\
        --only iso_date,csv_row,to_celsius --model openai/bridge-author --review-model openai/bridge-reviewer \\
        --api-base http://127.0.0.1:18777/v1

For every task and flow, in its own workspace OUT/<flow>/<task> (an `orgtree.toml` with `[decompose]
data_driven = false` or `true`), `pipe run task.pipe --inputs run.json` runs with the models; all runs start at
once (a slow endpoint sees every first request together), each with a one-hour model timeout by default. Then,
with no model, the program runs on each hidden case in a copy of the workspace, reusing the modules the run saved.
Figures, per flow (how each is read):

- first-answer validity: the block's first *module* answer (phase `write`, attempt 1, in `decompose_attempts` of
  state.db; the data-driven flow's design answers come before it and are not counted) had no problems and was
  the only module answer of its writing (no repair, no simulation fix, no review revision), and the module
  was saved;
- simulation caught a bug before review: a `raised` event in the ledger's `concern_events` whose conversation
  is a simulation's (`simulation-...`) at round 0, the round before the first code review; its cases are the
  block's stated examples, so the "before" flow (tasks state none) never simulates and shows `-`;
- levels: the depth of the tree of saved modules (1: one module; 2: a module whose own `ambiguous` block got a
  module; the `parent` line of each header says whose block it is), and the pipelines they declare;
- model calls and tokens: the `model` events of the run's traces (`.orgtree/runs/*/trace*.jsonl`), author and
  reviewer told apart by model name, divided by the blocks solved (modules saved);
- hidden cases passed.

The repair flow (LIVE) then runs the task with the models on each hidden case's inputs in turn, as real data
(`real_data.log`): a module that fails on one, or whose outputs fail their review, is repaired there and the block
runs again. Its table shows, per task: solved (every hidden case passes at the end), the hidden cases the modules
as first written pass (each module put back at its version 1 of state.db's `module_versions`) and those passed
after the repairs (both scored with no model), the repairs (versions after the first), and the calls and tokens of
the writing run and the real-data runs together.

Prints one table per flow and writes OUT/results.json with the raw figures (`--score-only` measures the
workspaces of an earlier run again without calling a model).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
TASKS = HERE / "decompose_tasks"
FLOWS = {"before": False, "after": True, "repair": True}  # flow name: [decompose] data_driven
# Flows whose hidden cases are real data: run with the models after the writing run, one `pipe run` per case in
# order, so a module that fails on one is repaired there ([decompose] max_run_repairs) and the next case meets
# the repaired one. The other flows measure the writing alone: their outputs are not reviewed.
LIVE = {"repair"}
CODE_PHASES = ("write", "simulate", "revise")  # attempt-log phases that hold a module (not a design)


def task_names(folder: Path, only: list[str] | None = None) -> list[str]:
    names = sorted(p.name for p in folder.iterdir() if (p / "task.pipe").is_file())
    unknown = sorted(set(only or []) - set(names))
    if unknown:
        raise SystemExit(f"decompose_eval: no task {', '.join(unknown)} in {folder} (tasks: {', '.join(names)})")
    return [n for n in names if not only or n in only]


def model_name(spec: str) -> str:
    """The model a spec names, as the run's trace records it: without the `:TOKENS` context window it may spell
    (`openai/bridge-reviewer:128000` is `openai/bridge-reviewer`)."""
    from orgtree_lang.models.window import split_spec

    return split_spec(spec.strip())[0] if spec else spec


def bridge_folder(model: str) -> str:
    """The folder model_bridge.py writes a model's requests to: the model is sent as `NAME` for `openai/NAME`,
    without a `:TOKENS` suffix."""
    name = model_name(model)
    name = name.split("/", 1)[1] if name.startswith("openai/") else name
    return name.replace("/", "_")


# ---- the writing runs --------------------------------------------------------------------------

def prepare(out: Path, flow: str, task: str, tasks: Path, child_seconds: float) -> Path:
    """A fresh workspace for one writing run. A generated module's wall-clock limit counts the writing of the
    modules of its own `ambiguous` blocks, which takes minutes when a person or an LLM answers through the
    bridge; so it is raised to `child_seconds`, or nested decomposition would be cut off by the clock."""
    workspace = out / flow / task
    shutil.rmtree(workspace, ignore_errors=True)
    workspace.mkdir(parents=True)
    shutil.copy(tasks / task / "task.pipe", workspace / "task.pipe")
    shutil.copy(tasks / task / "run.json", workspace / "run.json")
    # The repair flow reviews the outputs of each new or revised module's first run (the default), and no sample
    # of the others, so that its figures do not depend on the run ids drawn.
    review = 'review_outputs = "first"\nreview_sample = 0\n' if flow in LIVE else 'review_outputs = "off"\n'
    (workspace / "orgtree.toml").write_text(f"[decompose]\ndata_driven = {str(FLOWS[flow]).lower()}\n"
                                            f"child_max_seconds = {child_seconds:g}\n{review}", encoding="utf-8")
    return workspace


def checkout_note() -> str:
    """Which orgtree_lang this runs (and its `pipe` subprocesses, by default): it must be the checkout's own."""
    import orgtree_lang

    where = Path(orgtree_lang.__file__).resolve().parent
    if where.parent == HERE.parent:
        return f"orgtree_lang from {where}"
    return (f"WARNING: orgtree_lang from {where}, not this checkout's ({HERE.parent}): run with a Python whose "
            "orgtree_lang is this checkout (e.g. its .venv, `pip install --no-deps -e .`)")


def write_modules(workspace: Path, pipe: list[str], model_args: list[str], env: dict) -> dict:
    """`pipe run` the task with the models in its workspace; its exit code, seconds and output go to run.log."""
    started = time.monotonic()
    proc = subprocess.run([*pipe, "run", "task.pipe", "--inputs", "run.json", "--workspace", ".", *model_args],
                          cwd=workspace, capture_output=True, text=True, env=env)
    seconds = round(time.monotonic() - started, 1)
    (workspace / "run.log").write_text(f"exit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n"
                                       f"{proc.stderr}", encoding="utf-8")
    last = [line for line in proc.stderr.splitlines() if line.strip()][-1:] if proc.returncode else []
    return {"exit": proc.returncode, "seconds": seconds, "error": last[0] if last else ""}


def real_data(workspace: Path, cases: list[dict], pipe: list[str], model_args: list[str], env: dict) -> list[int]:
    """Run the task with the models on each hidden case's inputs, in order (the models never see the expected
    values); every run's exit code, and its output in real_data.log."""
    exits, log = [], []
    for number, case in enumerate(cases, 1):
        (workspace / f"case{number}.json").write_text(json.dumps(case["inputs"]), encoding="utf-8")
        proc = subprocess.run([*pipe, "run", "task.pipe", "--inputs", f"case{number}.json", "--workspace", ".",
                               *model_args], cwd=workspace, capture_output=True, text=True, env=env)
        exits.append(proc.returncode)
        log.append(f"=== case {number}: exit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}")
    (workspace / "real_data.log").write_text("\n".join(log), encoding="utf-8")
    return exits


# ---- reading what the run left -----------------------------------------------------------------

def saved_modules(workspace: Path) -> list[dict]:
    """Each saved module: block, depth in the module tree, pipelines declared, header figures."""
    from orgtree_lang.decompose.store import ModuleStore

    found = ModuleStore(workspace).all()
    by_path = {m.path.resolve(): m for m in found}

    def depth(module, seen=()) -> int:
        parent = Path(module.provenance.get("parent", "").rsplit(":", 1)[0])
        parent = parent if parent.is_absolute() else workspace / parent
        above = by_path.get(parent.resolve())
        return 1 if above is None or above in seen else 1 + depth(above, (*seen, module))

    return [{"block": m.provenance.get("block", m.path.stem), "path": str(m.path.relative_to(workspace)),
             "depth": depth(m), "pipelines": sum(line.startswith("pipeline ") for line in m.body.splitlines()),
             "review_rounds": int(m.provenance.get("review-rounds", "0") or 0),
             "simulation": m.provenance.get("simulation", "")} for m in found]


def _rows(workspace: Path, sql: str) -> list[dict]:
    path = workspace / ".orgtree" / "state.db"
    if not path.is_file():
        return []
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    db.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in db.execute(sql)]
    except sqlite3.OperationalError:  # a table nobody wrote to yet
        return []
    finally:
        db.close()


def writings(workspace: Path) -> dict[str, dict]:
    """Per block: its module answers (phase and whether accepted) in order, from the attempt log."""
    blocks: dict[str, dict] = {}
    for row in _rows(workspace, "SELECT block, phase, attempt, accepted, conversation FROM decompose_attempts "
                                "ORDER BY seq"):
        block = blocks.setdefault(row["block"], {"answers": [], "designs": 0})
        if row["phase"] in CODE_PHASES:
            block["answers"].append({"phase": row["phase"], "attempt": row["attempt"],
                                     "accepted": bool(row["accepted"])})
        else:
            block["designs"] += 1
    return blocks


def first_answer_valid(answers: list[dict], saved: bool) -> bool:
    return (saved and len(answers) == 1 and answers[0]["phase"] == "write" and answers[0]["accepted"])


def ledger_figures(workspace: Path) -> dict[str, dict]:
    """Per block: failing simulated cases raised before the first code review and after it, and blocking
    concerns the code reviewers raised (design reviews apart)."""
    found: dict[str, dict] = {}

    def block_of(subject: str) -> dict:
        name = subject.split(":")[1] if subject.count(":") >= 2 else subject
        return found.setdefault(name, {"simulation_before_review": 0, "simulation_after_review": 0,
                                       "review_concerns": 0, "design_concerns": 0})

    for row in _rows(workspace, "SELECT subject, round, conversation FROM concern_events WHERE event = 'raised'"):
        if row["conversation"].startswith("simulation-"):
            block_of(row["subject"])["simulation_before_review" if row["round"] == 0
                                     else "simulation_after_review"] += 1
    for row in _rows(workspace, "SELECT subject, reviewer_conversation FROM concerns WHERE severity = 'blocking'"):
        if not row["reviewer_conversation"].startswith("simulation-"):
            key = "design_concerns" if ":design:" in row["subject"] else "review_concerns"
            block_of(row["subject"])[key] += 1
    return found


def model_calls(workspace: Path, author: str, reviewer: str) -> dict:
    """Calls and tokens of the run's models, from every trace file of its runs."""
    figures = {"author_calls": 0, "reviewer_calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "failed_calls": 0}
    author, reviewer = model_name(author), model_name(reviewer)
    for trace in sorted((workspace / ".orgtree" / "runs").rglob("trace*.jsonl")):
        for line in trace.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            if event.get("event") != "model":
                continue
            # The same model in both roles cannot be told apart here: its calls count as the author's.
            model = model_name(event.get("model") or "")
            figures["reviewer_calls" if model == reviewer and model != author else "author_calls"] += 1
            figures["prompt_tokens"] += event.get("input_tokens", 0)
            figures["completion_tokens"] += event.get("output_tokens", 0)
            figures["failed_calls"] += event.get("outcome") != "ok"
    return figures


# ---- hidden cases ----------------------------------------------------------------------------

def versions(workspace: Path) -> list[dict]:
    """Every version of every module (state.db `module_versions`): module, number, why it was made."""
    return _rows(workspace, "SELECT module, version, reason, text FROM module_versions ORDER BY module, version")


def first_modules_passed(workspace: Path, cases: list[dict]) -> tuple[int, list[str]]:
    """The hidden cases the modules as first written pass: a copy of the workspace with each module put back at
    its version 1 (a nested module that only a repair's split asked for is there, but nothing calls it)."""
    rows = versions(workspace)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "ws"
        shutil.copytree(workspace, copy, ignore=shutil.ignore_patterns("runs", "*.lock"))
        for row in rows:
            if row["version"] == 1:
                (copy / row["module"]).write_text(row["text"], encoding="utf-8")
        return hidden_cases(copy, cases)


def hidden_cases(workspace: Path, cases: list[dict]) -> tuple[int, list[str]]:
    """Run the task on each case with no model, in a copy of the workspace (so the figures above stay the run's):
    every block reuses the module the run saved, and a block the run never reached has none and fails."""
    from orgtree_lang.compile.api import compile_source
    from orgtree_lang.decompose.decomposer import DecomposeSettings, Decomposer
    from orgtree_lang.run.registries import default_registry
    from orgtree_lang.run.runner import RunOptions, run_program
    from orgtree_lang.runtime.errors import PipeRuntimeError
    from orgtree_lang.runtime.values import strict_equal, to_plain
    from orgtree_lang.syntax.diagnostics import CompileError
    from orgtree_lang.vm.budget import Budget

    registry = default_registry(plugins=False)
    passed, failures = 0, []
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "ws"
        shutil.copytree(workspace, copy, ignore=shutil.ignore_patterns("runs", "*.lock"))
        source = (copy / "task.pipe").read_text(encoding="utf-8")
        try:
            program = compile_source(source, "task.pipe", registry).program
        except CompileError as err:
            return 0, [f"the task does not compile: {err.render()}"]
        settings = DecomposeSettings.from_config(copy / "orgtree.toml")
        for number, case in enumerate(cases, 1):
            decomposer = Decomposer(author=None, reviewer=None, registry=registry, workspace=copy,
                                    parent_file="task.pipe", parent_source=source, settings=settings)
            options = RunOptions(inputs=dict(case["inputs"]), workspace=copy, budget=Budget(max_steps=5_000_000),
                                 decomposer=decomposer, tree=False, printer=lambda _text: None,
                                 trace=Path(tmp) / f"trace{number}.jsonl", use_cache=False)
            try:
                result = to_plain(run_program(program, copy, registry, options).state.result)
            except PipeRuntimeError as err:
                if "error" in case and case["error"] in err.message:
                    passed += 1
                else:
                    failures.append(f"case {number}: error: {err.message.splitlines()[0][:300]}")
                continue
            if "expected" in case and strict_equal(result, case["expected"]):
                passed += 1
            else:
                failures.append(f"case {number}: got {json.dumps(result)[:300]}, expected "
                                f"{json.dumps(case.get('expected', 'error ' + case.get('error', '')))[:300]}")
    return passed, failures


# ---- figures and tables ------------------------------------------------------------------------

def measure(workspace: Path, cases: list[dict], author: str, reviewer: str, run: dict, live: bool = False) -> dict:
    modules = saved_modules(workspace)
    solved = {m["block"] for m in modules}
    attempts = writings(workspace)
    ledger = ledger_figures(workspace)
    blocks = sorted(solved | set(attempts))
    per_block = {b: {"saved": b in solved, "module_answers": len(attempts.get(b, {}).get("answers", [])),
                     "design_answers": attempts.get(b, {}).get("designs", 0),
                     "first_answer_valid": first_answer_valid(attempts.get(b, {}).get("answers", []), b in solved),
                     **ledger.get(b, {"simulation_before_review": 0, "simulation_after_review": 0,
                                      "review_concerns": 0, "design_concerns": 0})} for b in blocks}
    passed, failures = hidden_cases(workspace, cases)
    repair = {}
    if live:
        first_passed, _ = first_modules_passed(workspace, cases)
        repair = {"first_module_passed": first_passed,
                  "repairs": sum(row["version"] > 1 for row in versions(workspace)),
                  "real_data_exits": run.get("real_data", [])}
    return {**repair, "run": run, "blocks": per_block, "modules": modules, "calls": model_calls(workspace, author, reviewer),
            "levels": max((m["depth"] for m in modules), default=0),
            "pipelines": sum(m["pipelines"] for m in modules), "hidden_passed": passed, "hidden_cases": len(cases),
            "hidden_failures": failures}


def per_solved(value: int, solved: int) -> str:
    return f"{value / solved:,.0f}" if solved else "-"


def table(flow: str, results: dict[str, dict]) -> str:
    head = (f"{'task':<18} {'exit':>4} {'blocks':>6} {'1st valid':>9} {'sim caught':>10} {'levels':>6} "
            f"{'pipelines':>9} {'calls a+r':>9} {'calls/solved':>12} {'tokens/solved':>13} {'hidden':>7}")
    rows = [f"flow: {flow} ([decompose] data_driven = {str(FLOWS[flow]).lower()})", head]
    total = {"blocks": 0, "solved": 0, "valid": 0, "caught": 0, "calls": 0, "tokens": 0, "passed": 0, "cases": 0}
    for task, r in results.items():
        blocks = r["blocks"].values()
        solved = sum(b["saved"] for b in blocks)
        valid = sum(b["first_answer_valid"] for b in blocks)
        caught = sum(b["simulation_before_review"] > 0 for b in blocks)
        calls = r["calls"]["author_calls"] + r["calls"]["reviewer_calls"]
        tokens = r["calls"]["prompt_tokens"] + r["calls"]["completion_tokens"]
        simulated = any(m["simulation"] for m in r["modules"]) or caught or FLOWS[flow]
        rows.append(f"{task:<18} {r['run']['exit']:>4} {solved:>2}/{len(blocks):<3} {valid:>5}/{len(blocks):<3} "
                    f"{(f'{caught}/{len(blocks)}' if simulated else '-'):>10} {r['levels']:>6} {r['pipelines']:>9} "
                    f"{r['calls']['author_calls']:>5}+{r['calls']['reviewer_calls']:<3} {per_solved(calls, solved):>12} "
                    f"{per_solved(tokens, solved):>13} {r['hidden_passed']:>3}/{r['hidden_cases']:<3}")
        for key, value in (("blocks", len(blocks)), ("solved", solved), ("valid", valid), ("caught", caught),
                           ("calls", calls), ("tokens", tokens), ("passed", r["hidden_passed"]),
                           ("cases", r["hidden_cases"])):
            total[key] += value
    rows.append(f"{'all':<18} {'':>4} {total['solved']:>2}/{total['blocks']:<3} {total['valid']:>5}/{total['blocks']:<3} "
                f"{(str(total['caught']) + '/' + str(total['blocks']) if FLOWS[flow] else '-'):>10} {'':>6} {'':>9} "
                f"{total['calls']:>9} {per_solved(total['calls'], total['solved']):>12} "
                f"{per_solved(total['tokens'], total['solved']):>13} {total['passed']:>3}/{total['cases']:<3}")
    return "\n".join(rows)


def repair_table(flow: str, results: dict[str, dict]) -> str:
    """A live flow's figures: hidden cases the first modules pass and those passed after the repairs on real data,
    repairs per task, model calls and tokens per task (the writing run's and the real data's)."""
    head = (f"{'task':<18} {'exit':>4} {'solved':>6} {'first module':>12} {'after repair':>12} {'repairs':>7} "
            f"{'calls a+r':>9} {'tokens':>9}")
    rows = [f"flow: {flow} (data_driven = true; hidden cases run with the models, repairs on real data)", head]
    total = {"first": 0, "after": 0, "cases": 0, "repairs": 0, "tokens": 0, "tasks": 0, "solved": 0}
    for task, r in results.items():
        solved = r["hidden_passed"] == r["hidden_cases"]
        tokens = r["calls"]["prompt_tokens"] + r["calls"]["completion_tokens"]
        rows.append(f"{task:<18} {r['run']['exit']:>4} {'yes' if solved else 'no':>6} "
                    f"{r['first_module_passed']:>6}/{r['hidden_cases']:<5} {r['hidden_passed']:>6}/{r['hidden_cases']:<5} "
                    f"{r['repairs']:>7} {r['calls']['author_calls']:>5}+{r['calls']['reviewer_calls']:<3} {tokens:>9,}")
        for key, value in (("first", r["first_module_passed"]), ("after", r["hidden_passed"]),
                           ("cases", r["hidden_cases"]), ("repairs", r["repairs"]), ("tokens", tokens),
                           ("tasks", 1), ("solved", solved)):
            total[key] += value
    tasks = total["tasks"] or 1
    rows.append(f"{'all':<18} {'':>4} {total['solved']:>2}/{total['tasks']:<3} {total['first']:>6}/{total['cases']:<5} "
                f"{total['after']:>6}/{total['cases']:<5} {total['repairs'] / tasks:>7.1f} {'':>9} "
                f"{total['tokens'] / tasks:>9,.0f}  (repairs and tokens per task)")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n\n".join(__doc__.split("\n\n")[2:5]))
    parser.add_argument("out", type=Path, help="a folder for the workspaces (OUT/FLOW/TASK) and results.json")
    parser.add_argument("--model", help="the author model (a `pipe run --model` spec), e.g. openai/bridge-author")
    parser.add_argument("--review-model", help="the reviewer model, e.g. openai/bridge-reviewer")
    parser.add_argument("--api-base", help="the OpenAI-compatible endpoint, e.g. http://127.0.0.1:18777/v1")
    parser.add_argument("--model-timeout", default="3600", help="seconds one model call may take (default 3600)")
    parser.add_argument("--child-seconds", type=float, default=14400,
                        help="[decompose] child_max_seconds of the workspaces (default %(default)g: written answers "
                             "take minutes, and a module's limit counts the writing of its nested blocks)")
    parser.add_argument("--tasks", type=Path, default=TASKS, help="the folder of task folders (default: %(default)s)")
    parser.add_argument("--only", help="comma-separated task names (default: every task)")
    parser.add_argument("--flows", default="before,after,repair",
                        help="comma-separated: before, after, repair (default: all three)")
    parser.add_argument("--score-only", action="store_true", help="measure OUT's workspaces again; call no model")
    parser.add_argument("--pipe", default=f"{sys.executable} -m orgtree_lang.cli.main",
                        help="the command that runs `pipe` (default: this Python's orgtree_lang)")
    args = parser.parse_args(argv)
    flows = [f for f in args.flows.split(",") if f]
    if set(flows) - set(FLOWS):
        parser.error(f"--flows takes before, after and repair, got {args.flows}")
    if not args.score_only and not args.model:
        parser.error("--model is required (or --score-only to measure an earlier run)")
    names = task_names(args.tasks, args.only.split(",") if args.only else None)
    author, reviewer = args.model or "", args.review_model or args.model or ""
    jobs = [(flow, task) for flow in flows for task in names]
    runs: dict[tuple[str, str], dict] = {}
    if args.score_only:
        for flow, task in jobs:
            log = args.out / flow / task / "run.log"
            first = log.read_text(encoding="utf-8").split("\n", 1)[0] if log.is_file() else "exit ?"
            runs[flow, task] = {"exit": int(first.split()[1]) if first.split()[1].lstrip("-").isdigit() else -1,
                                "seconds": None, "error": ""}
    else:
        print(checkout_note(), flush=True)
        if args.api_base:
            print(f"model bridge folders: author requests in DIR/{bridge_folder(author)}/, reviewer requests in "
                  f"DIR/{bridge_folder(reviewer)}/ (DIR: the bridge's folder argument)", flush=True)
        model_args = ["--model", args.model, "--review-model", reviewer, "--model-timeout", args.model_timeout]
        if args.api_base:
            model_args += ["--api-base", args.api_base]
        env = dict(os.environ)
        if args.api_base:
            env.setdefault("OPENAI_API_KEY", "sk-bridge")  # litellm wants a key; the bridge ignores it
        workspaces = {job: prepare(args.out, *job, args.tasks, args.child_seconds) for job in jobs}
        print(f"running {len(jobs)} writing run(s) at once: {', '.join(f'{f}/{t}' for f, t in jobs)}", flush=True)

        def one(job):
            runs[job] = write_modules(workspaces[job], args.pipe.split(), model_args, env)
            print(f"  {job[0]}/{job[1]}: exit {runs[job]['exit']} in {runs[job]['seconds']} s", flush=True)
            if job[0] in LIVE:
                cases = json.loads((args.tasks / job[1] / "hidden.json").read_text(encoding="utf-8"))
                runs[job]["real_data"] = real_data(workspaces[job], cases, args.pipe.split(), model_args, env)
                print(f"  {job[0]}/{job[1]}: real data exits {runs[job]['real_data']}", flush=True)

        with ThreadPoolExecutor(len(jobs)) as pool:
            list(pool.map(one, jobs))
    results: dict[str, dict] = {flow: {} for flow in flows}
    for flow, task in jobs:
        cases = json.loads((args.tasks / task / "hidden.json").read_text(encoding="utf-8"))
        results[flow][task] = measure(args.out / flow / task, cases, author, reviewer, runs[flow, task],
                                      live=flow in LIVE)
    for flow in flows:
        print()
        print(repair_table(flow, results[flow]) if flow in LIVE else table(flow, results[flow]))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps({"author": author, "reviewer": reviewer,
                                                       "api_base": args.api_base, "flows": results}, indent=1),
                                           encoding="utf-8")
    print(f"\nraw figures: {args.out / 'results.json'}; each run's output: OUT/FLOW/TASK/run.log")
    return 0


if __name__ == "__main__":
    sys.exit(main())
