"""People are nodes: `approve`/`ask` make a durable run wait (exit 75), `pipe inbox` lists the questions,
`pipe reply` journals the answer, `pipe resume` continues with it, and `pipe replay` needs no outside call.

The round trips go through the `pipe` command; the expected texts come from the example and the docs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_testing import pipe as run_pipe

from orgtree_lang.syntax.errors import EXIT_WAITING

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "org_approval.pipe"
NOTES = "release 2.1.0\n- resume is faster\n- pipe inbox\n"


def pipe(*args, cwd: Path):
    return run_pipe(*args, cwd=cwd, env={"PIPE_NO_PLUGINS": "1", "PIPE_MODEL": None})


def only_run(workspace: Path) -> str:
    runs = json.loads(pipe("runs", "--json", cwd=workspace).stdout)
    assert len(runs) == 1
    return runs[0]["id"]


def start_example(workspace: Path, *extra: str):
    return pipe("run", EXAMPLE, "--workspace", workspace, *extra, cwd=workspace)


# ---- the example, answered through the CLI ----------------------------------------------------------------


def test_the_approval_example_waits_is_answered_resumed_and_replayed(tmp_path: Path) -> None:
    started = start_example(tmp_path)
    assert started.returncode == EXIT_WAITING == 75, started.stderr
    assert started.stdout == NOTES  # printed before the question; the result is not there yet
    run = only_run(tmp_path)
    assert f"run {run} is waiting for a person" in started.stderr
    assert f"pipe reply {run} yes|no" in started.stderr and f"pipe resume {run}" in started.stderr

    runs = json.loads(pipe("runs", "--json", cwd=tmp_path).stdout)
    assert runs[0]["status"] == "waiting"
    inbox = json.loads(pipe("inbox", "--json", cwd=tmp_path).stdout)
    assert [(q["id"], q["run"], q["kind"], q["node"], q["question"]) for q in inbox] == [
        ("h1", run, "approve", "main", "Ship release 2.1.0 (2 changes)?")]
    assert inbox[0]["at"].endswith("org_approval.pipe:21")

    answered = pipe("reply", run, "yes", cwd=tmp_path)
    assert answered.returncode == 0, answered.stderr
    assert f"answered h1 of run {run} with true" in answered.stderr
    assert json.loads(pipe("inbox", "--json", cwd=tmp_path).stdout) == []

    resumed = pipe("resume", run, cwd=tmp_path)  # approved: the run goes on to its next question
    assert resumed.returncode == 75, resumed.stderr
    assert resumed.stdout == ""  # the notes were printed by the first attempt, not again
    assert "h2  ask" in resumed.stderr and "Who signs off release 2.1.0?" in resumed.stderr

    finished = pipe("reply", "--resume", run, "Ada Lovelace", cwd=tmp_path)
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout == "2.1.0 shipped, signed off by Ada Lovelace\n"
    assert json.loads(pipe("runs", "--json", cwd=tmp_path).stdout)[0]["status"] == "done"
    # The step before the first question happened once, across three attempts.
    assert (tmp_path / "release.log").read_text() == "prepared 2.1.0\nshipped 2.1.0, signed off by Ada Lovelace\n"

    replayed = pipe("replay", run, cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == NOTES
    assert "0 outside call(s)" in replayed.stderr and "identical to the original run" in replayed.stderr
    assert (tmp_path / "release.log").read_text().count("\n") == 2


def test_a_no_takes_the_other_branch(tmp_path: Path) -> None:
    start_example(tmp_path, "-i", "version=3.0")
    run = only_run(tmp_path)
    done = pipe("reply", "--resume", run, "No", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "3.0 held back\n"
    assert (tmp_path / "release.log").read_text() == "prepared 3.0\nheld back 3.0\n"


def test_approve_takes_only_yes_no_true_or_false(tmp_path: Path) -> None:
    start_example(tmp_path)
    run = only_run(tmp_path)
    refused = pipe("reply", run, "sure", cwd=tmp_path)
    assert refused.returncode == 2
    assert "approve(...) takes only yes, no, true or false as an answer, got 'sure'" in refused.stderr
    assert json.loads(pipe("inbox", "--json", cwd=tmp_path).stdout)[0]["status"] == "open"
    assert pipe("resume", run, cwd=tmp_path).returncode == 75  # still no answer: it waits again


def test_reply_names_the_question_by_message_id(tmp_path: Path) -> None:
    start_example(tmp_path)
    run = only_run(tmp_path)
    wrong = pipe("reply", run, "h9", "yes", cwd=tmp_path)
    assert wrong.returncode == 2
    assert "has no open question 'h9'" in wrong.stderr and "h1: Ship release 2.1.0" in wrong.stderr
    assert pipe("reply", run, "h1", "yes", cwd=tmp_path).returncode == 0
    again = pipe("reply", run, "yes", cwd=tmp_path)
    assert again.returncode == 2 and "already answered" in again.stderr
    # A question id alone finds its run.
    pipe("resume", run, cwd=tmp_path)
    assert pipe("reply", "--resume", "h2", "Grace", cwd=tmp_path).stdout == "2.1.0 shipped, signed off by Grace\n"


def test_show_lists_what_a_waiting_run_asked(tmp_path: Path) -> None:
    start_example(tmp_path)
    run = only_run(tmp_path)
    shown = pipe("show", run, cwd=tmp_path).stdout
    assert f"run {run}: waiting" in shown
    assert "h1  approve at" in shown and "Ship release 2.1.0 (2 changes)?  [open]" in shown
    pipe("reply", run, "true", cwd=tmp_path)
    assert "[answered true]" in pipe("show", run, cwd=tmp_path).stdout


def test_a_run_that_is_not_waiting_takes_no_reply(tmp_path: Path) -> None:
    program = tmp_path / "done.pipe"
    program.write_text('pipeline main() -> str:\n    return "done"\n')
    assert pipe("run", program, cwd=tmp_path).returncode == 0
    refused = pipe("reply", only_run(tmp_path), "yes", cwd=tmp_path)
    assert refused.returncode == 2
    assert "is not waiting for an answer (it is done)" in refused.stderr


def test_a_replay_of_a_waiting_run_stops_at_the_question_too(tmp_path: Path) -> None:
    start_example(tmp_path)
    replayed = pipe("replay", only_run(tmp_path), cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == NOTES
    assert "0 outside call(s)" in replayed.stderr


def test_json_says_waiting_with_the_questions(tmp_path: Path) -> None:
    result = start_example(tmp_path, "--json")
    assert result.returncode == 75
    envelope = json.loads(result.stdout)
    assert envelope["status"] == "waiting"
    assert envelope["printed"] == [NOTES.rstrip("\n")]  # one print of a three-line string
    assert [q["question"] for q in envelope["waiting"]] == ["Ship release 2.1.0 (2 changes)?"]


def test_the_trace_shows_the_question_and_the_answer(tmp_path: Path) -> None:
    start_example(tmp_path)
    run = only_run(tmp_path)
    pipe("reply", "--resume", run, "yes", cwd=tmp_path)
    events = [json.loads(line) for line in (tmp_path / ".orgtree" / "runs" / run / "trace.jsonl").read_text()
              .splitlines()]
    asked = [e for e in events if e["event"] == "human.ask"]
    answered = [e for e in events if e["event"] == "human.answer"]
    assert [(e["kind"], e["question"]) for e in asked] == [("approve", "Ship release 2.1.0 (2 changes)?"),
                                                           ("ask", "Who signs off release 2.1.0?")]
    assert [(e["kind"], e["answer"]) for e in answered] == [("approve", "true")]


def test_without_a_journal_asking_a_person_is_a_clear_error(tmp_path: Path) -> None:
    result = start_example(tmp_path, "--no-journal")
    assert result.returncode == 70
    assert "approve(...) asks a person, which needs a journaled run" in result.stderr
    assert "org_approval.pipe:21" in result.stderr and "without --no-journal" in result.stderr


@pytest.mark.skipif(not (REPO / "orgtree_lang").is_dir(), reason="needs the source tree")
def test_the_process_exits_75_and_holds_nothing(tmp_path: Path) -> None:
    """A real process: it ends (the question is on disk, not in memory) with exit status 75."""
    result = subprocess.run([sys.executable, "-m", "orgtree_lang.cli.main", "run", str(EXAMPLE), "--workspace",
                             str(tmp_path)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 75, result.stderr
    assert json.loads(pipe("inbox", "--json", cwd=tmp_path).stdout)[0]["kind"] == "approve"


def test_a_retry_keeps_the_answers_people_gave(tmp_path: Path) -> None:
    start_example(tmp_path)
    run = only_run(tmp_path)
    pipe("reply", "--resume", run, "yes", cwd=tmp_path)
    pipe("reply", "--resume", run, "Ada", cwd=tmp_path)
    retried = pipe("retry", run, "--node", "main", cwd=tmp_path)
    assert retried.returncode == 0, retried.stderr  # not 75: nobody is asked again
    assert retried.stdout.endswith("2.1.0 shipped, signed off by Ada\n")
    assert json.loads(pipe("inbox", "--json", cwd=tmp_path).stdout) == []


def test_starting_over_forgets_the_answers_and_asks_again(tmp_path: Path) -> None:
    start_example(tmp_path)
    run = only_run(tmp_path)
    pipe("reply", run, "yes", cwd=tmp_path)
    again = pipe("resume", run, "--from-scratch", cwd=tmp_path)
    assert again.returncode == 75, again.stderr
    assert "approve at" in again.stderr  # the first question again, not the second
    inbox = json.loads(pipe("inbox", "--json", cwd=tmp_path).stdout)
    assert [(q["run"], q["kind"], q["status"]) for q in inbox] == [(run, "approve", "open")]
