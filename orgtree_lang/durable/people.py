"""A run that waits for people: its questions in the journal and the workspace's inbox; replies as journaled steps."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orgtree_lang.durable.attempt import open_run
from orgtree_lang.durable.inputs import input_hash
from orgtree_lang.durable.journal import Journal, JournalError
from orgtree_lang.runlog.inbox import Inbox, Question, answer_value, run_key
from orgtree_lang.runtime.errors import UsageError
from orgtree_lang.runtime.values import encode
from orgtree_lang.vm.questions import HumanQuestion


def post_questions(root: Path | str, run_id: str, questions: list[dict[str, Any]]) -> list[Question]:
    """Put a waiting run's questions in the workspace's inbox (asking again keeps their ids)."""
    with Inbox.for_workspace(root) as inbox:
        posted = []
        for data in questions:
            question = HumanQuestion.from_json(data)
            posted.append(inbox.post(run_key(run_id, question.seq), question.kind, question.text, run_id=run_id,
                                     seq=question.seq, node=question.node, file=question.file, line=question.line))
        return posted


def forget_questions(root: Path | str, run_id: str) -> None:
    """A run starts over: the inbox forgets its questions and answers, as its journal forgot them."""
    with Inbox.for_workspace(root) as inbox:
        inbox.forget_run(run_id)


@dataclass(frozen=True)
class Reply:
    """What `pipe reply` recorded: the run (None for a question asked outside a run), the question, the value."""

    run_id: str | None
    question: Question
    value: Any


def reply(root: Path, ref: str, message: str | None, text: str) -> Reply:
    """Record `text` as the answer to a question: a run's (`ref` a run id, `message` h<id> or None when the run
    waits for one answer) or any question by its h<id> alone. For a run, the answer becomes the journal step the
    question takes, so `pipe resume` (and every replay) reads it from the journal."""
    with Inbox.for_workspace(root) as inbox:
        if message is None and inbox.find(ref) is not None:
            question = inbox.find(ref)
            if question.run_id is None:
                return _answer_outside_a_run(inbox, question, text)
            ref, message = question.run_id, question.ref
        opened = open_run(root, ref)
        try:
            meta = opened.meta
            run_id = meta["run_id"]
            if meta.get("status") != "waiting":
                raise UsageError(f"run {run_id} is not waiting for an answer (it is {meta.get('status')})",
                                 hint="`pipe inbox` lists the questions that wait for one")
            asked = [HumanQuestion.from_json(q) for q in meta.get("waiting", [])]
            posted = {q.seq: inbox.post(run_key(run_id, q.seq), q.kind, q.text, run_id=run_id, seq=q.seq,
                                        node=q.node, file=q.file, line=q.line) for q in asked}
            question = _chosen(run_id, asked, posted, message)
            inbox_row = posted[question.seq]
            value = answer_value(question.kind, text)
            _journal_answer(opened.journal, meta, question, value)
            inbox.record_answer(inbox_row.key, value)
            return Reply(run_id, inbox.get(inbox_row.key), value)
        finally:
            opened.close()


def waiting_questions(root: Path, meta: dict[str, Any]) -> list[tuple[dict[str, Any], Question | None]]:
    """The questions a waiting run asked (as its journal metadata holds them), each with its inbox row, if posted."""
    with Inbox.for_workspace(root) as inbox:
        return [(data, inbox.get(run_key(meta["run_id"], data["seq"]))) for data in meta.get("waiting", [])]


def _chosen(run_id: str, asked: list[HumanQuestion], posted: dict[int, Question], message: str | None) -> HumanQuestion:
    listing = "; ".join(f"{posted[q.seq].ref}: {q.text}" for q in asked)
    if message is None:
        if len(asked) == 1:
            return asked[0]
        raise UsageError(f"run {run_id} waits for {len(asked)} answers; say which question this answers ({listing})",
                         hint=f"`pipe reply {run_id} MESSAGE_ID TEXT`")
    for q in asked:
        if posted[q.seq].ref == message or str(posted[q.seq].id) == message:
            return q
    raise UsageError(f"run {run_id} has no open question {message!r}; its questions: {listing or '(none)'}",
                     hint="`pipe inbox` lists every open question with its id")


def _journal_answer(journal: Journal, meta: dict[str, Any], question: HumanQuestion, value: Any) -> None:
    """Write the answer as the step the asking instruction takes when the run continues (kind `human`)."""
    if question.seq in journal.steps():
        raise JournalError(f"question step {question.seq} of run {meta['run_id']} is already answered",
                           hint=f"continue the run with `pipe resume {meta['run_id']}`")
    journal.record(question.seq, question.node, question.file, question.line, "human", question.name,
                   input_hash([question.text], {}), meta.get("source_hash", ""), True,
                   json.dumps(encode(value), ensure_ascii=False), None, question.statement)


def _answer_outside_a_run(inbox: Inbox, question: Question, text: str) -> Reply:
    if question.status == "answered":
        raise UsageError(f"question {question.ref} is already answered ({json.dumps(question.answer)})")
    value = answer_value(question.kind, text)
    inbox.record_answer(question.key, value)
    return Reply(None, inbox.get(question.key), value)
