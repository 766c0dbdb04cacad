"""`pipe run`: turn command-line inputs into typed values, run the program, print its result or its error."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from orgtree_lang.cli.options import (EXIT_OK, add_budget_options, add_model_options, add_trace_options, add_verb,
                                      add_workspace_option, budget_from_args, program_file)
from orgtree_lang.runtime.errors import DiskFull, PipeRuntimeError, UsageError
from orgtree_lang.runtime.inputs import InputError, check_depth, json_nesting_depth, nesting_problem, parse_input
from orgtree_lang.runtime.printable import printable
from orgtree_lang.vm.budget import BudgetExceeded


def register(commands) -> None:
    run = add_verb(commands, "run", handler=command_run, help="compile and run a program",
                   description="Compile FILE and run its entry pipeline (`main`, else its only one). "
                               "Printed lines and the result go to stdout; errors to stderr.",
                   examples=["pipe run examples/hello.pipe -i name=Ada",
                             "pipe run triage.pipe --inputs inputs.json --max-steps 10000 --json",
                             "pipe run triage.pipe --otel-endpoint http://127.0.0.1:4318"])
    run.add_argument("file", metavar="FILE", help="the .pipe program")
    run.add_argument("-i", "--input", dest="inputs", action="append", default=[], metavar="KEY=VALUE",
                     help="an input of the entry pipeline, parsed by the parameter's type (repeatable)")
    run.add_argument("--inputs", dest="inputs_file", metavar="FILE.json", help="inputs as a JSON object")
    run.add_argument("--entry", metavar="NAME", help="the pipeline to run (default: main, or the only pipeline)")
    run.add_argument("--run-id", metavar="ID", help="the new run's id (letters, digits, - and _; default: a new "
                                                  "one), so that whoever starts the run can follow it by name")
    add_budget_options(run)
    run.add_argument("--trace", metavar="FILE", help="write the JSONL trace here "
                                                     "(default: WORKSPACE/.orgtree/runs/<id>/trace.jsonl)")
    add_trace_options(run)
    add_workspace_option(run, default=None, help="workspace root for fs skills and .orgtree/ "
                                                 "(default: the program's folder)")
    run.add_argument("--json", action="store_true", help="print one JSON envelope: output, run id, status, usage")
    add_model_options(run)
    run.add_argument("--durability", choices=("power", "process"), default="power",
                     help="power (default): every step the outside world sees, and what it was given, is on disk "
                          "before it runs and before the run moves on, as is every printed line; unobserved steps "
                          "(clock reads, draws, reads) are fsynced in groups; process: never fsynced, survives "
                          "kill -9 and crashes of the process, and may lose the last steps of any kind on a power "
                          "loss (they then run again, with the same idempotency keys)")
    run.add_argument("--no-tree", action="store_true",
                     help="do not record the org tree (each call costs about 3-5 µs more with it; see "
                          "benchmarks/orgtree_overhead.py); `pipe tree` and call history then miss this run")
    run.add_argument("--no-journal", action="store_true",
                     help="do not journal the run (it then cannot be resumed, replayed or forked)")
    add_executor_option(run)
    add_otel_options(run)


def chosen_run_id(run_id: str | None, root: Path) -> str | None:
    """The id --run-id gave, if it can name a new run of the workspace `root`: letters, digits, - and _ (never a
    path), and no run of that id there yet."""
    import re

    from orgtree_lang.durable.journal import JOURNAL_FILE
    from orgtree_lang.durable.runs import runs_dir

    if run_id is None:
        return None
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", run_id):
        raise UsageError(f"--run-id expects letters, digits, - and _ (at most 64), got {run_id!r}")
    if (runs_dir(root) / run_id / JOURNAL_FILE).exists():
        raise UsageError(f"there is a run {run_id} in {root} already",
                         hint="pick another id, or leave --run-id out for a new one")
    return run_id


def add_otel_options(parser) -> None:
    parser.add_argument("--otel", action="store_true",
                     help="export the run as OpenTelemetry spans over OTLP/HTTP (run, pipeline, skill and model "
                          "calls) to `[otel] endpoint` of orgtree.toml, else http://127.0.0.1:4318; needs the "
                          "`otel` extra (docs/otel.md)")
    parser.add_argument("--otel-endpoint", metavar="URL", default=None,
                     help="export the run's spans to this OTLP/HTTP collector (implies --otel), e.g. "
                          "http://127.0.0.1:4318")


def add_executor_option(parser) -> None:
    parser.add_argument("--executor", metavar="NAME[:ARG]", default=None,
                        help="where slow skill calls (models, http.fetch, web.*, code.run, time.sleep) run while "
                             "other branches go on: `threads` (default, 32 worker threads), `threads:N`, "
                             "`ray` or `ray:ADDRESS` (needs the ray extra; docs/ray.md)")


def command_run(args) -> int:
    from orgtree_lang.compile.api import compile_file
    from orgtree_lang.run.runner import new_run_id, run_program, workspace_for
    from orgtree_lang.run.registries import workspace_registry
    from orgtree_lang.run.settings import RunSettings

    path = program_file(args.file, args.verb)
    root = workspace_for(path, Path(args.workspace) if args.workspace else None)
    run_id = chosen_run_id(args.run_id, root)
    settings = RunSettings.load(root)
    registry = workspace_registry(root, config=settings.file)
    registry.warm_lazy(used_namespaces(path))  # an MCP server the program uses starts while it compiles
    compiled = compile_file(path, registry, root / ".orgtree" / "cache")
    for warning in compiled.warnings:
        print(warning.render(compiled.source), file=sys.stderr)
    program = compiled.program
    try:
        code = program.entry(args.entry)
    except KeyError:
        names = ", ".join(program.pipelines)
        if not program.pipelines:
            raise UsageError(f"{path} declares no pipeline, so there is nothing to run") from None
        if args.entry:
            raise UsageError(f"{path} has no pipeline `{args.entry}`; its pipelines are: {names}") from None
        raise UsageError(f"{path} has no `main` pipeline and several others ({names}); pick one with --entry") \
            from None
    inputs = collect_inputs(code, args.inputs, args.inputs_file, program)
    session = RunSession(args, run_id or new_run_id())
    options = session.options(entry=code.name, inputs=inputs, workspace=root, registry=registry,
                              durable=not args.no_journal, durability=args.durability,
                              budget=budget_from_args(args), tree=not args.no_tree, settings=settings)
    code = session.report(lambda: run_program(program, root, registry, options, source=compiled.source,
                                               program_path=path), compiled.source, resumable=not args.no_journal,
                          workspace=root)
    machine = session.machine
    if code == EXIT_OK and machine.services.resolver is not None:
        from orgtree_lang.cli.skills import promote_after_run

        promote_after_run(root, machine.services.context.models, registry, settings)
    return code


class RunSession:
    """Runs one attempt for the CLI: output to stdout (or a --json envelope), errors rendered to stderr."""

    def __init__(self, args, run_id: str) -> None:
        self.args = args
        self.run_id = run_id
        self.printed: list[str] = []
        self.progress = _ProgressLine() if sys.stderr.isatty() else None
        self.machine = None  # the finished run's, after `report`

    def options(self, **fields):
        """The run's RunOptions: what the arguments say (models, export, trace, executor), how it reports back
        (printer, progress, notices), and `fields`."""
        from orgtree_lang.cli.options import choices_from_args
        from orgtree_lang.run.runner import RunOptions

        printer = self.printed.append if self.args.json else _echo
        trace = getattr(self.args, "trace", None)
        fields.setdefault("executor", getattr(self.args, "executor", None))
        return RunOptions(printer=printer, progress=self.progress, run_id=self.run_id, notice=self.notice,
                          trace=Path(trace) if trace else None, trace_level=getattr(self.args, "trace_level", None),
                          tree_listener=self._tree_progress, choices=choices_from_args(self.args), **fields)

    def notice(self, text: str, kind: str = "note") -> None:
        """What the run says on the side, on stderr as `pipe VERB: text`."""
        if kind == "offline models":
            self.args.scripted_models = True  # told in the --json envelope too
        self._clear()
        print(f"{self.args.verb}: {text}", file=sys.stderr, flush=True)

    def _tree_progress(self, event: str, node) -> None:
        """Live progress of the org tree on stderr: one line as each ambiguous block opens, moves on, and ends;
        on a terminal, one as each parallel branch starts and ends, and as a node starts or stops waiting."""
        if node.kind != "ambiguous":
            branch = node.id.rsplit("/", 1)[-1].startswith("parallel#")
            if self.progress is not None and (branch and event in ("open", "close") or event == "state"):
                self._branch_progress(event, node)
            return
        self._clear()
        indent = "  " * (node.id.count("@") - 1)
        where = node.id.split("/", 1)[-1]
        if event == "open":
            text = f"{indent}▸ {where}: resolving ambiguous block `{node.name}`"
        elif event == "note":
            text = f"{indent}  {where}: {node.detail}"
        else:
            spent = f", {node.tokens:,} tokens" if node.tokens else ""
            text = f"{indent}{'✓' if node.status == 'ok' else '✗'} {where}: {node.status} in " \
                   f"{(node.duration_ms or 0) / 1000:.2f} s{spent}"
        print(printable(text, one_line=True), file=sys.stderr, flush=True)

    def report(self, attempt, source: str | None, resumable: bool = False, workspace: Path | None = None) -> int:
        """Run `attempt` and print its result; a runtime error (after its --json envelope) goes up to `pipe`'s
        handler with the program's text and, for a saved run, how to resume it."""
        args = self.args
        try:
            machine = self.machine = attempt()
        except PipeRuntimeError as err:
            state = getattr(err, "state", None)
            if args.json:
                print(json.dumps(_envelope(self.run_id, "error", None, self.printed, state, err,
                                           getattr(args, "scripted_models", False))))
            if err.source is None:
                err.source = source
            if resumable and err.kind not in ("input", "nondeterminism", "replay"):
                where = f" --workspace {workspace}" if workspace and Path(workspace).resolve() != Path.cwd() else ""
                larger = err.larger() if isinstance(err, BudgetExceeded) else ""
                if larger:  # the run keeps its limits: a plain resume would stop again at once
                    err.add_note(f"run {self.run_id} is saved: continue it with a larger budget: "
                                 f"`pipe resume {self.run_id} {larger}{where}`")
                else:
                    err.add_note(f"run {self.run_id} is saved: after fixing the cause, continue it with "
                                 f"`pipe resume {self.run_id}{where}`")
            raise
        except DiskFull as err:
            if args.json:
                print(json.dumps({"status": "stopped", "run_id": self.run_id, "output": None, "printed": self.printed,
                                  "error": {"message": err.message, "kind": "disk", "hint": err.hint}}))
            raise
        finally:
            self._clear()
        state = machine.state
        if state.status == "waiting":
            from orgtree_lang.cli.people import report_waiting

            return report_waiting(state, workspace, args.json, self.printed, self.run_id)
        try:
            if args.json:
                print(json.dumps(_envelope(self.run_id, "ok", state.result, self.printed, state, None,
                                           getattr(args, "scripted_models", False))))
            else:
                _print_result(state.result)
        except (RecursionError, ValueError) as exc:
            raise PipeRuntimeError(f"the result cannot be printed as JSON: {type(exc).__name__}: {exc}",
                                   hint="return a flatter value, or a str") from None
        return EXIT_OK

    def _branch_progress(self, event: str, node) -> None:
        self._clear()
        where = node.id.split("/", 1)[-1]
        if event == "open":
            text = f"  ⇉ {where}: {node.name} started"
        elif event == "state":  # an open node starts or stops waiting (a message, a person)
            text = f"  ⋯ {where}: {node.status}"
        else:
            outcome = {"ok": "✓", "cancelled": "⊘"}.get(node.status, "✗")
            text = f"  {outcome} {where}: {node.name} {node.status if node.status == 'ok' else node.error} in " \
                   f"{(node.duration_ms or 0) / 1000:.2f} s"
        print(printable(text, one_line=True), file=sys.stderr, flush=True)

    def _clear(self) -> None:
        if self.progress:
            self.progress.clear()


class _ProgressLine:
    """A one-line status on a terminal's stderr, rewritten in place while a long run works."""

    def __init__(self) -> None:
        self.shown = False

    def __call__(self, state, span) -> None:
        text = f"running {state.entry}: {state.steps:,} steps, {state.skill_calls} skill calls, at {span.file}:{span.line}"
        sys.stderr.write("\r" + text[:100].ljust(100))
        sys.stderr.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            sys.stderr.write("\r" + " " * 100 + "\r")
            sys.stderr.flush()
            self.shown = False


def _echo(line: str) -> None:
    print(line, flush=True)


def _print_result(result: Any) -> None:
    from orgtree_lang.runtime.values import to_plain

    if result is None:
        return
    if isinstance(result, str):
        print(result)
    else:
        print(json.dumps(to_plain(result), ensure_ascii=False))


def _envelope(run_id: str, status: str, result: Any, printed: list[str], state, err,
              scripted: bool = False) -> dict[str, Any]:
    """The --json output. `scripted` is true when model answers came from a file, not from a live model."""
    from orgtree_lang.runtime.values import to_plain

    envelope: dict[str, Any] = {"status": status, "run_id": run_id, "output": to_plain(result), "printed": printed,
                                "scripted_models": scripted}
    if state is not None:
        spent = state.usage
        # Steps and skill calls of the whole tree: this run's own and those of its generated children.
        envelope["usage"] = {"steps": state.steps + spent.get("steps", 0),
                             "skill_calls": state.skill_calls + spent.get("skill_calls", 0),
                             "seconds": round(state.elapsed, 6), "tokens": spent.get("tokens", 0),
                             "cost": round(spent.get("cost", 0.0), 6)}
    if err is not None:
        envelope["error"] = {"message": err.message, "kind": err.kind,
                             "at": str(err.span) if err.span else None, "hint": err.hint,
                             "stack": [str(entry) for entry in err.stack]}
    return envelope


def collect_inputs(code, pairs: list[str], inputs_file: str | None, program=None) -> dict[str, Any]:
    """Inputs from --inputs FILE.json, then -i key=value pairs (parsed by each parameter's type), all checked
    against the entry pipeline's parameters (with `program`'s record types) before the run starts."""
    from orgtree_lang.runtime.inputs import check_inputs
    from orgtree_lang.runtime.records import RecordTypes

    inputs: dict[str, Any] = {}
    if inputs_file:
        try:
            text = Path(inputs_file).read_text(encoding="utf-8")
        except OSError as err:
            raise InputError(f"cannot read {inputs_file}: {err.strerror}") from None
        # The file's object is one level above its inputs' values, which the limit counts.
        problem = nesting_problem(f"an input of {inputs_file}", json_nesting_depth(text) - 1)
        if problem is not None:
            raise InputError(problem, hint="give a flatter value, or read the data at run time with fs.read")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise InputError(f"{inputs_file}:{err.lineno}:{err.colno}: invalid JSON: {err.msg}") from None
        if not isinstance(data, dict):
            raise InputError(f"{inputs_file} must hold a JSON object of inputs, got {type(data).__name__}")
        inputs.update({key: check_depth(key, value) for key, value in data.items()})
    params = {p.name: p for p in code.params}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep:
            raise InputError(f"-i expects KEY=VALUE, got {pair!r}")
        inputs[key] = parse_input(key, text, params[key].type) if key in params else text
    check_inputs(code, inputs, RecordTypes(program.records if program is not None else {}))
    return inputs


def used_namespaces(path: Path) -> list[str]:
    """The names on the `use` lines at the top of a program (before its first other statement), read without
    parsing it: a hint for what to start early, never a check (the compiler reads the same lines properly)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    names = []
    for line in lines:
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        if not text.startswith("use "):
            break
        names += [name.strip() for name in text[4:].split(",") if name.strip()]
    return names
