"""`pipe runs | show | resume | replay | retry | fork`: the commands that work on saved runs."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from orgtree_lang.cli.options import (EXIT_OK, EXIT_RUNTIME, add_budget_options, add_model_options,
                                      add_trace_options, add_verb, add_workspace_option, budget_from_args)
from orgtree_lang.runtime.errors import PipeRuntimeError, UsageError
from orgtree_lang.runtime.printable import printable

_WORKSPACE_HELP = "the workspace whose .orgtree/runs holds the run (default: this folder)"


def register(commands) -> None:
    def verb(name: str, **fields):
        parser = add_verb(commands, name, **fields)
        add_workspace_option(parser, help=_WORKSPACE_HELP)
        return parser

    runs = verb("runs", handler=command_runs, help="list the saved runs of a workspace",
                description="List runs: id, program, status, start, duration, steps.",
                examples=["pipe runs", "pipe runs --workspace examples --json"])
    runs.add_argument("--json", action="store_true", help="print JSON")

    show = verb("show", handler=command_show, help="show a run: inputs, output, error, node tree",
                description="Show a saved run.", examples=["pipe show 3f2a", "pipe show 3f2a9c1d7e0b --json"])
    show.add_argument("run", metavar="RUN", help="a run id (or a unique prefix of one)")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.add_argument("--steps", action="store_true",
                      help="list the journaled steps with the statement each ran in (`pipe fork --at` counts these)")
    show.add_argument("--save-artifacts", metavar="DIR",
                      help="write each bytes value of the run's inputs and result to DIR (SHA256-PREFIX.EXT)")

    resume = add_attempt_options(verb(
        "resume", handler=command_resume, help="continue a crashed, stopped or failed run",
        description="Continue RUN from its last checkpoint without redoing journaled steps. If the program "
                    "changed, the finished part is re-run against the journal: it must ask for the same steps.",
        examples=["pipe resume 3f2a", "pipe resume 3f2a --max-steps 50000 --program moved/triage.pipe"]))
    resume.add_argument("run", metavar="RUN")
    resume.add_argument("--from-scratch", action="store_true",
                        help="forget the journal and run again from the start (side effects happen again)")
    resume.add_argument("--program", metavar="FILE", help="the program, if it moved since the run started")

    replay = verb("replay", handler=command_replay, help="re-execute a run from its journal, with no outside calls",
                  description="Re-execute RUN offline: every side-effecting step comes from the journal. Compares "
                              "the output, result and trace with the original and reports the first difference.",
                  examples=["pipe replay 3f2a", "pipe replay 3f2a --quiet"])
    replay.add_argument("run", metavar="RUN")
    replay.add_argument("--quiet", action="store_true", help="do not print the replayed output")

    retry = add_attempt_options(verb(
        "retry", handler=command_retry, help="run one node of a run again, reusing everything else",
        description="Run node NODE of RUN (and what depends on its result) again; every other journaled step "
                    "is reused. `pipe show RUN` lists the nodes.",
        examples=["pipe retry 3f2a --node main/fetch#2"]))
    retry.add_argument("run", metavar="RUN")
    retry.add_argument("--node", required=True, metavar="NODE", help="e.g. main/fetch#2")

    fork = add_attempt_options(verb(
        "fork", handler=command_fork, help="start a new run from a step of an old one",
        description="Start a new run from step STEP of RUN (its journaled effects are reused up to there), "
                    "with some inputs (at step 0) or variables changed.",
        examples=["pipe fork 3f2a --at 0 -i name=Ada", "pipe fork 3f2a --at 12 -i tries=5"]))
    fork.add_argument("run", metavar="RUN")
    fork.add_argument("--at", type=int, required=True, metavar="STEP", help="the step to start from (0: the start)")
    fork.add_argument("-i", "--set", dest="changes", action="append", default=[], metavar="NAME=VALUE",
                      help="an input (at step 0) or a variable of the pipeline running at STEP")


def add_attempt_options(parser):
    """The options of a command that runs a saved run again: budgets, trace level, --json and the models."""
    add_budget_options(parser, resumed=True)
    add_trace_options(parser, resumed=True)
    parser.add_argument("--json", action="store_true", help="print one JSON envelope")
    add_model_options(parser)
    from orgtree_lang.cli.run import add_executor_option, add_otel_options

    add_executor_option(parser)
    add_otel_options(parser)
    return parser


def command_runs(args) -> int:
    from orgtree_lang.durable.runs import list_runs

    summaries = list_runs(Path(args.workspace))
    if args.json:
        print(json.dumps([{"id": s.run_id, "program": s.program, "status": s.status, "started": s.started,
                           "seconds": s.duration, "steps": s.steps} for s in summaries], indent=1))
        return EXIT_OK
    if not summaries:
        print(f"no runs in {Path(args.workspace) / '.orgtree' / 'runs'}", file=sys.stderr)
        return EXIT_OK
    print(f"{'RUN':<13} {'STATUS':<8} {'STARTED':<19} {'SECONDS':>8} {'STEPS':>8}  PROGRAM")
    for s in summaries:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.started)) if s.started else "?"
        status = s.status if not s.status.startswith("unreadable") else "broken"
        program = s.program if status != "broken" else s.status
        print(f"{s.run_id:<13} {status:<8} {started:<19} {s.duration:>8.2f} {s.steps:>8}  {program}")
    return EXIT_OK


def _print_steps(meta, steps, as_json: bool) -> int:
    """One line per journaled step: its number, the statement it ran in, what it called, where and in which node."""
    rows = [{"seq": r.seq, "statement": r.statement, "kind": r.kind, "name": r.name, "at": f"{r.file}:{r.line}",
             "node": r.node, "ok": r.ok} for r in steps.values()]
    if as_json:
        print(json.dumps({"id": meta["run_id"], "statements": meta.get("steps", 0), "steps": rows}, indent=1))
        return EXIT_OK
    print(f"run {meta['run_id']}: {meta.get('steps', 0)} statements, {len(rows)} journaled steps "
          "(`pipe fork RUN --at N` starts after statement N; --at 0 is the start)")
    for row in rows:
        statement = "?" if row["statement"] is None else row["statement"]
        print(f"  step {row['seq']:>4}  statement {statement:>6}  {row['kind']} {row['name']}  {row['at']}  "
              f"{row['node']}{'' if row['ok'] else '  (failed)'}")
    return EXIT_OK


def command_show(args) -> int:
    from orgtree_lang.durable.journal import Journal
    from orgtree_lang.durable.runs import effective_status, find_run, view_meta
    from orgtree_lang.durable.resume import in_call_order, node_names
    from orgtree_lang.runtime.values import bytes_values, decode, display, to_plain

    run_dir = find_run(Path(args.workspace), args.run)
    journal = Journal.open(run_dir)
    try:
        meta = view_meta(run_dir, journal)
        steps = journal.steps()
        nodes = node_names(journal, meta)
    finally:
        journal.close()
    status = effective_status(run_dir, meta)
    # The org tree adds the nodes that journaled nothing, and says which ones a dead process left unfinished.
    recorded = run_tree(Path(args.workspace), meta["run_id"])
    nodes = in_call_order(nodes | {path for path in recorded if not path.endswith("#more")})
    interrupted = in_call_order(path for path, node in recorded.items() if node.status == "interrupted")
    # What a node that is not plainly running or finished is doing, or how it ended: waiting, receiving, cancelled.
    states = {path: node.status for path, node in recorded.items()
              if node.status in ("waiting", "receiving", "cancelled", "interrupted")}
    given_values, result = decode(meta.get("inputs", {})), decode(meta.get("result"))
    inputs, defaults = to_plain(given_values), to_plain(decode(meta.get("defaults", {})))
    if args.save_artifacts:
        for path in _save_artifacts(Path(args.save_artifacts), given_values, result):
            print(f"saved {path}", file=sys.stderr)
    if args.steps:
        return _print_steps(meta, steps, args.json)
    if args.json:
        print(json.dumps({"id": meta["run_id"], "program": meta.get("program"), "status": status,
                          "inputs": inputs, "defaults": defaults, "result": to_plain(result),
                          "printed": meta.get("output", []), "error": meta.get("error"), "nodes": nodes,
                          "steps": meta.get("steps", 0), "journaled_steps": len(steps),
                          "attempts": meta.get("attempts", 0), "parent_run": meta.get("parent_run"),
                          "interrupted": interrupted, "states": states,
                          "waiting": meta.get("waiting", []) if status == "waiting" else []}, indent=1))
        return EXIT_OK
    print(f"run {meta['run_id']}: {status}, {meta.get('steps', 0)} steps, {len(steps)} journaled, "
          f"{meta.get('attempts', 0)} attempt(s)")
    print(printable(f"program: {meta.get('program')} (pipeline {meta.get('entry')})", one_line=True))
    if meta.get("parent_run"):
        print(f"forked from run {meta['parent_run']} at step {meta.get('fork_step')}")
    given = [f"{k}={display(v if bytes_values(v) else to_plain(v), True)}" for k, v in given_values.items()]
    given += [f"{k}={display(v, True)} (default)" for k, v in defaults.items()]
    print(printable("inputs: " + (", ".join(given) or "(none)"), one_line=True))
    if meta.get("output"):
        print("printed:")
        for line in meta["output"]:
            print(f"  {printable(line, one_line=True)}")
    if status == "done":
        print(f"result: {printable(display(result, True))}")
    if meta.get("error"):
        error = meta["error"]
        where = ", ".join(f"{label} {error[key]}" for key, label in (("at", "at"), ("node", "node")) if error.get(key))
        print(printable(f"error: {error.get('message')}" + (f" ({where})" if where else "")))
        if error.get("kind") == "disk" and error.get("hint"):  # the run stopped for want of room: how to go on
            print(printable(f"  = hint: {error['hint']}"))
    if status == "waiting":
        from orgtree_lang.cli.people import waiting_lines

        print("\n".join(waiting_lines(Path(args.workspace), meta)))
    print("nodes:")
    failed_node = (meta.get("error") or {}).get("node")
    for node in nodes:
        own = [r for r in steps.values() if r.node == node]
        errors = sum(not r.ok for r in own)
        mark = "  <- failed here" if node == failed_node else (f"  ({states[node]})" if node in states else "")
        depth = node.count("/")
        print(printable(f"  {'  ' * depth}{node.rsplit('/', 1)[-1]}  [{len(own)} step(s)"
                        f"{f', {errors} error(s)' if errors else ''}]  {node}{mark}", one_line=True))
    return EXIT_OK


def _save_artifacts(folder: Path, *values) -> list[Path]:
    """Write every bytes value inside `values` to `folder` as SHA256-PREFIX.EXT (the extension from its media type)."""
    import mimetypes

    from orgtree_lang.runtime.files import write_atomic
    from orgtree_lang.runtime.values import bytes_values

    saved = []
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for value in bytes_values(list(values)):
            extension = mimetypes.guess_extension(value.media_type, strict=False) or ".bin"
            path = folder / f"{value.sha256[:12]}{extension}"
            write_atomic(path, value.data)
            saved.append(path)
    except OSError as exc:
        raise UsageError(f"--save-artifacts: cannot write to {folder}: {exc.strerror or exc}") from None
    return saved


def run_tree(root: Path, run_id: str) -> dict:
    """The pipeline, branch and ambiguous nodes of a run's org tree, reconciled with its journal, by journal path."""
    from orgtree_lang.durable.reconcile import reconciled_tree
    from orgtree_lang.runlog.store import TreeStore
    from orgtree_lang.runtime.state_db import state_db_path

    path = state_db_path(root)
    if not path.is_file():
        return {}
    with TreeStore(path) as store:
        nodes = reconciled_tree(root, run_id, store.run_nodes(run_id))
    return {node.id[len(run_id) + 1:]: node for node in nodes
            if node.kind in ("pipeline", "branch", "ambiguous") and node.id.startswith(run_id + "/")}


def _attempt(args, action, source_for_errors) -> int:
    """Run a resume/retry/fork attempt through the same reporting as `pipe run`."""
    from orgtree_lang.cli.run import RunSession
    from orgtree_lang.run.registries import workspace_registry
    from orgtree_lang.run.settings import RunSettings

    settings = RunSettings.load(Path(args.workspace).resolve())
    registry = workspace_registry(Path(args.workspace), config=settings.file)
    session = RunSession(args, getattr(args, "new_run_id", None) or args.run)
    options = session.options(registry=registry, budget=budget_from_args(args), durable=True, settings=settings)
    return session.report(lambda: action(Path(args.workspace), registry, options), source_for_errors(),
                          resumable=True, workspace=Path(args.workspace))


def _current_source(args):
    def read() -> str | None:
        from orgtree_lang.durable.journal import Journal, JournalError
        from orgtree_lang.durable.runs import find_run

        program = getattr(args, "program", None)
        try:
            if program is None:
                journal = Journal.open(find_run(Path(args.workspace), args.run))
                program = journal.meta().get("program")
                journal.close()
            return Path(program).read_text(encoding="utf-8")
        except (JournalError, OSError, TypeError):
            return None

    return read


def command_resume(args) -> int:
    from orgtree_lang.run import runs as durable_runs

    return _attempt(args, lambda root, registry, options: durable_runs.resume(
        root, args.run, registry, options, from_scratch=args.from_scratch,
        program_path=Path(args.program) if args.program else None), _current_source(args))


def command_retry(args) -> int:
    from orgtree_lang.run import runs as durable_runs

    return _attempt(args, lambda root, registry, options: durable_runs.retry(
        root, args.run, registry, options, args.node), _current_source(args))


def command_fork(args) -> int:
    from orgtree_lang.run import runs as durable_runs
    from orgtree_lang.run.runner import new_run_id

    changes = {}
    for pair in args.changes:
        key, sep, value = pair.partition("=")
        if not sep:
            raise UsageError(f"-i expects NAME=VALUE, got {pair!r}")
        changes[key] = value
    args.new_run_id = new_run_id()  # the fork's run id, chosen here so that its messages can name it
    forked = f"forked run {args.run} at step {args.at} into run {args.new_run_id}"
    try:
        code = _attempt(args, lambda root, registry, options: durable_runs.fork(
            root, args.run, registry, options, args.at, changes), _current_source(args))
    except PipeRuntimeError as err:
        if (Path(args.workspace) / ".orgtree" / "runs" / args.new_run_id).is_dir():
            err.add_note(forked)
        raise
    if (Path(args.workspace) / ".orgtree" / "runs" / args.new_run_id).is_dir():
        print(forked, file=sys.stderr)
    return code


def command_replay(args) -> int:
    from orgtree_lang.run import runs as durable_runs
    from orgtree_lang.run.registries import workspace_registry
    from orgtree_lang.run.runner import RunOptions
    from orgtree_lang.run.settings import RunSettings

    settings = RunSettings.load(Path(args.workspace))
    options = RunOptions(printer=None if args.quiet else print, settings=settings)
    registry = workspace_registry(Path(args.workspace), replay=True, config=settings.file)
    report = durable_runs.replay(Path(args.workspace), args.run, registry, options=options)
    print(f"replayed run {report.run_id}: {report.reused} journaled step(s) reused, "
          f"{report.outside_calls} outside call(s)", file=sys.stderr)
    if report.identical:
        checked = "output, result, error and trace" if report.trace_compared else "output, result and error"
        print(f"identical to the original run ({checked}; timestamps ignored)", file=sys.stderr)
        return EXIT_OK
    print("the replay differs from the original run:", file=sys.stderr)
    for difference in report.differences:
        print(f"  {difference}", file=sys.stderr)
    return EXIT_RUNTIME
