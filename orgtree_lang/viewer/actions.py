"""The viewer's actions, starting a run, replying to a question and resuming a run: refused unless allowed and
given the token.

A reply goes through the same code as `pipe reply` (durable/people.py). A start and a resume start `pipe run` and
`pipe resume` as processes of their own, so the run keeps going (and stays durable) whatever happens to the
server, and is started by the one way a run is started."""

from __future__ import annotations

import hmac
import json
import subprocess
import sys
from pathlib import Path

from orgtree_lang.runtime.errors import UsageError
from orgtree_lang.runtime.inputs import load_json
from orgtree_lang.viewer.page import Site

RESUME_LOG = "serve-resume.log"  # in the run's folder: what the resumed `pipe resume` printed
RUN_LOG = "serve-run.log"  # in the run's folder: what the `pipe run` a page started printed
MAX_INPUT_CHARS = 100_000  # one input's text from a form; a command line takes no more than 128 KiB an argument
START_SECONDS = 120.0  # how long starting a run waits for its journal before it answers anyway
SETTLE_SECONDS = 10.0  # how long a reply waits for the process of a run that just began to wait to let go of it


class Refused(UsageError):
    """An action the viewer will not do; the message says why and what would allow it."""

    status = 403  # the HTTP status of the answer: not allowed


class Pointless(Refused):
    """An action that is allowed but cannot apply to the run as it is now (resuming a finished run)."""

    status = 409


class Malformed(Refused):
    """An action whose body is not a JSON object of texts (run, message, text)."""

    status = 400


def fields_of(body: bytes) -> dict[str, str]:
    """An action's fields from its JSON body: an object of texts (numbers and booleans are taken as their text);
    raise Malformed for anything else, a body nested past the input limit included, before it is parsed."""
    try:
        fields = load_json("an action's body", body.decode("utf-8"), Malformed,
                           hint='send a JSON object of texts: {"run": "3f2a", "text": "yes"}')
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise Malformed("an action's body is a JSON object, e.g. {\"run\": \"3f2a\", \"text\": \"yes\"}") from None
    if not isinstance(fields, dict):
        raise Malformed(f"an action's body is a JSON object, got {type(fields).__name__}")
    for name, value in fields.items():
        if isinstance(value, (list, dict)):
            raise Malformed(f"an action's field `{name}` is a text, got a {type(value).__name__}")
    return {name: value if isinstance(value, str) else json.dumps(value)
            for name, value in fields.items() if value is not None}


def check_allowed(site: Site, token: str | None) -> None:
    """Raise Refused unless the server allows actions and `token` is its token."""
    if not site.allow_actions:
        raise Refused("this viewer is read-only: start it with `pipe serve --allow-actions` to reply and resume")
    if not token:
        raise Refused("an action needs the token `pipe serve --allow-actions` printed when it started "
                      "(open the URL it printed, or send it in the X-Pipe-Token header)")
    if not hmac.compare_digest(token.encode(), site.token.encode()):
        raise Refused("wrong token: use the one `pipe serve --allow-actions` printed when it started")


def reply(site: Site, run: str, message: str | None, text: str) -> str:
    """Record `text` as the answer to the question `message` (or the only one) run `run` waits for."""
    from orgtree_lang.durable.people import reply as record_reply

    if not run or not text.strip():
        raise Pointless("a reply needs the run and a non-empty answer")
    from orgtree_lang.viewer.runs import run_ref

    _let_go(site, run_ref(run))
    done = record_reply(site.workspace, run_ref(run), message or None, text)
    shown = json.dumps(done.value) if not isinstance(done.value, str) else repr(done.value)
    return f"answered {done.question.ref} of run {done.run_id} with {shown}"


def _let_go(site: Site, run: str) -> None:
    """Wait (a moment) until the process of a run that has just begun to wait for a person lets go of the run:
    the page shows the question as soon as the journal says so, while that process is still closing it."""
    import time

    from orgtree_lang.durable.journal import Journal, JournalError
    from orgtree_lang.durable.runs import find_run, is_locked

    try:
        run_dir = find_run(site.workspace, run)
        journal = Journal.open(run_dir)
    except JournalError:
        return  # record_reply says what is wrong
    try:
        waiting = journal.meta().get("status") == "waiting"
    finally:
        journal.close()
    deadline = time.monotonic() + SETTLE_SECONDS
    while waiting and is_locked(run_dir) and time.monotonic() < deadline:
        time.sleep(0.05)


def resume(site: Site, run: str, running: list[subprocess.Popen]) -> str:
    """Start `pipe resume RUN` for the workspace; `running` keeps the process so the server can reap it."""
    from orgtree_lang.durable.journal import Journal
    from orgtree_lang.durable.runs import effective_status, find_run

    from orgtree_lang.viewer.runs import run_ref

    run_dir = find_run(site.workspace, run_ref(run))
    journal = Journal.open(run_dir)
    try:
        status = effective_status(run_dir, journal.meta())
    finally:
        journal.close()
    if status in ("running", "done"):
        raise Pointless(f"run {run_dir.name} is {status}: there is nothing to resume")
    with (run_dir / RESUME_LOG).open("ab") as log:
        # -P: the workspace is the working folder, and a folder named like a package there must not shadow it.
        process = subprocess.Popen([sys.executable, "-P", "-m", "orgtree_lang.cli.main", "resume", run_dir.name,
                                    "--workspace", str(Path(site.workspace).resolve())],
                                   cwd=site.workspace, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                   start_new_session=True)
    running.append(process)
    return f"resuming run {run_dir.name} (process {process.pid}; its output goes to {run_dir / RESUME_LOG})"


class NotStarted(Refused):
    """A run `pipe run` refused to start: the program does not compile, or its inputs do not fit its entry."""

    status = 422


def _workspace_file(site: Site, name: str, value: str) -> str:
    """The real path of the workspace file a bytes input names (`FILE` or `FILE:MEDIA/TYPE`); Malformed when it
    is not one (absolute, `..` out, a symbolic link out, a folder, missing)."""
    from orgtree_lang.runtime.errors import SkillError
    from orgtree_lang.runtime.workspace import Workspace

    path, media = value, ""
    if ":" in value and "/" in value.rsplit(":", 1)[1]:
        path, media = value.rsplit(":", 1)
    try:
        real = Workspace(site.workspace).resolve(path)
    except SkillError as err:
        raise Malformed(f"input `{name}` (bytes) must name a file of the workspace: {err}",
                        hint="copy the file into the workspace, or run the program with `pipe run -i`") from None
    if not real.is_file():
        raise Malformed(f"input `{name}` (bytes): the workspace has no file `{path}`")
    return str(real) + (f":{media}" if media else "")


def start_run(site: Site, fields: dict[str, str], running: list[subprocess.Popen]) -> dict[str, str]:
    """Start `pipe run PROGRAM --workspace DIR --run-id ID [--entry NAME] -i NAME=VALUE ...` as a process of its
    own, with the inputs the form gave (each read by its parameter's type, as `-i` reads it); wait until the run
    exists (its journal) or the process has ended, and say which. The same command as a person's, so the same
    checks, run assembly and durability; what it prints goes to the run's folder (RUN_LOG)."""
    import time

    from orgtree_lang.durable.journal import JOURNAL_FILE
    from orgtree_lang.durable.runs import new_run_id, runs_dir

    from orgtree_lang.viewer.programs import entry_params, program_path

    relative = fields.get("program", "")
    path = program_path(site, relative)
    if path is None:
        raise Pointless(f"no program {relative!r} in this workspace", hint="the programs page lists them")
    command = [sys.executable, "-P", "-m", "orgtree_lang.cli.main", "run", relative,
               "--workspace", str(Path(site.workspace).resolve())]
    if fields.get("entry"):
        command += ["--entry", fields["entry"]]
    files = {p.name for p in entry_params(site, relative, fields.get("entry") or None)
             if (p.type.arg if p.type.kind == "optional" else p.type).kind == "bytes"}
    for name, value in fields.items():
        if not name.startswith("input.") or value == "":
            continue  # an empty field: the parameter's default (or pipe run says it needs one)
        if len(value) > MAX_INPUT_CHARS:
            raise Malformed(f"input `{name[6:]}` is {len(value):,} characters long: at most {MAX_INPUT_CHARS:,} "
                            "can be given here", hint="write large data to a file and read it with fs.read")
        if name[6:] in files:  # `-i NAME=FILE` reads any file of this machine: from the page, the workspace's only
            value = _workspace_file(site, name[6:], value)
        command += ["-i", f"{name[6:]}={value}"]
    run_id = new_run_id()
    run_dir = runs_dir(site.workspace) / run_id
    command += ["--run-id", run_id]
    run_dir.mkdir(parents=True)
    with (run_dir / RUN_LOG).open("ab") as log:
        process = subprocess.Popen(command, cwd=site.workspace, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                   start_new_session=True)
    running.append(process)
    deadline = time.monotonic() + START_SECONDS
    while not (run_dir / JOURNAL_FILE).exists():
        if process.poll() is not None and not (run_dir / JOURNAL_FILE).exists():
            said = (run_dir / RUN_LOG).read_text(encoding="utf-8", errors="replace").strip()
            (run_dir / RUN_LOG).unlink()
            run_dir.rmdir()
            raise NotStarted(f"the run did not start: `pipe run {relative}` said:\n{said}")
        if time.monotonic() > deadline:
            return {"message": f"started process {process.pid}; run {run_id} has not appeared yet "
                               f"(the runs page shows it when it does)", "run": run_id}
        time.sleep(0.05)
    return {"message": f"started run {run_id} of {relative}", "run": run_id}
