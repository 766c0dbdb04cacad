"""One attempt of a durable run: start it, or open it again; run its machine over the journal; record the outcome."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol

from orgtree_lang.durable.effects import EffectLog, NonDeterminismError
from orgtree_lang.durable.journal import JOURNAL_FILE, Journal, JournalError
from orgtree_lang.durable.runs import RunLock, find_run, runs_dir
from orgtree_lang.runtime.errors import DiskFull, PipeRuntimeError, disk_full, no_room
from orgtree_lang.runtime.values import encode
from orgtree_lang.vm.state import RunState

if TYPE_CHECKING:
    from orgtree_lang.vm.machine import Machine

TRACE_FILE = "trace.jsonl"


class AssembledRun(Protocol):
    """What run/ hands the durable layer for one attempt (run.assemble.AssembledRun): a machine built over this
    layer's EffectLog, the trace it writes, and `close()` (its trace, org tree recorder, executor and export).
    The durable layer opens journals and runs machines; it never assembles one."""

    machine: Machine
    tracer: Any

    def close(self) -> None: ...


def program_hash(source: str) -> str:
    """The hash a run's journal names its program text by."""
    from orgtree_lang.compile.api import source_hash

    return source_hash(source)


def begin(machine: Machine, entry: str, inputs: dict[str, Any], run_id: str, fork_changes=(), until: int | None = None):
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
        apply_changes(machine.state, changes)


def attempt(parts, journal: Journal, start: tuple | None) -> Any:
    """Run the machine of `parts` (from `start` = (entry, inputs, run_id[, fork_changes]), or from its attached state);
    record the outcome.

    A non-determinism error leaves the journal as it was before the attempt: nothing of it ran. No room to write
    (a full disk) anywhere in the attempt stops the run, resumable, with a DiskFull error (exit 74)."""
    before = journal.meta()
    with full_disk_stops(journal, before["run_id"], lambda: parts.machine.state):
        return _run_and_record(parts, journal, start, before)


def _run_and_record(parts, journal: Journal, start: tuple | None, before: dict[str, Any]) -> Any:
    machine = parts.machine
    # An attempt's figures from a long wait (EffectLog.record_progress) are its own: none yet.
    journal.update_meta(status="running", attempts=before.get("attempts", 0) + 1, progress=None)
    try:
        try:
            if start is not None:
                begin(machine, *start)
            machine.run()
        finally:
            parts.close()
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
    state = machine.state
    if state.status == "waiting":
        from orgtree_lang.durable.people import post_questions

        _finish(journal, machine, "waiting", None)
        # The workspace the run folder is in now (<root>/.orgtree/runs/<id>/journal.db), wherever it started.
        post_questions(journal.path.parents[3], state.run_id, state.waiting)
        return machine
    _finish(journal, machine, "done", None)
    return machine


class DiskReserve:
    """Room kept on the run's disk while an attempt runs, so that a full disk can still be written down: given back
    then, it holds the few pages that record the run as stopped, with why (docs/durability.md)."""

    SIZE = 128 * 1024
    NAME = ".disk-reserve"

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / self.NAME

    def take(self) -> None:
        if self.path.is_file() and self.path.stat().st_size == self.SIZE:
            return  # kept already, by the caller of the attempt that takes it again
        with open(self.path, "wb") as handle:
            try:
                os.posix_fallocate(handle.fileno(), 0, self.SIZE)
            except OSError as err:
                if err.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                    raise
                handle.write(bytes(self.SIZE))  # a file system that cannot allocate ahead: write it out

    def give_back(self) -> None:
        self.path.unlink(missing_ok=True)


@contextmanager
def full_disk_stops(journal: Journal, run_id: str, state: Callable[[], RunState | None] = lambda: None):
    """Within it, no room to write (anywhere: the journal, the trace, state.db, a skill's file) stops the run as the
    environment's fault: recorded as stopped (`state()` gives its figures) and raised as DiskFull, exit 74."""
    reserve = DiskReserve(journal.path.parent)
    try:
        reserve.take()
        yield
    except DiskFull:
        raise  # stopped and recorded already, by an attempt inside
    except Exception as exc:
        if disk_full(exc) is None:
            raise
        raise stopped_by_full_disk(journal, reserve, run_id, state(), exc) from exc
    finally:
        reserve.give_back()


def stopped_by_full_disk(journal: Journal, reserve: DiskReserve, run_id: str, state: RunState | None,
                         exc: BaseException) -> DiskFull:
    """Record the run as stopped by a full disk (in the room the reserve gave back), with its figures, and say how
    to go on. The journal holds every step that was committed; the step that could not be written runs again."""
    cause = no_room(disk_full(exc))
    hint = f"free space, then `pipe resume {run_id}`"
    reserve.give_back()
    figures = {} if state is None else {"steps": state.steps, "skill_calls": state.skill_calls,
                                        "elapsed": state.elapsed}
    try:
        journal.update_meta(status="stopped", error={"message": f"no room to write: {cause}", "kind": "disk",
                                                     "hint": hint}, **figures)
    except Exception as again:  # noqa: BLE001 - not even the reserve was enough: the run shows as crashed
        if disk_full(again) is None:
            raise
        hint += " (the run shows as crashed until then: there was no room to record that it stopped)"
    return DiskFull(f"no room to write: {cause}; run {run_id} is stopped, and its journal keeps every step it "
                    "finished", hint)


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
    journal.update_meta(status=status, result=result, output=state.output, error=error, waiting=state.waiting,
                        messages=state.messages,
                        steps=state.steps, skill_calls=state.skill_calls, effect_seq=state.effect_seq,
                        elapsed=state.elapsed, finished=time.time())
    journal.sync()  # the outcome is about to be shown


# ---- a new run, or another attempt of one ------------------------------------------------


class NewRun:
    """A new durable run, its folder and journal created and its lock held: assemble its machine over `effects`
    (writing `trace`), then `run` it. A context manager: inside it no room to write stops the run as the
    environment's fault (full_disk_stops); leaving it closes the journal and the lock."""

    def __init__(self, root: Path, program, *, run_id: str, entry: str | None, inputs: dict[str, Any], source: str,
                 program_path: Path, budget, durability: str, trace_level: str | None, settings,
                 trace: Path | None = None) -> None:
        run_dir = runs_dir(root) / run_id
        self.digest, self.source, self.run_id = program_hash(source), source, run_id
        code = program.entry(entry)
        self.start = (entry, inputs, run_id)
        self.trace = trace or run_dir / TRACE_FILE
        self.journal = Journal.create(run_dir, {
            "run_id": run_id, "program": str(Path(program_path).resolve()), "file": program.file,
            "entry": code.name, "inputs": encode(inputs), "source_hash": self.digest,
            "sources": {self.digest: source}, "budget": dataclasses.asdict(budget),
            # The parameters the run took from their defaults: shown by `pipe show`, kept apart so resume is unchanged.
            "defaults": encode({p.name: p.default for p in code.params if p.has_default and p.name not in inputs}),
            "created": time.time(), "status": "running", "attempts": 0, "workspace": str(root),
            "durability": durability, "group": settings.durable, "trace_level": trace_level,
        }, inline_bytes=settings.inline_bytes)
        try:
            self.lock = RunLock(run_dir).acquire()
        except BaseException:
            self.journal.close()
            raise

    def __enter__(self) -> NewRun:
        with ExitStack() as stack:
            stack.callback(self.close)
            stack.enter_context(full_disk_stops(self.journal, self.run_id))
            self.effects = EffectLog(self.journal, self.run_id, "live", source_hash=self.digest,
                                     sources={self.digest: self.source})
            self._held = stack.pop_all()
        return self

    def __exit__(self, *exc) -> bool:
        return self._held.__exit__(*exc)

    def run(self, parts: AssembledRun):
        """The run's first attempt, on the machine assembled for it."""
        return attempt(parts, self.journal, self.start)

    def close(self) -> None:
        self.journal.close()
        self.lock.release()


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


def open_run(root: Path, ref: str, lock: bool = True, whole: bool = True, inline_bytes: int | None = None) -> Opened:
    """Open a run's journal (locked when `lock`); refuse it to a lock holder when it lost steps, unless not `whole`.
    `inline_bytes` is the run's `[blobs] inline_bytes` (Journal.open)."""
    run_dir = find_run(root, ref)
    held = RunLock(run_dir).acquire() if lock else None
    try:
        journal = Journal.open(run_dir, inline_bytes=inline_bytes)
        if lock and whole:
            _refuse_lost_steps(journal, run_dir)
        return Opened(run_dir, journal, journal.meta(), held)
    except BaseException:
        if held is not None:
            held.release()
        raise


def _refuse_lost_steps(journal: Journal, run_dir: Path) -> None:
    lost = journal.lost_steps()
    if lost is not None:
        journal.close()
        raise JournalError(
            f"the journal in {run_dir} lost committed steps {lost[0]} to {lost[1]} (its write-ahead log "
            f"{JOURNAL_FILE}-wal was damaged or removed); continuing would run them, and their effects, again",
            hint="restore the run folder from a backup, or start again with `pipe resume RUN --from-scratch` "
                 "after checking what those steps already did")


def current_program(opened: Opened, registry, program_path: Path | None):
    """Compile the program file as it is now (it may have been fixed since the run stopped)."""
    from orgtree_lang.compile.api import compile_source

    path = Path(program_path or opened.meta["program"])
    if not path.is_file():
        raise JournalError(f"the program of run {opened.meta['run_id']} was {path}, which no longer exists; "
                           "pass --program PATH to point at where it is now")
    source = path.read_text(encoding="utf-8")
    name = opened.meta.get("file", str(path)) if program_path is None else str(program_path)
    return compile_source(source, name, registry).program, source, path


def merged_budget(given, meta: dict[str, Any]):
    """Limits given on this command line win; otherwise the run keeps the limits it was started with."""
    from orgtree_lang.vm.budget import Budget

    recorded = Budget(**meta.get("budget", {}))
    default = Budget()
    return Budget(**{f.name: getattr(given, f.name) if getattr(given, f.name) != getattr(default, f.name)
                     else getattr(recorded, f.name) for f in dataclasses.fields(Budget)})

def apply_changes(state: RunState, changes: dict[str, str]) -> None:
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
