"""The skill pool with scripted models and real SQLite: history, bug review (fix, modify, remove with and without
evidence), promotion (accepted and rejected), learned.* skills, export, and that a reporter never reviews."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from orgtree_lang.cli.main import main
from orgtree_lang.compile.api import compile_source
from orgtree_lang.decompose.spec import spec_hash
from orgtree_lang.decompose.store import ModuleStore
from orgtree_lang.models.scripted import ScriptedModel
from orgtree_lang.pool.bugs import review_bug
from orgtree_lang.pool.history import workspace_history
from orgtree_lang.pool.learned import LearnedStore
from orgtree_lang.pool.promote import promote
from orgtree_lang.run.registries import workspace_registry
from orgtree_lang.pool.store import PoolError, PoolStore
from orgtree_lang.review.errors import SelfReviewError
from orgtree_lang.run.runner import RunOptions, run_program
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.syntax.diagnostics import CompileError

NO_CONCERNS = json.dumps({"concerns": [], "summary": "fits"})
PARENT = '''use text

pipeline main(word: str) -> str:
    ambiguous shout(word: str) -> loud: str:
        """Return the word in capital letters followed by one exclamation mark."""
    return loud
'''
BUGGY = '''use text

pipeline main(word: str) -> str:
    return text.upper(word)
'''
FIXED = '''use text

pipeline main(word: str) -> str:
    return text.upper(word) + "!"
'''


def scripted(tmp_path, name: str, rules: list[dict], role: str = "reviewer") -> ScriptedModel:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(rules))
    return ScriptedModel.from_file(path, role=role)


def run_source(root, source: str, name: str = "p.pipe", **inputs):
    """Run a program in workspace `root` with its pool's registry, durably (as `pipe run` does)."""
    path = root / name
    path.write_text(source)
    registry = workspace_registry(root, plugins=False)
    program = compile_source(source, str(path), registry).program
    options = RunOptions(inputs=inputs, workspace=root, registry=registry, durable=True)
    return run_program(program, root, registry, options, source=source, program_path=path).state


def save_generated(root, body: str = BUGGY):
    """A module the decomposer would have saved for PARENT's block, with its provenance header."""
    (root / "parent.pipe").write_text(PARENT)
    registry = workspace_registry(root, plugins=False)
    program = compile_source(PARENT, str(root / "parent.pipe"), registry).program
    spec = program.pipelines["main"].ambiguous[0]
    provenance = {"block": "shout", "parent": "parent.pipe:4", "spec-hash": spec_hash(spec),
                  "author-conversation": "author-1", "reviewer-conversations": "rev-1,rev-2"}
    return ModuleStore(root).save("parent.pipe", "shout", body, provenance, registry)


PLAN = json.dumps({"cases": [{"inputs": {"word": "hi"}, "expect": "HI!"},
                             {"inputs": {"word": "ok"}, "expect": "OK!"}]})


def judge(accepted: bool, ok: list[bool]) -> str:
    return json.dumps({"accepted": accepted, "reasons": "checked against the spec",
                       "cases": [{"case": i, "ok": v, "reason": "" if v else "no exclamation mark"}
                                 for i, v in enumerate(ok, 1)]})


def promoter(tmp_path, accepted: bool, ok: list[bool], name: str = "promoter") -> ScriptedModel:
    return scripted(tmp_path, name, [{"match": {"contains": "The module ran on your cases"},
                                      "reply": judge(accepted, ok)}, {"reply": PLAN}])


def promote_buggy(root, tmp_path):
    saved = save_generated(root)
    return promote(root, saved, reviewer=promoter(tmp_path, True, [True, True]),
                   registry=workspace_registry(root, plugins=False))


# ---- promotion ---------------------------------------------------------------------------------


def test_an_accepted_module_becomes_a_learned_skill_any_pipeline_can_call(root, tmp_path):
    saved = save_generated(root, FIXED)
    model = promoter(tmp_path, True, [True, True])
    result = promote(root, saved, reviewer=model, registry=workspace_registry(root, plugins=False))
    assert result["accepted"] and result["name"] == "shout"
    assert [case["output"] for case in result["cases"]] == ["HI!", "OK!"]  # the module really ran on the plan
    assert model.calls == 2
    registry = workspace_registry(root, plugins=False)
    assert registry.get("learned.shout").signature() == "learned.shout(word: str) -> str"
    assert "capital letters" in registry.get("learned.shout").description
    state = run_source(root, 'use learned\n\npipeline main() -> str:\n    return learned.shout("pool")\n')
    assert state.result == "POOL!"
    (row,) = PoolStore.for_workspace(root).promotions()
    assert row["accepted"] and row["reviewer_model"] == model.name and len(row["cases"]) == 2


def test_a_rejected_module_is_recorded_with_its_reasons_and_not_added(root, tmp_path):
    saved = save_generated(root, BUGGY)
    result = promote(root, saved, reviewer=promoter(tmp_path, False, [False, False]),
                     registry=workspace_registry(root, plugins=False))
    assert not result["accepted"] and result["path"] is None
    assert [case["output"] for case in result["cases"]] == ["HI", "OK"]
    assert result["cases"][0]["reason"] == "no exclamation mark"
    assert LearnedStore(root).all() == [] and "learned.shout" not in workspace_registry(root, plugins=False)
    (row,) = PoolStore.for_workspace(root).promotions()
    assert row["accepted"] is False and row["reasons"] == "checked against the spec"


def test_accepting_while_judging_a_case_wrong_is_a_rejection(root, tmp_path):
    saved = save_generated(root, BUGGY)
    result = promote(root, saved, reviewer=promoter(tmp_path, True, [True, False]),
                     registry=workspace_registry(root, plugins=False))
    assert not result["accepted"]
    assert "judged case(s) 2 wrong" in result["reasons"]


def test_the_author_or_an_earlier_reviewer_of_a_module_cannot_be_its_tester(root, tmp_path):
    saved = save_generated(root, FIXED)
    for conversation in ("author-1", "rev-2"):
        model = promoter(tmp_path, True, [True, True])
        with pytest.raises(SelfReviewError, match="the tester must be independent"):
            promote(root, saved, reviewer=model, registry=workspace_registry(root, plugins=False),
                    new_conversation=lambda c=conversation: c)
        assert model.calls == 0
    assert not PoolStore.for_workspace(root).promotions()


def test_promote_and_export_from_the_cli(root, tmp_path, capsys):
    save_generated(root, FIXED)
    promoter(tmp_path, True, [True, True])
    model = f"scripted:{tmp_path / 'promoter.json'}"
    assert main(["skills", "promote", "shout", "--name", "exclaim", "--workspace", str(root),
                 "--review-model", model]) == 0
    assert "promoted to learned.exclaim" in capsys.readouterr().out
    assert main(["skills", "export", str(tmp_path / "shared"), "--workspace", str(root)]) == 0
    exported = (tmp_path / "shared" / "exclaim.pipe").read_text()
    assert exported == (root / ".orgtree" / "skills" / "exclaim.pipe").read_text()
    assert "# orgtree-skill: promoted-by = " + model in exported
    assert main(["skills", "--workspace", str(root)]) == 0
    assert "learned.exclaim" in capsys.readouterr().out


def test_promote_refuses_a_bad_skill_name_as_a_usage_error_before_asking_the_reviewer(root, tmp_path, capsys):
    save_generated(root, FIXED)
    promoter(tmp_path, True, [True, True])
    model = f"scripted:{tmp_path / 'promoter.json'}"
    assert main(["skills", "promote", "shout", "--name", "Bad Name", "--workspace", str(root),
                 "--review-model", model]) == 2
    err = capsys.readouterr().err
    assert "`Bad Name` cannot name a learned skill" in err and "internal error" not in err
    assert not PoolStore.for_workspace(root).promotions()


def judgement_of(cases: dict[int, bool], accepted: bool = True) -> str:
    """A judgement with a verdict for each case number in `cases` (numbered from 1, as the reviewer is shown)."""
    return json.dumps({"accepted": accepted, "reasons": "checked against the spec",
                       "cases": [{"case": number, "ok": ok, "reason": "" if ok else "no exclamation mark"}
                                 for number, ok in cases.items()]})


def judging(tmp_path, *judgements: str) -> ScriptedModel:
    """A promotion reviewer answering PLAN, then each judgement in turn (the first, then the one asked again)."""
    return scripted(tmp_path, "judging", [{"match": {"contains": "The module ran on your cases"},
                                           "reply": judgements[0]},
                                          {"match": {"contains": "Your answer could not be used"},
                                           "replies": list(judgements[1:]) or [judgements[0]]},
                                          {"reply": PLAN}])


@pytest.mark.parametrize("verdicts", [{}, {1: True}, {1: True, 7: True}, {1: True, 2: True, 3: True}],
                         ids=["none", "one of two", "a case the plan lacks", "one case too many"])
def test_a_judgement_without_exactly_one_verdict_for_every_case_is_asked_again_then_refused(root, tmp_path,
                                                                                           verdicts):
    saved = save_generated(root, FIXED)
    model = judging(tmp_path, judgement_of(verdicts))
    with pytest.raises(PoolError) as refused:
        promote(root, saved, reviewer=model, registry=workspace_registry(root, plugins=False))
    assert "judgement of shout.pipe" in refused.value.message
    assert "the plan has cases 1 to 2" in refused.value.message
    assert model.calls == 3  # the plan, the judgement, and the judgement asked again
    assert not PoolStore.for_workspace(root).promotions() and LearnedStore(root).all() == []


def test_a_verdict_given_twice_for_one_case_is_not_a_judgement(root, tmp_path):
    saved = save_generated(root, FIXED)
    twice = json.dumps({"accepted": True, "reasons": "fine", "cases": [
        {"case": 1, "ok": True}, {"case": 1, "ok": False}, {"case": 2, "ok": True}]})
    with pytest.raises(PoolError, match="case 1 has 2 verdicts"):
        promote(root, saved, reviewer=judging(tmp_path, twice), registry=workspace_registry(root, plugins=False))


def test_a_reviewer_asked_again_for_the_missing_verdicts_can_still_accept(root, tmp_path):
    saved = save_generated(root, FIXED)
    # The complete judgement answers only a request that names the case left out.
    model = scripted(tmp_path, "judging", [{"match": {"contains": "no verdict for case(s) 2"},
                                            "reply": judgement_of({1: True, 2: True})},
                                           {"match": {"contains": "The module ran on your cases"},
                                            "reply": judgement_of({1: True})},
                                           {"reply": PLAN}])
    result = promote(root, saved, reviewer=model, registry=workspace_registry(root, plugins=False))
    assert result["accepted"] and model.calls == 3


def test_cases_are_numbered_from_1_in_progress_lines_the_reviewer_s_view_verdicts_and_the_report(
        root, tmp_path, capsys):
    save_generated(root, BUGGY)
    scripted(tmp_path, "promoter", [{"match": {"contains": ['"case": 2', "The module ran on your cases"]},
                                     "reply": judgement_of({1: True, 2: False}, accepted=False)},
                                    {"reply": PLAN}])
    assert main(["skills", "promote", "shout", "--workspace", str(root),
                 "--review-model", f"scripted:{tmp_path / 'promoter.json'}"]) == 70
    out, err = capsys.readouterr()
    assert "running case 1 of 2" in err and "running case 2 of 2" in err
    assert out.splitlines()[:2] == ['case 1: ok  {"word": "hi"} -> "HI"',
                                    'case 2: BAD {"word": "ok"} -> "OK" (no exclamation mark)']
    (row,) = PoolStore.for_workspace(root).promotions()
    assert [(case["case"], case["ok"]) for case in row["cases"]] == [(1, True), (2, False)]


def test_the_plan_and_judgement_json_in_docs_skill_pool_md_are_what_a_promotion_takes_and_shows(root, tmp_path):
    page = (Path(__file__).resolve().parent.parent / "docs" / "skill-pool.md").read_text(encoding="utf-8")
    promotion = page.split("## Promotion", 1)[1].split("\n## ", 1)[0]
    plan, shown, judgement = re.findall(r"```json\n(.*?)```", promotion, re.S)
    body = 'use text\n\npipeline main(word: str) -> str:\n    if word == "":\n        return ""\n' \
           '    return text.upper(word) + "!"\n'
    saved = save_generated(root, body)
    model = scripted(tmp_path, "documented", [{"match": {"contains": "The module ran on your cases"},
                                               "reply": judgement}, {"reply": plan}])
    result = promote(root, saved, reviewer=model, registry=workspace_registry(root, plugins=False))
    assert [{key: case[key] for key in ("case", "inputs", "expect", "output")} for case in result["cases"]] == \
        json.loads(shown)
    assert not result["accepted"] and model.calls == 2
    assert [(case["ok"], case["reason"]) for case in result["cases"]] == [(True, ""), (False, 'expected "!", got ""')]


# ---- history -------------------------------------------------------------------------------------


PARSE = 'use json\n\npipeline main(s: str) -> any:\n    return json.parse(s)\n'


def failing_calls(root, count: int) -> list:
    for i in range(count):
        with pytest.raises(PipeRuntimeError):
            run_source(root, PARSE, s="{broken" + str(i))
    run_source(root, PARSE, s="[1]")
    return workspace_history(root)("json.parse", 50)


def test_history_lists_every_call_newest_first_with_its_outcome(root, capsys):
    calls = failing_calls(root, 2)
    assert [c.status for c in calls] == ["ok", "error", "error"]
    assert calls[0].inputs == '"[1]"' and calls[0].output == "[1]" and calls[0].caller == "main"
    assert "Expecting property name" in calls[1].error
    assert main(["skills", "history", "json.parse", "--workspace", str(root)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[0].startswith(f"#{calls[0].id} ") and " error " in lines[1]


# ---- bug reports ---------------------------------------------------------------------------------


def file_from_program(root, skill: str = "json.parse") -> int:
    state = run_source(root, f'use skills\n\npipeline main() -> int:\n    return skills.report_bug("{skill}", '
                             '"read a config file", "a dict", "an error for a trailing comma")\n', "report.pipe")
    return state.result


def decide(tmp_path, name: str, **decision) -> ScriptedModel:
    return scripted(tmp_path, name, [{"reply": json.dumps({"reasoning": "see the history", **decision})}])


def test_a_report_filed_by_a_program_is_stored_once_with_its_run_as_reporter(root):
    bug_id = file_from_program(root)
    (bug,) = PoolStore.for_workspace(root).bugs()
    assert (bug.id, bug.skill, bug.status, bug.expected) == (bug_id, "json.parse", "open", "a dict")
    assert bug.reporter_conversation.startswith("run:")


def test_modify_adds_a_usage_note_the_skill_shows_from_then_on(root, tmp_path, capsys):
    bug_id = file_from_program(root)
    note = "json.parse follows strict JSON: no trailing commas or comments."
    row = review_bug(root, bug_id, reviewer=decide(tmp_path, "r", decision="modify", usage_note=note),
                     registry=workspace_registry(root, plugins=False), history=workspace_history(root))
    assert (row["decision"], row["outcome"]) == ("modify", "applied")
    assert note in workspace_registry(root, plugins=False).get("json.parse").description
    assert main(["skills", "json.parse", "--workspace", str(root)]) == 0
    assert f"Usage note: {note} (bug #{bug_id})" in capsys.readouterr().out
    assert PoolStore.for_workspace(root).bug(bug_id).status == "modified"


def test_remove_with_failed_calls_as_evidence_takes_the_skill_out_of_the_pool(root, tmp_path):
    calls = failing_calls(root, 2)
    bug_id = file_from_program(root)
    failed = [c.id for c in calls if c.failed]
    row = review_bug(root, bug_id, reviewer=decide(tmp_path, "r", decision="remove", evidence=failed),
                     registry=workspace_registry(root, plugins=False), history=workspace_history(root),
                     min_failures=2)
    assert (row["decision"], row["outcome"], row["evidence"]) == ("remove", "applied", failed)
    assert "json.parse" not in workspace_registry(root, plugins=False)
    with pytest.raises(CompileError, match="namespace `json` has no skill `parse`"):  # users no longer compile
        run_source(root, PARSE, "again.pipe", s="[1]")


def test_remove_without_enough_failures_is_refused_and_the_report_stays_open(root, tmp_path, capsys):
    calls = failing_calls(root, 1)
    bug_id = file_from_program(root)
    ok_call = next(c.id for c in calls if not c.failed)
    failed = next(c.id for c in calls if c.failed)
    row = review_bug(root, bug_id, reviewer=decide(tmp_path, "r", decision="remove",
                                                   evidence=[ok_call, "nowhere:9", failed]),
                     registry=workspace_registry(root, plugins=False), history=workspace_history(root),
                     min_failures=2)
    assert row["outcome"] == "refused"
    assert row["detail"] == (f"removal refused: 1 failed call(s) of json.parse cited, at least 2 needed; not calls "
                             f"of json.parse in its history: #nowhere:9; calls that did not fail: #{ok_call}")
    assert "json.parse" in workspace_registry(root, plugins=False)
    assert PoolStore.for_workspace(root).bug(bug_id).status == "open"
    assert main(["skills", "bugs", "--workspace", str(root)]) == 0
    listing = capsys.readouterr().out
    assert f"#{bug_id} json.parse [open]" in listing and "remove refused" in listing


def test_fix_replaces_a_learned_module_after_check_and_review(root, tmp_path):
    promote_buggy(root, tmp_path)
    assert run_source(root, 'use learned\n\npipeline main() -> str:\n    return learned.shout("a")\n').result == "A"
    bug_id = file_from_program(root, "learned.shout")
    fixer = decide(tmp_path, "fixer", decision="fix", module=FIXED)
    checker = scripted(tmp_path, "checker", [{"reply": NO_CONCERNS}])
    row = review_bug(root, bug_id, reviewer=fixer, fix_reviewer=checker,
                     registry=workspace_registry(root, plugins=False), history=workspace_history(root))
    assert (row["decision"], row["outcome"]) == ("fix", "applied") and checker.calls == 1
    assert run_source(root, 'use learned\n\npipeline main() -> str:\n    return learned.shout("a")\n',
                      "again.pipe").result == "A!"
    assert len(list((root / ".orgtree" / "skills" / "history").glob("shout.*.pipe"))) == 1


def test_a_fix_that_does_not_fit_the_signature_is_refused_and_nothing_changes(root, tmp_path):
    promote_buggy(root, tmp_path)
    before = (root / ".orgtree" / "skills" / "shout.pipe").read_text()
    bug_id = file_from_program(root, "learned.shout")
    wrong = "pipeline main(word: str) -> int:\n    return 1\n"
    row = review_bug(root, bug_id, reviewer=decide(tmp_path, "fixer", decision="fix", module=wrong),
                     registry=workspace_registry(root, plugins=False), history=workspace_history(root))
    assert row["outcome"] == "refused" and "no valid corrected module after 3 attempts" in row["detail"]
    assert (root / ".orgtree" / "skills" / "shout.pipe").read_text() == before


def test_a_python_skill_cannot_be_fixed_by_a_reviewer(root, tmp_path):
    bug_id = file_from_program(root)
    row = review_bug(root, bug_id, reviewer=decide(tmp_path, "r", decision="fix", module=FIXED),
                     registry=workspace_registry(root, plugins=False), history=workspace_history(root))
    assert row["outcome"] == "refused" and "json.parse is a Python skill" in row["detail"]


def test_the_reporter_can_never_be_the_reviewer(root, tmp_path):
    bug_id = file_from_program(root)
    reporter = PoolStore.for_workspace(root).bug(bug_id).reporter_conversation
    model = decide(tmp_path, "r", decision="modify", usage_note="x")
    with pytest.raises(SelfReviewError, match="never reviewed by the agent that filed it"):
        review_bug(root, bug_id, reviewer=model, registry=workspace_registry(root, plugins=False),
                   history=workspace_history(root), new_conversation=lambda: reporter)
    assert model.calls == 0 and PoolStore.for_workspace(root).decisions(bug_id) == []
    # From the CLI too: the reporter's conversation is given, the reviewer's is always a fresh one.
    store = PoolStore.for_workspace(root)
    second = store.file_bug("json.parse", "u", "e", "o", reporter="cli", reporter_conversation="conv-9")
    row = review_bug(root, second, reviewer=model, registry=workspace_registry(root, plugins=False),
                     history=workspace_history(root))
    assert row["reviewer_conversation"] not in ("conv-9", reporter)


def test_a_decided_report_is_not_reviewed_again(root, tmp_path):
    bug_id = file_from_program(root)
    model = decide(tmp_path, "r", decision="modify", usage_note="strict JSON only")
    review_bug(root, bug_id, reviewer=model, registry=workspace_registry(root, plugins=False),
               history=workspace_history(root))
    with pytest.raises(PoolError, match=f"#{bug_id} is already decided"):
        review_bug(root, bug_id, reviewer=model, registry=workspace_registry(root, plugins=False),
                   history=workspace_history(root))


def test_report_and_review_from_the_cli(root, tmp_path, capsys):
    scripted(tmp_path, "r", [{"reply": json.dumps({"decision": "modify", "reasoning": "misuse",
                                                   "usage_note": "pass strict JSON"})}])
    assert main(["skills", "report", "json.parse", "--use-case", "config", "--expected", "a dict",
                 "--observed", "an error", "--workspace", str(root),
                 "--review-model", f"scripted:{tmp_path / 'r.json'}"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == ["filed bug report #1 about json.parse",
                                "bug #1 json.parse: modify applied; misuse (pass strict JSON)"]
    assert main(["skills", "report", "json.prase", "--use-case", "u", "--expected", "e", "--observed", "o",
                 "--workspace", str(root)]) == 2
    assert "did you mean `json.parse`?" in capsys.readouterr().err


def test_a_module_used_successfully_n_times_is_promoted_after_the_run(root, tmp_path, capsys):
    (root / "parent.pipe").write_text(PARENT)
    (root / "orgtree.toml").write_text("[skills]\npromote_after = 2\n")
    scripted(tmp_path, "author", [{"match": {"contains": "Write a module"}, "reply": f"```pipe\n{FIXED}```"}], "author")
    scripted(tmp_path, "reviewer", [{"match": {"contains": "The module ran on your cases"},
                                     "reply": judge(True, [True, True])},
                                    {"match": {"contains": "Its signature:"}, "reply": PLAN},
                                    {"reply": NO_CONCERNS}])
    models = ["--model", f"scripted:{tmp_path / 'author.json'}", "--review-model", f"scripted:{tmp_path / 'reviewer.json'}"]
    assert main(["run", str(root / "parent.pipe"), "-i", "word=a", *models]) == 0
    assert "learned.shout" not in workspace_registry(root, plugins=False)  # one use is not enough
    assert main(["run", str(root / "parent.pipe"), "-i", "word=b", *models]) == 0
    err = capsys.readouterr().err
    assert "shout.pipe promoted to learned.shout: checked against the spec" in err
    assert "learned.shout" in workspace_registry(root, plugins=False)
    assert main(["run", str(root / "parent.pipe"), "-i", "word=c", *models]) == 0
    assert len(PoolStore.for_workspace(root).promotions()) == 1  # put up once, not again on every run
