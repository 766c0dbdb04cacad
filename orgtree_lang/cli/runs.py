"""`pipe runs | show | resume | replay | retry | fork`: the commands that work on saved runs."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from orgtree_lang.cli.main import EXIT_COMPILE, EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, add_model_options


def add_run_commands(commands) -> None:
    def with_workspace(parser):
        parser.add_argument("--workspace", metavar="DIR", default=".",
                            help="the workspace whose .orgtree/runs holds the run (default: this folder)")
        return parser

    def with_budgets(parser):
        parser.add_argument("--max-steps", type=int, metavar="N", help="new step limit (steps already done count)")
        parser.add_argument("--max-seconds", type=float, metavar="S", help="new limit on wall seconds (so far count)")
        parser.add_argument("--max-skill-calls", type=int, metavar="N", help="new limit on skill calls")
        parser.add_argument("--max-tokens", type=int, metavar="N", help="new limit on model tokens (so far count)")
        parser.add_argument("--max-cost", type=float, metavar="USD", help="new limit on model cost (so far counts)")
        parser.add_argument("--json", action="store_true", help="print one JSON envelope")
        parser.add_argument("--debug", action="store_true", help="show Python tracebacks for internal errors")
        add_model_options(parser)
        return parser

    runs = with_workspace(commands.add_parser("runs", help="list the saved runs of a workspace",
                                              description="List runs: id, program, status, start, duration, steps."))
    runs.add_argument("--json", action="store_true", help="print JSON")
    runs.set_defaults(handler=command_runs)

    show = with_workspace(commands.add_parser("show", help="show a run: inputs, output, error, node tree",
                                              description="Show a saved run."))
    show.add_argument("run", metavar="RUN", help="a run id (or a unique prefix of one)")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(handler=command_show)

    resume = with_budgets(with_workspace(commands.add_parser(
        "resume", help="continue a crashed, stopped or failed run",
        description="Continue RUN from its last checkpoint without redoing journaled steps. If the program "
                    "changed, the finished part is re-run against the journal: it must ask for the same steps.")))
    resume.add_argument("run", metavar="RUN")
    resume.add_argument("--from-scratch", action="store_true",
                        help="forget the journal and run again from the start (side effects happen again)")
    resume.add_argument("--program", metavar="FILE", help="the program, if it moved since the run started")
    resume.set_defaults(handler=command_resume)

    replay = with_workspace(commands.add_parser(
        "replay", help="re-execute a run from its journal, with no outside calls",
        description="Re-execute RUN offline: every side-effecting step comes from the journal. Compares the "
                    "output, result and trace with the original and reports the first difference."))
    replay.add_argument("run", metavar="RUN")
    replay.add_argument("--quiet", action="store_true", help="do not print the replayed output")
    replay.set_defaults(handler=command_replay)

    retry = with_budgets(with_workspace(commands.add_parser(
        "retry", help="run one node of a run again, reusing everything else",
        description="Run node NODE of RUN (and what depends on its result) again; every other journaled step "
                    "is reused. `pipe show RUN` lists the nodes.")))
    retry.add_argument("run", metavar="RUN")
    retry.add_argument("--node", required=True, metavar="NODE", help="e.g. main/fetch#2")
    retry.set_defaults(handler=command_retry)

    fork = with_budgets(with_workspace(commands.add_parser(
        "fork", help="start a new run from a step of an old one",
        description="Start a new run from step STEP of RUN (its journaled effects are reused up to there), "
                    "with some inputs (at step 0) or variables changed.")))
    fork.add_argument("run", metavar="RUN")
    fork.add_argument("--at", type=int, required=True, metavar="STEP", help="the step to start from (0: the start)")
    fork.add_argument("-i", "--set", dest="changes", action="append", default=[], metavar="NAME=VALUE",
                      help="an input (at step 0) or a variable of the pipeline running at STEP")
    fork.set_defaults(handler=command_fork)


def _fail(command: str, message: str, code: int = EXIT_USAGE) -> int:
    print(f"pipe {command}: {message}", file=sys.stderr)
    return code


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


def command_show(args) -> int:
    from orgtree_lang.durable.journal import Journal, JournalError
    from orgtree_lang.durable.runs import effective_status, find_run
    from orgtree_lang.durable.resume import node_names
    from orgtree_lang.runtime.values import decode, display, to_plain

    try:
        run_dir = find_run(Path(args.workspace), args.run)
        journal = Journal.open(run_dir)
    except JournalError as err:
        return _fail("show", str(err))
    try:
        meta = journal.meta()
        steps = journal.steps()
        nodes = sorted(node_names(journal, meta))
    finally:
        journal.close()
    status = effective_status(run_dir, meta)
    inputs = to_plain(decode(meta.get("inputs", {})))
    if args.json:
        print(json.dumps({"id": meta["run_id"], "program": meta.get("program"), "status": status,
                          "inputs": inputs, "result": to_plain(decode(meta.get("result"))),
                          "printed": meta.get("output", []), "error": meta.get("error"), "nodes": nodes,
                          "steps": meta.get("steps", 0), "journaled_steps": len(steps),
                          "attempts": meta.get("attempts", 0), "parent_run": meta.get("parent_run")}, indent=1))
        return EXIT_OK
    print(f"run {meta['run_id']}: {status}, {meta.get('steps', 0)} steps, {len(steps)} journaled, "
          f"{meta.get('attempts', 0)} attempt(s)")
    print(f"program: {meta.get('program')} (pipeline {meta.get('entry')})")
    if meta.get("parent_run"):
        print(f"forked from run {meta['parent_run']} at step {meta.get('fork_step')}")
    print("inputs: " + (", ".join(f"{k}={display(v, True)}" for k, v in inputs.items()) or "(none)"))
    if meta.get("output"):
        print("printed:")
        for line in meta["output"]:
            print(f"  {line}")
    if status == "done":
        print(f"result: {display(decode(meta.get('result')), True)}")
    if meta.get("error"):
        error = meta["error"]
        print(f"error: {error.get('message')} (at {error.get('at')}, node {error.get('node')})")
    print("nodes:")
    failed_node = (meta.get("error") or {}).get("node")
    for node in nodes:
        own = [r for r in steps.values() if r.node == node]
        errors = sum(not r.ok for r in own)
        mark = "  <- failed here" if node == failed_node else ""
        depth = node.count("/")
        print(f"  {'  ' * depth}{node.rsplit('/', 1)[-1]}  [{len(own)} step(s){f', {errors} error(s)' if errors else ''}]"
              f"  {node}{mark}")
    return EXIT_OK


def _attempt(args, command: str, action, source_for_errors) -> int:
    """Run a resume/retry/fork attempt through the same reporting as `pipe run`."""
    from orgtree_lang.cli.run import RunSession, budget_from_args, make_decomposer
    from orgtree_lang.durable.journal import JournalError
    from orgtree_lang.models.roles import RunModels
    from orgtree_lang.engine.registries import workspace_registry
    from orgtree_lang.runtime.inputs import InputError
    from orgtree_lang.syntax.diagnostics import CompileError

    registry = workspace_registry(Path(args.workspace))
    run_id = getattr(args, "new_run_id", None) or args.run
    session = RunSession(args, run_id)
    root = Path(args.workspace).resolve()

    def decomposer_for(program, source: str, file: str):
        return make_decomposer(args, program, source, file, root, registry)

    options = session.options(registry=registry, budget=budget_from_args(args), durable=True,
                              decomposer_factory=decomposer_for,
                              models=RunModels.from_config(args.model, args.review_model,
                                                           api_base=getattr(args, "api_base", None)))
    failure: list[int] = []

    def attempt():
        try:
            return action(Path(args.workspace), registry, options)
        except (JournalError, InputError) as err:
            failure.append(_fail(command, str(err)))
        except CompileError as err:
            print(err.render(), file=sys.stderr)
            failure.append(EXIT_COMPILE)
        return None

    def guarded():
        machine = attempt()
        if machine is None:
            raise _Stop()
        return machine

    try:
        return session.report(guarded, source_for_errors(), resumable=True, workspace=Path(args.workspace))
    except _Stop:
        return failure[0] if failure else EXIT_RUNTIME


class _Stop(BaseException):
    """An attempt that could not start (bad run id, corrupt journal, compile error): already reported.

    A BaseException, so that RunSession.report does not take it for a bug in orgtree_lang."""


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
    from orgtree_lang.engine import runs as durable_runs

    return _attempt(args, "resume", lambda root, registry, options: durable_runs.resume(
        root, args.run, registry, options, from_scratch=args.from_scratch,
        program_path=Path(args.program) if args.program else None), _current_source(args))


def command_retry(args) -> int:
    from orgtree_lang.engine import runs as durable_runs

    return _attempt(args, "retry", lambda root, registry, options: durable_runs.retry(
        root, args.run, registry, options, args.node), _current_source(args))


def command_fork(args) -> int:
    from orgtree_lang.engine import runs as durable_runs
    from orgtree_lang.engine.runner import new_run_id

    changes = {}
    for pair in args.changes:
        key, sep, value = pair.partition("=")
        if not sep:
            return _fail("fork", f"-i expects NAME=VALUE, got {pair!r}")
        changes[key] = value
    args.new_run_id = new_run_id()
    code = _attempt(args, "fork", lambda root, registry, options: durable_runs.fork(
        root, args.run, registry, options, args.at, changes), _current_source(args))
    if code in (EXIT_OK, EXIT_RUNTIME) and (Path(args.workspace) / ".orgtree" / "runs" / args.new_run_id).is_dir():
        print(f"forked run {args.run} at step {args.at} into run {args.new_run_id}", file=sys.stderr)
    return code


def command_replay(args) -> int:
    from orgtree_lang.engine import runs as durable_runs
    from orgtree_lang.durable.journal import JournalError
    from orgtree_lang.engine.registries import workspace_registry
    from orgtree_lang.syntax.diagnostics import CompileError

    printer = None if args.quiet else print
    try:
        report = durable_runs.replay(Path(args.workspace), args.run, workspace_registry(Path(args.workspace)),
                                printer=printer)
    except JournalError as err:
        return _fail("replay", str(err))
    except CompileError as err:
        print(err.render(), file=sys.stderr)
        return EXIT_COMPILE
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
