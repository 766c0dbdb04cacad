"""`pipe inbox | reply | messages`: what nodes say to people and to each other; how a waiting run is reported."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from orgtree_lang.cli.options import EXIT_OK, EXIT_WAITING, add_verb, add_workspace_option
from orgtree_lang.runtime.printable import printable

_WORKSPACE_HELP = "the workspace whose runs asked (default: this folder)"
_FLAT_MESSAGE = "send a flatter value (a list of records), or several messages"


def register(commands) -> None:
    inbox = add_verb(commands, "inbox", handler=command_inbox,
                     help="list the questions that wait for a person, and the notes runs sent",
                     description="List the open questions of the workspace (the runs waiting for a person, status "
                                 "`waiting`, exit 75, and questions runtime code asked outside a run; answer one with "
                                 "`pipe reply`) and the unread notes runs sent with `send \"human\", value` (they "
                                 "need no answer; `--read` files them).",
                     examples=["pipe inbox", "pipe inbox --json", "pipe inbox --read n4 n5", "pipe inbox --read all"])
    add_workspace_option(inbox, help=_WORKSPACE_HELP)
    inbox.add_argument("--json", action="store_true", help="print JSON")
    inbox.add_argument("--read", nargs="+", metavar="NOTE", help="mark notes read (n<id>, or `all`)")

    reply = add_verb(
        commands, "reply", handler=command_reply, help="answer a question a run asked, and optionally resume it",
        usage="pipe reply [-h] [--resume] RUN [MESSAGE_ID] TEXT",
        description="Record TEXT as the answer to the question RUN waits for (MESSAGE_ID, e.g. h3, picks one when "
                    "it waits for several; `pipe inbox` lists them). The answer becomes a journaled input: `pipe "
                    "resume RUN` continues the run with it, and every replay reads it from the journal. approve(...) "
                    "takes only yes, no, true or false. A question asked outside a run is answered by its id alone.",
        examples=["pipe reply 3f2a yes", "pipe reply 3f2a h4 \"ship it on Monday\" --resume", "pipe reply h7 no"])
    reply.add_argument("words", nargs="+", metavar="RUN [MESSAGE_ID] TEXT",
                       help="the run (or a question id alone), the question when it asks several, the answer")
    reply.add_argument("--resume", action="store_true", help="continue the run with the answer right away")
    add_workspace_option(reply, help=_WORKSPACE_HELP)
    from orgtree_lang.cli.saved_runs import add_attempt_options

    add_attempt_options(reply)

    send = add_verb(
        commands, "send", handler=command_send, help="send a message into a run from outside",
        usage="pipe send [-h] [--to NODE] [--topic TOPIC] [--json] RUN TEXT",
        description="Queue TEXT as a message to run RUN, sent by `human`: to node NODE (`pipe tree RUN` shows "
                    "them; default: the run's main node), or with --topic alone to the node of that route. The run "
                    "takes it when nothing in it can happen any more: every node waits (in receive(), an await or "
                    "a parallel block) and no call is in flight; a receive(timeout=S) then waits up to S seconds "
                    "for one. What the run took is journaled, so resume and replay see the same message at the "
                    "same place. A run that is not running gets it when `pipe resume` continues it.",
        examples=['pipe send 3f2a "stop after this batch"',
                  """pipe send 3f2a --topic billing --json '{"amount": 30}'""",
                  "pipe send 3f2a --to main/worker#1 pause"])
    send.add_argument("run", metavar="RUN", help="a run id (or a unique prefix of one)")
    send.add_argument("text", metavar="TEXT", help="the message's body (a str; with --json, a JSON value)")
    send.add_argument("--to", metavar="NODE", help="the node that gets it (default: the run's main node)")
    send.add_argument("--topic", metavar="TOPIC", help="its topic; without --to, a route's topic reaches that route")
    send.add_argument("--json", action="store_true", help="read TEXT as a JSON value (a number, list, object ...)")
    add_workspace_option(send, help="the workspace of the run (default: this folder)")

    messages = add_verb(commands, "messages", handler=command_messages, help="list the messages a run's nodes sent",
                        description="List the messages of RUN in the order they were sent: id, sender, receiver, "
                                    "topic, body, when it was sent and received (the run's statement count), or "
                                    "`queued` while it waits in a mailbox (`undelivered`, with the reason, for a "
                                    "message from `pipe send` whose node was gone).",
                        examples=["pipe messages 3f2a", "pipe messages 3f2a --json"])
    messages.add_argument("run", metavar="RUN", help="a run id (or a unique prefix of one)")
    add_workspace_option(messages, help=_WORKSPACE_HELP)
    messages.add_argument("--json", action="store_true", help="print JSON")


def command_inbox(args) -> int:
    from orgtree_lang.runlog.inbox import Inbox
    from orgtree_lang.runtime.state_db import state_db_path

    path = state_db_path(Path(args.workspace))
    questions, notes = [], []
    if path.is_file():
        with Inbox(path) as inbox:
            if args.read:
                done = inbox.mark_read(args.read)
                print(f"marked {len(done)} note{'s' if len(done) != 1 else ''} read", file=sys.stderr)
                return EXIT_OK
            questions, notes = inbox.open_questions(), inbox.unread_notes()
    if args.json:
        print(json.dumps([q.to_json() for q in questions] + [n.to_json() for n in notes], indent=1))
        return EXIT_OK
    if not questions and not notes:
        print(f"no open questions or unread notes in {Path(args.workspace).resolve()}", file=sys.stderr)
        return EXIT_OK
    now = time.time()
    rows = [(q.asked, q.ref, q.run_id, q.kind, q.file, q.line, q.node, q.question) for q in questions] + \
        [(n.sent, n.ref, n.run_id, "note", n.file, n.line, n.node,
          n.text if n.topic == "note" else f"[{n.topic}] {n.text}") for n in notes]
    print(f"{'ID':<5} {'RUN':<13} {'KIND':<8} {'AGE':>6}  {'FROM':<24} TEXT")
    for at, ref, run_id, kind, file, line, node, text in sorted(rows, key=lambda row: row[0]):
        where = printable(f"{Path(file).name}:{line} {node}" if file else node, one_line=True)
        print(f"{ref:<5} {run_id or '-':<13} {kind:<8} {_age(now - at):>6}  {where:<24} {printable(text, one_line=True)}")
    if notes:
        print("notes need no answer: `pipe inbox --read all` files them", file=sys.stderr)
    return EXIT_OK


def command_reply(args) -> int:
    from orgtree_lang.durable.people import reply
    from orgtree_lang.runtime.errors import UsageError

    words = args.words
    if len(words) > 3:
        raise UsageError(f"expected RUN [MESSAGE_ID] TEXT, got {len(words)} words",
                         hint='quote an answer of several words: pipe reply RUN "ship it on Monday"')
    if len(words) == 1:
        raise UsageError("expected RUN [MESSAGE_ID] TEXT: the answer is missing",
                         hint="pipe reply RUN TEXT (`pipe inbox` lists the questions)")
    ref, message, text = (words[0], None, words[1]) if len(words) == 2 else words
    done = reply(Path(args.workspace), ref, message, text)
    shown = printable(json.dumps(done.value) if not isinstance(done.value, str) else repr(done.value), one_line=True)
    if done.run_id is None:
        print(f"answered {done.question.ref} with {shown}; the code that asked gets it when it runs again",
              file=sys.stderr)
        return EXIT_OK
    print(f"answered {done.question.ref} of run {done.run_id} with {shown}", file=sys.stderr)
    if not args.resume:
        print(f"continue the run with: pipe resume {done.run_id}{_workspace_flag(args.workspace)}", file=sys.stderr)
        return EXIT_OK
    from orgtree_lang.cli.saved_runs import command_resume

    args.run, args.from_scratch, args.program = done.run_id, False, None
    return command_resume(args)


def command_send(args) -> int:
    from orgtree_lang.durable.inbound import check_can_receive, queue_message
    from orgtree_lang.durable.journal import Journal
    from orgtree_lang.durable.runs import effective_status, find_run
    from orgtree_lang.runtime.errors import UsageError

    from orgtree_lang.runtime.inputs import load_json

    body = args.text
    if args.json:
        try:
            body = load_json("--json: the message", args.text, hint=_FLAT_MESSAGE)
        except ValueError as err:
            raise UsageError(f"--json: TEXT is not a JSON value ({err})", hint="quote it: --json '{\"amount\": 30}'")
    run_dir = find_run(Path(args.workspace), args.run)
    journal = Journal.open(run_dir)
    try:
        meta = journal.meta()
    finally:
        journal.close()
    check_can_receive(meta)
    queue_message(run_dir, body, to=args.to, topic=args.topic)
    to = args.to or (f"the route of topic {args.topic!r}" if args.topic else "its main node")
    print(f"queued for run {meta['run_id']} ({to}); the run takes it when every node of it waits"
          + ("" if effective_status(run_dir, meta) == "running"
             else f": continue it with `pipe resume {meta['run_id']}`"),
          file=sys.stderr)
    return EXIT_OK


def command_messages(args) -> int:
    from orgtree_lang.durable.journal import Journal
    from orgtree_lang.durable.runs import find_run, view_meta
    from orgtree_lang.runtime.values import decode, display_short, to_plain

    run_dir = find_run(Path(args.workspace), args.run)
    journal = Journal.open(run_dir)
    try:
        meta = view_meta(run_dir, journal)
    finally:
        journal.close()
    sent = meta.get("messages", [])
    if args.json:
        print(json.dumps([{**m, "body": to_plain(decode(m["body"]))} for m in sent], indent=1))
        return EXIT_OK
    if not sent:
        print(f"run {meta['run_id']} sent no messages", file=sys.stderr)
        return EXIT_OK
    print(f"{'ID':>4}  {'FROM':<20} {'TO':<20} {'TOPIC':<10} {'SENT':>6} {'RECEIVED':>8}  BODY")
    for m in sent:
        received = "undelivered" if m.get("undelivered") else "queued" if m["received"] is None \
            else f"{m['received']:.0f}"
        line = f"{m['id']:>4}  {m['sender']:<20} {m['to']:<20} {m['topic']:<10} {m['sent_at']:>6.0f} {received:>8}  " \
               f"{display_short(decode(m['body']), 60)}" + (f"  ({m['undelivered']})" if m.get("undelivered") else "")
        print(printable(line, one_line=True))
    return EXIT_OK


def report_waiting(state, workspace: Path | None, as_json: bool, printed: list[str], run_id: str) -> int:
    """Say that the run waits for a person, which questions and how to answer them; exit 75."""
    from orgtree_lang.runlog.inbox import Inbox, run_key
    from orgtree_lang.runtime.people import APPROVAL_WORDS

    workspace = Path(workspace or ".")
    with Inbox.for_workspace(workspace) as inbox:
        questions = [inbox.get(run_key(run_id, q["seq"])) for q in state.waiting]
    questions = [q for q in questions if q is not None]
    if as_json:
        print(json.dumps({"status": "waiting", "run_id": run_id, "printed": printed,
                          "waiting": [q.to_json() for q in questions]}))
    where = _workspace_flag(workspace)
    lines = [f"run {run_id} is waiting for a person ({len(questions)} question{'s' if len(questions) != 1 else ''}):"]
    for q in questions:
        lines.append(printable(f"  {q.ref}  {q.kind} at {q.file}:{q.line} ({q.node}): {q.question}", one_line=True))
    if len(questions) == 1:
        answer = "yes|no" if questions[0].kind == "approve" else "TEXT"
        lines.append(f"answer:   pipe reply {run_id} {answer}{where}"
                     + (f"   ({APPROVAL_WORDS})" if questions[0].kind == "approve" else ""))
    else:
        lines.append(f"answer:   pipe reply {run_id} MESSAGE_ID TEXT{where}")
    lines.append(f"continue: pipe resume {run_id}{where}   (or both at once: pipe reply --resume {run_id} ...)")
    print("\n".join(lines), file=sys.stderr)
    return EXIT_WAITING


def waiting_lines(workspace: Path, meta: dict) -> list[str]:
    """`pipe show`'s lines for a waiting run: each question, whether it is answered, and what to do next."""
    from orgtree_lang.durable.people import waiting_questions

    run_id = meta["run_id"]
    lines = ["waiting for a person:"]
    for data, posted in waiting_questions(workspace, meta):
        ref = posted.ref if posted is not None else "?"
        state = f"answered {json.dumps(posted.answer)}" if posted is not None and posted.status == "answered" \
            else "open"
        lines.append(printable(f"  {ref}  {data['kind']} at {data['file']}:{data['line']} ({data['node']}): "
                               f"{data['text']}  [{state}]", one_line=True))
    where = _workspace_flag(workspace)
    lines.append(f"answer with `pipe reply {run_id} TEXT{where}`, continue with `pipe resume {run_id}{where}`")
    return lines


def _workspace_flag(workspace) -> str:
    if workspace is None or Path(workspace).resolve() == Path.cwd().resolve():
        return ""
    return f" --workspace {workspace}"


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"
