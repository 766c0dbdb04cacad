"""The decomposer end to end with scripted models: write, repair, review, save, run, and reuse with no model calls."""

from __future__ import annotations

import json
import shutil

import pytest
from cli_testing import PipeResult
from cli_testing import pipe as run_pipe
from decompose_testing import GOOD, NO_CONCERNS, ONE_CONCERN, WRONG_TYPE, run_decomposed, scripted

from orgtree_lang.decompose.store import ModuleStore
from orgtree_lang.review.ledger import ConcernLedger
from orgtree_lang.runtime.errors import PipeRuntimeError


PARENT = '''use text

pipeline main(report: str) -> str:
    ambiguous classify(report: str) -> label: str:
        """Label the report: bug if it mentions a crash, else question."""
    return label
'''


def run(tmp_path, author, reviewer, report: str):
    return run_decomposed(tmp_path, PARENT, {"report": report}, author, reviewer, file="triage.pipe")


def write_project(folder) -> None:
    """The parent program and scripted models that write a valid module and accept it."""
    (folder / "triage.pipe").write_text(PARENT)
    (folder / "author.json").write_text(json.dumps([{"match": {"contains": "Write a module"}, "reply": GOOD}]))
    (folder / "reviewer.json").write_text(json.dumps([{"reply": NO_CONCERNS}]))


def pipe_in(folder, *args) -> PipeResult:
    return run_pipe(*args, cwd=folder, env={"PIPE_NO_PLUGINS": "1"})


def test_a_module_is_written_reviewed_saved_and_run(tmp_path):
    author = scripted(tmp_path, "author", [{"match": {"contains": "Write a module"}, "reply": GOOD}], "author")
    reviewer = scripted(tmp_path, "reviewer", [{"reply": NO_CONCERNS}], "reviewer")
    assert run(tmp_path, author, reviewer, "It crashed on start") == "bug"
    assert (len(author.requests), len(reviewer.requests)) == (1, 1)
    (saved,) = ModuleStore(tmp_path).all()
    assert saved.path.name == "classify.pipe" and saved.path.parent.name == "triage"
    assert saved.provenance["parent"] == "triage.pipe:4"
    assert saved.provenance["review-rounds"] == "1"
    assert saved.provenance["author-conversation"] not in saved.provenance["reviewer-conversations"]


def test_the_second_run_reuses_the_saved_module_with_no_model_calls(tmp_path):
    author = scripted(tmp_path, "author", [{"match": {"contains": "Write a module"}, "reply": GOOD}], "author")
    reviewer = scripted(tmp_path, "reviewer", [{"reply": NO_CONCERNS}], "reviewer")
    run(tmp_path, author, reviewer, "crash")
    author.forget()
    reviewer.forget()
    assert run(tmp_path, author, reviewer, "how do I log in?") == "question"
    assert (author.requests, reviewer.requests) == ([], [])


def test_an_invalid_module_is_repaired_from_the_diagnostics(tmp_path):
    author = scripted(tmp_path, "author", [
        {"match": {"contains": "not accepted yet"}, "reply": GOOD},
        {"match": {"contains": "Write a module"}, "reply": WRONG_TYPE},
    ], "author")
    reviewer = scripted(tmp_path, "reviewer", [{"reply": NO_CONCERNS}], "reviewer")
    assert run(tmp_path, author, reviewer, "crash!") == "bug"
    assert len(author.requests) == 2


def test_a_blocking_concern_is_revised_and_recorded_in_the_ledger(tmp_path):
    author = scripted(tmp_path, "author", [
        {"match": {"contains": "A reviewer raised"}, "reply": GOOD + "\nc1: resolved: the report is lower-cased"},
        {"match": {"contains": "Write a module"}, "reply": GOOD.replace("text.lower(report)", "report")},
    ], "author")
    reviewer = scripted(tmp_path, "reviewer", [{"replies": [ONE_CONCERN, NO_CONCERNS]}], "reviewer")
    assert run(tmp_path, author, reviewer, "CRASH") == "bug"
    (saved,) = ModuleStore(tmp_path).all()
    assert "text.lower(report)" in saved.body
    assert saved.provenance["review-rounds"] == "2"
    rows = ConcernLedger.for_workspace(tmp_path).history(saved.provenance["review-subject"])
    assert [(r["concern_id"], r["status"]) for r in rows] == [("c1", "resolved")]


def test_no_valid_module_after_the_repairs_fails_clearly_and_saves_nothing(tmp_path):
    author = scripted(tmp_path, "author", [{"reply": "I would label it a bug."}], "author")
    reviewer = scripted(tmp_path, "reviewer", [{"reply": NO_CONCERNS}], "reviewer")
    with pytest.raises(PipeRuntimeError, match="no valid module for ambiguous block `classify` after 4 attempts"):
        run(tmp_path, author, reviewer, "crash")
    assert ModuleStore(tmp_path).all() == []
    assert reviewer.requests == []


def test_pipe_run_with_scripted_models_writes_and_then_reuses_the_child(tmp_path):
    write_project(tmp_path)

    def pipe(*args):
        return pipe_in(tmp_path, *args)

    first = pipe("run", "triage.pipe", "-i", "report=it crashed", "--model", "scripted:author.json",
                 "--review-model", "scripted:reviewer.json")
    assert first.returncode == 0, first.stderr
    assert first.stdout == "bug\n"
    saved = tmp_path / ".orgtree" / "modules" / "triage" / "classify.pipe"
    assert saved.is_file()
    assert pipe("check", str(saved)).returncode == 0
    # A model that answers nothing the second time: any call would fail, and none is made (no sampled review of
    # the reused module's outputs either).
    (tmp_path / "orgtree.toml").write_text("[decompose]\nreview_sample = 0\n")
    (tmp_path / "silent.json").write_text(json.dumps([{"match": {"contains": "never asked"}, "reply": "x"}]))
    second = pipe("run", "triage.pipe", "-i", "report=how do I log in", "--model", "scripted:silent.json")
    assert second.returncode == 0, second.stderr
    assert second.stdout == "question\n"


def test_a_reviewer_that_never_accepts_fails_clearly_and_saves_nothing(tmp_path):
    author = scripted(tmp_path, "author", [
        {"match": {"contains": "A reviewer raised"}, "reply": GOOD + "\nc1: resolved: lower-cased already"},
        {"match": {"contains": "Write a module"}, "reply": GOOD},
    ], "author")
    stubborn = json.loads(ONE_CONCERN)
    stubborn["concerns"][0]["still_present"] = True
    reviewer = scripted(tmp_path, "reviewer", [{"reply": json.dumps(stubborn)}], "reviewer")
    with pytest.raises(PipeRuntimeError) as info:
        run(tmp_path, author, reviewer, "crash")
    assert info.value.kind == "ambiguous" and "classify" in info.value.message
    assert ModuleStore(tmp_path).all() == []


def test_a_model_that_has_no_answer_is_a_clear_error(tmp_path):
    author = scripted(tmp_path, "author", [{"match": {"contains": "never"}, "reply": GOOD}], "author")
    reviewer = scripted(tmp_path, "reviewer", [{"reply": NO_CONCERNS}], "reviewer")
    with pytest.raises(PipeRuntimeError) as info:
        run(tmp_path, author, reviewer, "crash")
    assert info.value.kind == "model" and "classify" in info.value.message


def test_pipe_modules_lists_and_shows_the_generated_child_with_its_ledger(tmp_path):

    author = scripted(tmp_path, "author", [
        {"match": {"contains": "A reviewer raised"}, "reply": GOOD + "\nc1: resolved: the report is lower-cased"},
        {"match": {"contains": "Write a module"}, "reply": GOOD.replace("text.lower(report)", "report")},
    ], "author")
    reviewer = scripted(tmp_path, "reviewer", [{"replies": [ONE_CONCERN, NO_CONCERNS]}], "reviewer")
    run(tmp_path, author, reviewer, "CRASH")

    def pipe(*args):
        return pipe_in(tmp_path, "modules", *args)

    listing = pipe("list")
    assert listing.stdout.split() == ["triage/classify.pipe", "block", "classify", "parent", "triage.pipe:4",
                                      "review", "rounds", "2"]
    shown = pipe("show", "classify", "--review")
    assert shown.returncode == 0
    assert "# orgtree: block = classify" in shown.stdout and "text.lower(report)" in shown.stdout
    assert "# c1 [blocking, round 1] resolved: `Crash` in capitals is missed" in shown.stdout
    assert pipe("show", "nosuch").returncode == 2


def test_a_run_through_an_ambiguous_block_replays_identically_with_no_model(tmp_path):
    write_project(tmp_path)

    def pipe(*args):
        return pipe_in(tmp_path, *args)

    first = pipe("run", "triage.pipe", "-i", "report=crash", "--model", "scripted:author.json",
                 "--review-model", "scripted:reviewer.json")
    assert first.returncode == 0, first.stderr
    assert "model answers come from scripted:author.json" in first.stderr
    (run_id,) = [p.name for p in (tmp_path / ".orgtree" / "runs").iterdir()]
    replay = pipe("replay", run_id)
    assert replay.returncode == 0, replay.stderr
    assert "0 outside call(s)" in replay.stderr and "identical" in replay.stderr


def test_the_decomposers_model_calls_are_traced_in_the_blocks_child_trace(tmp_path):
    write_project(tmp_path)
    first = pipe_in(tmp_path, "run", "triage.pipe", "-i", "report=crash", "--model", "scripted:author.json",
                    "--review-model", "scripted:reviewer.json")
    assert first.returncode == 0, first.stderr
    (run_dir,) = (tmp_path / ".orgtree" / "runs").iterdir()
    parent = [json.loads(line) for line in (run_dir / "trace.jsonl").read_text().splitlines()]
    child = [json.loads(line) for line in (run_dir / "trace.main.classify.jsonl").read_text().splitlines()]
    assert not [e for e in parent if e["event"] == "model"]
    models = [e for e in child if e["event"] == "model"]
    # The author wrote the module and the reviewer read it, then its outputs (the new module's first run): three
    # calls, each with its tokens.
    assert len(models) == 3 and all(e["tokens"] > 0 for e in models)
    assert {e["for_node"] for e in models} == {f"{run_dir.name}/main/classify@1"}
    assert "author" in models[0]["model"] and "reviewer" in models[1]["model"]


def test_record_saves_cassettes_that_replay_offline(tmp_path):
    write_project(tmp_path)
    pipe = pipe_in

    recorded = pipe(tmp_path, "run", "triage.pipe", "-i", "report=crash", "--model", "scripted:author.json",
                    "--review-model", "scripted:reviewer.json", "--record", "session.json")
    assert recorded.returncode == 0, recorded.stderr
    assert (tmp_path / "session.json").is_file() and (tmp_path / "session.reviewer.json").is_file()
    # A fresh workspace with no saved module: the same answers come from the cassettes, offline.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    for name in ("triage.pipe", "session.json", "session.reviewer.json"):
        shutil.copy(tmp_path / name, fresh / name)
    replayed = pipe(fresh, "run", "triage.pipe", "-i", "report=crash", "--model", "replay:session.json",
                    "--review-model", "replay:session.reviewer.json")
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == "bug\n"
    assert (fresh / ".orgtree" / "modules" / "triage" / "classify.pipe").is_file()


def test_a_module_written_again_is_reviewed_afresh(tmp_path):
    author = scripted(tmp_path, "author", [
        {"match": {"contains": "A reviewer raised"}, "reply": GOOD + "\nc1: resolved: lower-cased"},
        {"match": {"contains": "Write a module"}, "reply": GOOD.replace("text.lower(report)", "report")},
    ], "author")
    reviewer = scripted(tmp_path, "reviewer", [{"replies": [ONE_CONCERN, NO_CONCERNS]}], "reviewer")
    run(tmp_path, author, reviewer, "CRASH")
    (first,) = ModuleStore(tmp_path).all()
    first.path.unlink()
    # The same concern comes back for the new draft: it must block again, not count as settled.
    reviewer = scripted(tmp_path, "reviewer2", [{"replies": [ONE_CONCERN, NO_CONCERNS]}], "reviewer")
    assert run(tmp_path, author, reviewer, "CRASH") == "bug"
    (second,) = ModuleStore(tmp_path).all()
    assert first.provenance["review-subject"].endswith(":1")
    assert second.provenance["review-subject"].endswith(":2")
    assert second.provenance["review-rounds"] == "2" and "text.lower(report)" in second.body
