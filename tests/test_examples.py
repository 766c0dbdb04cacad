"""The programs in examples/: each runs through `pipe run` and prints exactly the output written here.

The expected outputs were worked out by reading the programs, not by copying a run; when an example
changes, change its expectation here by the same reasoning.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_testing import PipeResult
from cli_testing import pipe as run_pipe

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"


def pipe(*args: str, cwd: Path = REPO) -> PipeResult:
    """Run the `pipe` CLI (in this process: tests/test_cli.py starts the console script itself)."""
    # The examples must run, or fail clearly, without a model.
    return run_pipe(*args, cwd=cwd, env={"PIPE_NO_PLUGINS": "1", "PIPE_MODEL": None, "PIPE_REVIEW_MODEL": None})


def run_example(name: str, workspace: Path, *extra: str) -> PipeResult:
    # A temporary workspace keeps traces, the bytecode cache and written files out of the repository.
    return pipe("run", str(EXAMPLES / name), "--workspace", str(workspace), *extra)


EXPECTED: dict[str, str] = {
    "contracts.pipe": """\
AMT
5.0
""",
    "hello.pipe": """\
hello, world!
greeted world
""",
    "loops.pipe": """\
sum of 1..10 = 55
odd numbers: [1, 3, 5, 7, 9]
first square above 50: 8*8 = 64
vowels in 'orchestration': 5
  apples: 3
  pears: sold out
  plums: 12
1. ada
2. grace
3. alan
spent: 16.0 | most expensive: 4.0 | sorted desc: [4, 2, 1]
total items: 7
""",
    # Main sends all six tickets in its turn: ticket 1 starts billing_desk#1, ticket 2 shipping_desk#2, 3 and 6
    # wait in billing's mailbox, 5 in shipping's, 4 has no route (main prints that at once). Then the nodes take
    # turns by id: billing refunds 1, escalates 3 (starting escalation_desk#3), refunds 6 and waits; shipping#2
    # reports and ends, so ticket 5 starts shipping_desk#4; the escalation desk leaves its note and reports;
    # shipping#4 reports. Main reads the three reports; when all wait, billing's shorter timeout fires first,
    # its total comes, and main's own timeout ends the loop: 4 reports.
    "org_router.pipe": """\
ticket 4 not routed: cannot send to "returns": no route for topic "returns" (known routes: "billing", "escalate", "shipping")
billing: refunded 20 for ticket 1
billing: ticket 3 is too big, escalated
billing: refunded 15 for ticket 6
shipping: tracing ticket 2 (shipping from main)
shipping: tracing ticket 5 (shipping from main)
report from main/shipping_desk#2: ticket 2 traced
report from main/escalation_desk#3: ticket 3 escalated by main/billing_desk#1
report from main/shipping_desk#4: ticket 5 traced
report from main/billing_desk#1: billing refunded 35 in total
4
""",
    "retry_goto.pipe": """\
try 1 failed: service busy (call 1)
try 2 failed: service busy (call 2)
try 3 succeeded
payload from call 3
""",
    "records.pipe": """\
[x] write parser (5 pts, ada)
[ ] write checker (8 pts, grace)
[ ] write docs (3 pts, nobody)
[x] benchmarks (2 pts, nobody)
by points: write checker, write parser, write docs, benchmarks
""" + json.dumps({
        "open_points": 11,
        "done_points": 7,
        "unowned": ["write docs", "benchmarks"],
        "biggest": {"title": "write checker", "points": 8, "owner": "grace", "done": False},
    }) + "\n",
    "try_except.pipe": """\
age 42
bad age -3: -3 is not a plausible age [fail]
bad age forty: int() cannot parse "forty" as an integer [type]
key error on line 32: key "timeout" is not in the dict
timeout defaults to 30
skill error: json.parse: Expecting value at line 1, column 17
ratios: 3.5 0.0
outer handler got: lookup failed (index 5 is out of range for a list of length 3)
all errors handled
""",
}

# The report workspace_files.pipe writes: notes in fs.list order (sorted), each summarized to at most
# 15 words. standup's prose is 18 words, so text.summarize keeps its best-scoring sentence (12 words)
# and drops "Next week the VM gets budgets." (6 more would exceed 15). release's prose is 16 words:
# the sentences about the wheel score higher (`wheel` occurs twice), so "Tag the version." goes.
NOTES_REPORT = """\
# Notes
3 notes, 44 words, 3 open TODOs

## Bytecode cache (notes/cache.txt)
Compiled programs are cached by the hash of their source.
- tags: #perf
- [ ] measure how often the cache hits.

## Release checklist (notes/release.txt)
Build the wheel. Check that the wheel carries the grammar and the stdlib.
- tags: #release #packaging

## Standup, Monday (notes/standup.txt)
The parser is done and the checker reports every error at once.
- tags: #compiler #planning
- [ ] write the language reference.
- [ ] add golden tests for goto.
"""

TESTED_ELSEWHERE = {"workspace_files.pipe", "ambiguous_triage.pipe", "org_approval.pipe",  # org_approval: test_org_human.py
                    "repair_prices.pipe",  # test_decompose_repair.py
                    "org_research.pipe",  # test_parallel.py
                    "org_supervisor.pipe"}  # test_org_messages.py


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_prints_its_expected_output(name: str, tmp_path: Path) -> None:
    result = run_example(name, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == EXPECTED[name]
    assert result.stderr == ""


def test_every_example_has_a_header_and_an_expectation() -> None:
    programs = sorted(p.name for p in EXAMPLES.glob("*.pipe"))
    offline = set(programs) - {"ambiguous_triage.pipe", "repair_prices.pipe"}  # the examples that need a model
    assert len(offline) >= 6
    for name in programs:
        first = (EXAMPLES / name).read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith(f"# {name} — "), f"{name} must open with `# {name} — what it shows`"
        assert name in EXPECTED or name in TESTED_ELSEWHERE, f"{name} has no expected output in this file"


def test_hello_takes_its_name_as_an_input(tmp_path: Path) -> None:
    result = run_example("hello.pipe", tmp_path, "-i", "name=Ada")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hello, Ada!\ngreeted Ada\n"


def test_retry_gives_up_when_tries_run_out(tmp_path: Path) -> None:
    result = run_example("retry_goto.pipe", tmp_path, "-i", "max_tries=2")
    assert result.returncode == 70
    assert result.stdout == "try 1 failed: service busy (call 1)\ntry 2 failed: service busy (call 2)\n"
    assert "giving up after 2 tries" in result.stderr
    assert "retry_goto.pipe:23" in result.stderr  # the `fail` in main's handler
    assert "Traceback" not in result.stderr


def test_workspace_files_summarizes_the_notes_and_writes_a_report(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES / "notes", tmp_path / "notes")
    result = run_example("workspace_files.pipe", tmp_path)
    assert result.returncode == 0, result.stderr
    size = len(NOTES_REPORT.encode("utf-8"))
    assert result.stdout == (
        "skipping notes/draft.md (not a .txt note)\n"
        + NOTES_REPORT
        + f"wrote reports/notes.md ({size} bytes)\n"
    )
    assert (tmp_path / "reports" / "notes.md").read_text(encoding="utf-8") == NOTES_REPORT
    assert sorted(p.name for p in (tmp_path / "notes").iterdir()) == [
        "cache.txt", "draft.md", "release.txt", "standup.txt"]  # the notes are only read


def test_workspace_files_fails_clearly_without_a_notes_folder(tmp_path: Path) -> None:
    result = run_example("workspace_files.pipe", tmp_path)
    assert result.returncode == 70
    assert "no folder `notes` in the workspace" in result.stderr
    assert not (tmp_path / "reports").exists()


def test_ambiguous_block_without_a_model_fails_with_a_clear_error(tmp_path: Path) -> None:
    result = run_example("ambiguous_triage.pipe", tmp_path)
    assert result.returncode == 70
    assert result.stdout == "triaging: The export button does nothing when the list is empty.\n"
    assert "ambiguous block `classify` cannot run: no module is saved for it and no model is configured" \
        in result.stderr
    assert "--model" in result.stderr and "PIPE_MODEL" in result.stderr
    assert "ambiguous_triage.pipe:16" in result.stderr
    assert "Traceback" not in result.stderr


def test_ambiguous_example_runs_without_a_model_when_the_known_step_decides(tmp_path: Path) -> None:
    report = "Traceback (most recent call last): KeyError"
    result = run_example("ambiguous_triage.pipe", tmp_path, "-i", f"report={report}")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"triaging: {report}\nbug\n"


def test_examples_pass_pipe_check() -> None:
    result = pipe("check", *sorted(str(p) for p in EXAMPLES.glob("*.pipe")))
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr


# ---- ambiguous_triage.pipe with the scripted models in examples/models/ ----------------------------------
#
# The scripted author first writes a module that matches request phrases case-sensitively; the scripted
# reviewer's first round raises one blocking concern (c1, resting on "asks for a feature"); the author
# answers "A reviewer raised ..." with a module that lower-cases the report first and `c1: resolved: ...`;
# the reviewer's second round (a fresh conversation) has no concerns. So the saved module is the revised one,
# after 2 review rounds with 1 concern resolved. What it answers, read from that module:
#   "The export button does nothing when the list is empty." -> no request phrase, no "?", not "how " -> bug
#   "Please add CSV export" -> lower-cased it contains "please add" -> feature
#   "How do I change my password?" -> no request phrase, ends with "?" -> question

SCRIPTED = ("--model", "scripted:examples/models/triage_author.yaml",
            "--review-model", "scripted:examples/models/triage_reviewer.yaml")
DEFAULT_REPORT = "The export button does nothing when the list is empty."


def triage_copy(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of examples/ to run from (the scripted files are resolved from the cwd) and an empty workspace."""
    shutil.copytree(EXAMPLES, tmp_path / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return tmp_path, workspace


def run_triage(cwd: Path, workspace: Path, *extra: str) -> PipeResult:
    return pipe("run", "examples/ambiguous_triage.pipe", "--workspace", str(workspace), *extra, cwd=cwd)


def saved_classify(workspace: Path) -> Path:
    return workspace / ".orgtree" / "modules" / "ambiguous_triage" / "classify.pipe"


def test_ambiguous_example_writes_reviews_saves_and_runs_a_child_with_the_scripted_models(tmp_path: Path) -> None:
    cwd, workspace = triage_copy(tmp_path)
    result = run_triage(cwd, workspace, *SCRIPTED)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"triaging: {DEFAULT_REPORT}\nbug\n"
    assert "Traceback" not in result.stderr

    path = saved_classify(workspace)
    assert path.is_file()
    assert [p.name for p in path.parent.iterdir()] == ["classify.pipe"]  # nothing half-saved beside it
    check = pipe("check", str(path))
    assert check.returncode == 0, check.stderr
    assert "warning" not in check.stderr

    text = path.read_text(encoding="utf-8")
    header = dict(line.removeprefix("# orgtree: ").split(" = ", 1)
                  for line in text.splitlines() if line.startswith("# orgtree: "))
    assert header["block"] == "classify"
    assert header["parent"] == "examples/ambiguous_triage.pipe:16"
    assert header["review-rounds"] == "2"
    assert header["concerns"] == "open 0, resolved 1, rejected 0, out_of_scope 0"
    assert header["author-model"] == "scripted:examples/models/triage_author.yaml"
    assert header["reviewer-model"] == "scripted:examples/models/triage_reviewer.yaml"
    reviewer_conversations = header["reviewer-conversations"].split(",")
    assert len(set(reviewer_conversations)) == 2  # a fresh reviewer conversation per round
    assert header["author-conversation"] not in reviewer_conversations
    assert len(header["spec-hash"]) == 24
    # The saved module is the revision: it lower-cases the report, as the concern asked.
    assert "lowered = text.lower(text.strip(report))" in text
    assert "text.contains(report, phrase)" not in text

    from orgtree_lang.review.ledger import ConcernLedger

    with ConcernLedger.for_workspace(workspace) as ledger:
        rows = ledger.history(header["review-subject"])
    assert [(r["concern_id"], r["severity"], r["status"]) for r in rows] == [("c1", "blocking", "resolved")]


def test_ambiguous_example_reuses_the_saved_module_with_no_model_calls(tmp_path: Path) -> None:
    cwd, workspace = triage_copy(tmp_path)
    first = run_triage(cwd, workspace, *SCRIPTED)
    assert first.returncode == 0, first.stderr
    saved = saved_classify(workspace).read_bytes()
    # An author (and, by default, reviewer) with no answer for any request the decomposer sends:
    # if a model were called, the run would fail.
    (cwd / "never.yaml").write_text('rules:\n  - match: {contains: "never asked"}\n    reply: "x"\n')
    for report, label in [("Please add CSV export", "feature"), ("How do I change my password?", "question"),
                          (DEFAULT_REPORT, "bug")]:
        again = run_triage(cwd, workspace, "-i", f"report={report}", "--model", "scripted:never.yaml")
        assert again.returncode == 0, again.stderr
        assert again.stdout == f"triaging: {report}\n{label}\n"
    assert saved_classify(workspace).read_bytes() == saved  # reused as is, not rewritten


def test_the_never_answering_model_does_fail_when_it_is_called(tmp_path: Path) -> None:
    # The premise of the reuse test: in a workspace with no saved module, scripted:never.yaml is asked and fails.
    cwd, workspace = triage_copy(tmp_path)
    (cwd / "never.yaml").write_text('rules:\n  - match: {contains: "never asked"}\n    reply: "x"\n')
    result = run_triage(cwd, workspace, "--model", "scripted:never.yaml")
    assert result.returncode == 70
    assert result.stdout == f"triaging: {DEFAULT_REPORT}\n"
    assert "has no response for this author request" in result.stderr
    assert not saved_classify(workspace).exists()
