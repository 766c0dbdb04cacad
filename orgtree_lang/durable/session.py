"""Start, resume, replay, retry and fork durable runs: each an attempt of a Machine over a run's journal."""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orgtree_lang.durable.effects import EffectLog, NonDeterminismError
from orgtree_lang.durable.journal import Journal, JournalError
from orgtree_lang.durable.runs import RunLock, find_run, runs_dir
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.values import decode, encode, to_plain
from orgtree_lang.vm.state import RunState

TRACE_FILE = "trace.jsonl"
REPLAY_TRACE_FILE = "replay-trace.jsonl"


def _source_hash(source: str) -> str:
    from orgtree_lang.compile.api import source_hash

    return source_hash(source)


def _with_decomposer(options, program, source: str, path):
    """Options whose decomposer is made for this program by `options.decomposer_factory` (resume, retry, fork)."""
    if options.decomposer is not None or options.decomposer_factory is None:
        return options
    return dataclasses.replace(options, decomposer=options.decomposer_factory(program, source, str(path)))


def _machine(program, root: Path, registry, options, run_id: str, effects: EffectLog, trace: Path):
    from orgtree_lang.runtime.skills import SkillContext
    from orgtree_lang.runtime.workspace import Workspace
    from orgtree_lang.vm.machine import Machine
    from orgtree_lang.vm.trace import Tracer

    from orgtree_lang.runner import make_recorder

    tracer = Tracer(trace, run_id, steps=options.trace_steps)
    # A replay re-executes a recorded run to check it: the run's org tree is already recorded.
    recorder = make_recorder(root, options) if effects.mode != "replay" else None
    context = SkillContext(Workspace.for_run(root), run_id=run_id, models=options.models)
    machine = Machine(program, registry=registry, context=context,
                      budget=options.budget, decomposer=options.decomposer, tracer=tracer,
                      printer=options.printer, progress=options.progress, effects=effects, recorder=recorder)
    return machine, tracer


def _begin(machine, entry: str, inputs: dict[str, Any], run_id: str, fork_changes=(), until: int | None = None):
    """Start a run from its beginning. A forked run's changed variables are set again at the steps where its fork
    set them (`fork_changes`: [step, {name: value text}] pairs, up to step `until`), or it would not be itself."""
    machine.start(entry, inputs, run_id)
    for step, changes in fork_changes:
        if until is not None and step > until:
            break
        if step > machine.state.steps:
            machine.run(pause_after=step - machine.state.steps)
        if machine.state.status != "paused":
            return  # it ended before that step
        _apply_changes(machine.state, changes)


def _attempt(machine, tracer, journal: Journal, start: tuple | None) -> Any:
    """Run the machine (from `start` = (entry, inputs, run_id[, fork_changes]), or from its attached state);
    record the outcome.

    A non-determinism error leaves the journal as it was before the attempt: nothing of it ran."""
    before = journal.meta()
    journal.update_meta(status="running", attempts=before.get("attempts", 0) + 1)
    try:
        if start is not None:
            _begin(machine, *start)
        machine.run()
    except NonDeterminismError as err:
        journal.update_meta(**{k: before[k] for k in ("status", "attempts", "source_hash", "sources", "program")
                               if k in before})
        err.state = machine.state
        raise
    except PipeRuntimeError as err:
        if machine.state is not None:
            _finish(journal, machine, "stopped" if err.kind == "budget" else "failed", err)
        else:
            journal.update_meta(status="failed", error={"message": err.message, "kind": err.kind})
        err.state = machine.state
        raise
    finally:
        tracer.close()
        if machine.recorder is not None:
            machine.recorder.finish()
    _finish(journal, machine, "done", None)
    return machine


def _finish(journal: Journal, machine, status: str, err: PipeRuntimeError | None) -> None:
    state = machine.state
    error = None
    if err is not None:
        frame = state.frames[-1] if state.frames else None
        error = {"message": err.message, "kind": err.kind, "at": str(err.span) if err.span else None,
                 "hint": err.hint, "node": frame.node if frame else None,
                 "stack": [str(entry) for entry in err.stack]}
    try:
        result = encode(state.result)
        json.dumps(result)
    except (RecursionError, ValueError):
        result = None  # nested too deeply to store; the run's output and status are still recorded
    journal.update_meta(status=status, result=result, output=state.output, error=error,
                        steps=state.steps, skill_calls=state.skill_calls, effect_seq=state.effect_seq,
                        elapsed=state.elapsed, finished=time.time())


# ---- a new run ----------------------------------------------------------------


def start(program, root: Path, registry, options, source: str, program_path: Path):
    """A new durable run: create its folder and journal, hold its lock, run it."""
    run_id = options.run_id
    run_dir = runs_dir(root) / run_id
    digest = _source_hash(source)
    budget = dataclasses.asdict(options.budget)
    journal = Journal.create(run_dir, {
        "run_id": run_id, "program": str(Path(program_path).resolve()), "file": program.file,
        "entry": program.entry(options.entry).name,
        "inputs": encode(options.inputs), "source_hash": digest, "sources": {digest: source}, "budget": budget,
        "created": time.time(), "status": "running", "attempts": 0, "workspace": str(root),
        "durability": options.durability,
    })
    with RunLock(run_dir):
        effects = EffectLog(journal, run_id, "live", source_hash=digest, sources={digest: source})
        machine, tracer = _machine(program, root, registry, options, run_id, effects, options.trace or
                                   run_dir / TRACE_FILE)
        try:
            return _attempt(machine, tracer, journal, (options.entry, options.inputs, run_id))
        finally:
            journal.close()


# ---- continuing a run -----------------------------------------------------------


@dataclass
class Opened:
    """A run's folder and journal, opened (and locked) for another attempt."""

    run_dir: Path
    journal: Journal
    meta: dict[str, Any]
    lock: RunLock | None

    def close(self) -> None:
        self.journal.close()
        if self.lock is not None:
            self.lock.release()


def open_run(root: Path, ref: str, lock: bool = True) -> Opened:
    run_dir = find_run(root, ref)
    held = RunLock(run_dir).acquire() if lock else None
    try:
        journal = Journal.open(run_dir)
        return Opened(run_dir, journal, journal.meta(), held)
    except BaseException:
        if held is not None:
            held.release()
        raise


def _current_program(opened: Opened, registry, program_path: Path | None):
    """Compile the program file as it is now (it may have been fixed since the run stopped)."""
    from orgtree_lang.compile.api import compile_source

    path = Path(program_path or opened.meta["program"])
    if not path.is_file():
        raise JournalError(f"the program of run {opened.meta['run_id']} was {path}, which no longer exists; "
                           "pass --program PATH to point at where it is now")
    source = path.read_text(encoding="utf-8")
    name = opened.meta.get("file", str(path)) if program_path is None else str(program_path)
    return compile_source(source, name, registry).program, source, path


def _budget(options, meta: dict[str, Any]):
    """Limits given on this command line win; otherwise the run keeps the limits it was started with."""
    from orgtree_lang.vm.budget import Budget

    recorded = Budget(**meta.get("budget", {}))
    given = options.budget
    default = Budget()
    return Budget(**{f.name: getattr(given, f.name) if getattr(given, f.name) != getattr(default, f.name)
                     else getattr(recorded, f.name) for f in dataclasses.fields(Budget)})


def resume(root: Path, ref: str, registry, options, *, from_scratch: bool = False, program_path: Path | None = None):
    """Continue a crashed, killed, stopped or failed run without redoing its journaled steps."""
    opened = open_run(root, ref)
    try:
        meta = opened.meta
        if meta.get("status") == "done" and not from_scratch:
            raise JournalError(f"run {meta['run_id']} already finished; `pipe replay {meta['run_id']}` shows it "
                               f"again, `pipe fork {meta['run_id']} --at STEP` starts a new run from inside it")
        program, source, path = _current_program(opened, registry, program_path)
        digest = _source_hash(source)
        sources = {**meta.get("sources", {}), digest: source}
        options = dataclasses.replace(options, budget=_budget(options, meta), run_id=meta["run_id"])
        # The limits of this attempt become the run's: a replay of the finished run must not stop where it once did.
        opened.journal.update_meta(sources=sources, source_hash=digest, program=str(path.resolve()),
                                   budget=dataclasses.asdict(options.budget))
        state = None
        scratch = meta.get("scratch", 0)
        if from_scratch:
            # Forget the steps and the checkpoints (a checkpoint would point past the empty journal), and give the
            # new steps keys of their own: under the old keys, fs.append would refuse or skip them.
            scratch += 1
            with opened.journal.db:
                opened.journal.db.execute("DELETE FROM steps")
                opened.journal.db.execute("DELETE FROM checkpoints")
                opened.journal._set_meta({"scratch": scratch})
            mode = "live"
        else:
            mode = "resume"
            checkpoint = opened.journal.latest_checkpoint()
            if checkpoint is not None and digest == meta.get("source_hash"):
                state = RunState.loads(checkpoint[2])  # same code: continue from the last checkpoint
        effects = EffectLog(opened.journal, meta["run_id"], mode, source_hash=digest, sources=sources,
                            key_suffix=f":scratch{scratch}" if scratch else "")
        trace_path = options.trace or opened.run_dir / TRACE_FILE
        trace_size = trace_path.stat().st_size if trace_path.is_file() else None
        options = _with_decomposer(options, program, source, meta.get("file", str(path)))
        machine, tracer = _machine(program, root, registry, options, meta["run_id"], effects, trace_path)
        tracer.emit("run.resume", None, None, mode="checkpoint" if state else "from start", attempt=
                    meta.get("attempts", 0) + 1)
        start_args = None
        if state is not None:
            state.status = "paused"
            machine.attach(state)
        else:
            start_args = (meta["entry"], decode(meta["inputs"]), meta["run_id"], meta.get("fork_changes", []))
        try:
            return _attempt(machine, tracer, opened.journal, start_args)
        except NonDeterminismError:
            # Refused: the run stays as it was, still naming the code it ran (replay uses it) and its trace.
            opened.journal.update_meta(**{k: meta[k] for k in ("sources", "source_hash", "program", "budget")
                                          if k in meta})
            if trace_size is not None:
                with open(trace_path, "r+b") as handle:
                    handle.truncate(trace_size)
            else:
                trace_path.unlink(missing_ok=True)
            raise
    finally:
        opened.close()


def retry(root: Path, ref: str, registry, options, node: str):
    """Run one node (and what depends on it) again, reusing the journaled results of everything else."""
    opened = open_run(root, ref)
    try:
        meta = opened.meta
        nodes = node_names(opened.journal, meta)
        if node not in nodes:
            from orgtree_lang.syntax.diagnostics import did_you_mean

            hint = did_you_mean(node, nodes)
            raise JournalError(f"run {meta['run_id']} has no node `{node}`" + (f"; {hint}" if hint else "") +
                               f" (its nodes: {', '.join(sorted(nodes))})")
        program, source, path = _current_program(opened, registry, None)
        digest = _source_hash(source)
        sources = {**meta.get("sources", {}), digest: source}
        options = dataclasses.replace(options, budget=_budget(options, meta), run_id=meta["run_id"])
        opened.journal.update_meta(sources=sources, source_hash=digest, budget=dataclasses.asdict(options.budget))
        effects = EffectLog(opened.journal, meta["run_id"], "retry", source_hash=digest, sources=sources,
                            retry_node=node, attempt=meta.get("attempts", 0) + 1,
                            key_suffix=f":scratch{meta['scratch']}" if meta.get("scratch") else "")
        options = _with_decomposer(options, program, source, meta.get("file", str(path)))
        machine, tracer = _machine(program, root, registry, options, meta["run_id"], effects,
                                   options.trace or opened.run_dir / TRACE_FILE)
        tracer.emit("run.retry", None, None, node=node)
        try:
            return _attempt(machine, tracer, opened.journal, (meta["entry"], decode(meta["inputs"]), meta["run_id"],
                                                              meta.get("fork_changes", [])))
        finally:
            if machine.state is not None:
                opened.journal.truncate_steps(machine.state.effect_seq)
    finally:
        opened.close()


def node_names(journal: Journal, meta: dict[str, Any]) -> set[str]:
    """Every node of a run: those that journaled steps, their ancestors, and the node where it failed."""
    names = {meta.get("entry", "main")}
    for record in journal.steps().values():
        parts = record.node.split("/")
        names.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    failed = (meta.get("error") or {}).get("node")
    if failed:
        parts = failed.split("/")
        names.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    return names


# ---- replay -----------------------------------------------------------------------


@dataclass
class ReplayReport:
    """What a replay found: equal or not, and the first difference."""

    run_id: str
    outside_calls: int
    reused: int
    output: list[str]
    result: Any
    error: str | None
    differences: list[str] = field(default_factory=list)
    trace_compared: bool = False

    @property
    def identical(self) -> bool:
        return not self.differences


class SealedRegistry:
    """The skill registry during a replay: pure skills run; any other skill refuses and is counted."""

    def __init__(self, registry) -> None:
        self.registry = registry
        self.refused: list[str] = []

    def get(self, name: str):
        skill = self.registry.get(name)
        if skill is None or skill.pure:
            return skill

        def refuse(*args, **kwargs):
            self.refused.append(name)
            raise RuntimeError(f"replay tried to call the side-effecting skill {name}")

        return dataclasses.replace(skill, func=refuse)


def replay(root: Path, ref: str, registry, printer=None) -> ReplayReport:
    """Re-execute a run from its journal with no outside calls, and compare with what it produced."""
    from orgtree_lang.compile.api import compile_source
    from orgtree_lang.runner import RunOptions

    opened = open_run(root, ref, lock=False)
    try:
        meta = opened.meta
        source = meta["sources"][meta["source_hash"]]
        program = compile_source(source, meta.get("file", meta["program"]), registry).program
        sealed = SealedRegistry(registry)
        effects = EffectLog(opened.journal, meta["run_id"], "replay", source_hash=meta["source_hash"],
                            sources=meta["sources"])
        options = RunOptions(printer=printer, run_id=meta["run_id"], budget=_budget(RunOptions(), meta))
        replay_trace = opened.run_dir / REPLAY_TRACE_FILE
        replay_trace.unlink(missing_ok=True)
        machine, tracer = _machine(program, root, sealed, options, meta["run_id"], effects, replay_trace)
        error = None
        try:
            _begin(machine, meta["entry"], decode(meta["inputs"]), meta["run_id"], meta.get("fork_changes", []))
            machine.run()
        except PipeRuntimeError as err:
            error = err.message
        finally:
            tracer.close()
        state = machine.state
        report = ReplayReport(meta["run_id"], effects.outside_calls + len(sealed.refused), effects.reused,
                              state.output if state else [], to_plain(state.result) if state else None, error)
        _compare(report, meta, opened.run_dir, replay_trace)
        return report
    finally:
        opened.close()


def _compare(report: ReplayReport, meta: dict[str, Any], run_dir: Path, replay_trace: Path) -> None:
    if meta.get("status") in ("running", "crashed"):
        report.differences.append("the run never finished, so there is no final output to compare")
    recorded_output = meta.get("output", [])
    if report.output != recorded_output:
        for i, (old, new) in enumerate(zip(recorded_output + [None] * len(report.output),
                                           report.output + [None] * len(recorded_output))):
            if old != new:
                report.differences.append(f"printed line {i + 1}: the run printed {old!r}, the replay {new!r}")
                break
    if report.result != to_plain(decode(meta.get("result"))):
        report.differences.append(f"result: the run returned {to_plain(decode(meta.get('result')))!r}, "
                                  f"the replay {report.result!r}")
    recorded_error = (meta.get("error") or {}).get("message")
    if report.error != recorded_error:
        report.differences.append(f"error: the run ended with {recorded_error!r}, the replay with {report.error!r}")
    if meta.get("attempts", 1) == 1 and (run_dir / TRACE_FILE).is_file() and _one_attempt(run_dir / TRACE_FILE):
        report.trace_compared = True
        difference = first_trace_difference(run_dir / TRACE_FILE, replay_trace)
        if difference:
            report.differences.append(difference)


_VOLATILE = ("time", "duration_ms")


def _one_attempt(trace: Path) -> bool:
    """True if the trace holds one attempt. (A run killed before its first attempt counted itself has
    attempts == 1 after its resume, but a trace of two.)"""
    for line in trace.read_text(encoding="utf-8", errors="replace").splitlines():
        if '"run.resume"' in line or '"run.retry"' in line:
            return False
    return True


def first_trace_difference(original: Path, replayed: Path) -> str | None:
    """The first event that differs between two traces, ignoring timestamps and durations."""
    def events(path: Path) -> list[dict[str, Any]]:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        return [{k: v for k, v in row.items() if k not in _VOLATILE} for row in rows]

    old, new = events(original), events(replayed)
    for i, (a, b) in enumerate(zip(old, new)):
        if a != b:
            return f"trace event {i + 1} differs: the run had {a}, the replay has {b}"
    if len(old) != len(new):
        return f"the run's trace has {len(old)} events, the replay's {len(new)}"
    return None


# ---- fork -------------------------------------------------------------------------


def fork(root: Path, ref: str, registry, options, at_step: int, changes: dict[str, str]):
    """A new run that starts from step `at_step` of run `ref`, with some variables or inputs changed."""
    from orgtree_lang.compile.api import compile_source
    from orgtree_lang.runner import new_run_id

    opened = open_run(root, ref, lock=False)
    try:
        meta = opened.meta
        if at_step < 0 or at_step > meta.get("steps", 0):
            raise JournalError(f"run {meta['run_id']} has {meta.get('steps', 0)} steps; --at must be 0 to that")
        source = meta["sources"][meta["source_hash"]]
        program = compile_source(source, meta.get("file", meta["program"]), registry).program
        inputs = decode(meta["inputs"])
        if at_step == 0:
            inputs = {**inputs, **_input_changes(program.entry(meta["entry"]), changes)}
            changes = {}
        new_id = options.run_id or new_run_id()
        new_dir = runs_dir(root) / new_id
        new_journal = Journal.create(new_dir, {
            **{k: v for k, v in meta.items() if k not in ("status", "result", "output", "error", "finished",
                                                          "scratch")},
            "run_id": new_id, "inputs": encode(inputs), "created": time.time(), "status": "running", "attempts": 0,
            "parent_run": meta["run_id"], "fork_step": at_step,
            # Every variable change on the way to this run's state, so that replay and resume can make it again.
            "fork_changes": [pair for pair in meta.get("fork_changes", []) if pair[0] <= at_step] +
                            ([[at_step, changes]] if changes else []),
        })
        with RunLock(new_dir):
            options = dataclasses.replace(options, budget=_budget(options, meta), run_id=new_id)
            options = _with_decomposer(options, program, source, meta.get("file", meta["program"]))
            # Replay the parent up to the fork point (nothing outside is called), then go live on the new journal.
            replaying = EffectLog(opened.journal, meta["run_id"], "replay", source_hash=meta["source_hash"],
                                  sources=meta["sources"])
            machine, tracer = _machine(program, root, SealedRegistry(registry), dataclasses.replace(
                options, printer=None), new_id, replaying, new_dir / TRACE_FILE)
            try:
                _begin(machine, meta["entry"], inputs, new_id, meta.get("fork_changes", []), until=at_step)
                if at_step > machine.state.steps:
                    machine.run(pause_after=at_step - machine.state.steps)
                if machine.state.status == "done" and changes:
                    raise JournalError(f"run {meta['run_id']} has finished by step {at_step}, so it has no "
                                       "variables left to change; use an earlier --at")
                _apply_changes(machine.state, changes)
                opened.journal.copy_steps_to(new_journal, machine.state.effect_seq)
            except BaseException as exc:
                # The fork never started: leave no run folder behind.
                tracer.close()
                new_journal.close()
                shutil.rmtree(new_dir, ignore_errors=True)
                if isinstance(exc, PipeRuntimeError):
                    raise JournalError(f"run {meta['run_id']} cannot be forked at step {at_step}: replaying it up "
                                       f"to there stops at step {machine.state.steps} with: {exc.message}; "
                                       "use an earlier --at") from None
                raise
            machine.registry = registry
            machine.printer = options.printer
            from orgtree_lang.runner import make_recorder

            machine.recorder = make_recorder(root, options)
            machine.attach(machine.state)  # the calls open at the fork point are the fork's first nodes
            machine.effects = EffectLog(new_journal, new_id, "live", source_hash=meta["source_hash"],
                                        sources=meta["sources"])
            machine.effects.checkpoint(machine.state)
            try:
                return _attempt(machine, tracer, new_journal, None)
            finally:
                new_journal.close()
    finally:
        opened.close()


def _input_changes(code, changes: dict[str, str]) -> dict[str, Any]:
    from orgtree_lang.runtime.inputs import InputError, parse_input

    params = {p.name: p for p in code.params}
    result = {}
    for key, text in changes.items():
        if key not in params:
            raise JournalError(f"pipeline {code.name} has no input `{key}` (inputs: {', '.join(params) or 'none'})")
        try:
            result[key] = parse_input(key, text, params[key].type)
        except InputError as err:
            raise JournalError(str(err)) from None
    return result


def _apply_changes(state: RunState, changes: dict[str, str]) -> None:
    """Set variables of the innermost frame (values are written as .pipe/JSON literals, or plain text)."""
    if not changes:
        return
    frame = state.frames[-1]
    names = frame.code.varnames
    for key, text in changes.items():
        if key not in names:
            raise JournalError(f"pipeline {frame.pipeline} has no variable `{key}` at this step "
                               f"(its variables: {', '.join(names) or 'none'})")
        frame.locals[names.index(key)] = _literal(text)


def _literal(text: str) -> Any:
    words = {"true": True, "false": False, "none": None}
    if text in words:
        return words[text]
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text
