"""The data-driven decomposition with scripted models: design and its review, simulation, concerns with evidence."""

from __future__ import annotations

import dataclasses
import json

import pytest
from cli_testing import pipe
from decompose_testing import NO_CONCERNS, run_decomposed, scripted

from orgtree_lang.compile.api import compile_source
from orgtree_lang.decompose.attempts import AttemptLog
from orgtree_lang.decompose.simulate import TESTS_MARKER
from orgtree_lang.decompose.store import ModuleStore
from orgtree_lang.run.registries import default_registry
from orgtree_lang.review.ledger import ConcernLedger
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.skills import SkillContext
from orgtree_lang.runtime.workspace import Workspace

REGISTRY = default_registry(plugins=False)
PARENT = '''use text

pipeline main(report: str) -> str:
    ambiguous classify(report: str) -> label: str:
        """Label the report: bug if it mentions a crash (in any letter case), else question."""
    return label
'''
DESIGN = '''```pipe
examples:
    classify("It crashed on start") -> "bug"
    classify("CRASH when saving") -> "bug"
    classify("How do I log in?") -> "question"
expect label == "bug" or label == "question", "one of the two labels"
```'''
# Misses the capitals: reading it, a reviewer may well accept it.
CASE_SENSITIVE = '''```pipe
use text

pipeline main(report: str) -> str:
    if text.contains(report, "crash"):
        return "bug"
    return "question"
```'''
FIXED = '''```pipe
use text

pipeline main(report: str) -> str:
    if text.contains(text.lower(report), "crash"):
        return "bug"
    return "question"
```
example-2: resolved: the report is lower-cased before the test'''


def author_rules(first_module: str) -> list[dict]:
    return [{"match": {"contains": "First, the design"}, "reply": DESIGN},
            {"match": {"contains": "The design is settled"}, "reply": first_module},
            {"match": {"contains": "Running the module on its examples"}, "reply": FIXED}]


def run(tmp_path, author, reviewer, report: str, parent: str = PARENT, data_driven: bool = True, **settings):
    return run_decomposed(tmp_path, parent, {"report": report}, author, reviewer, file="triage.pipe",
                          data_driven=data_driven, **settings)


def test_the_design_examples_catch_a_wrong_module_before_review(tmp_path):
    author = scripted(tmp_path, "author", author_rules(CASE_SENSITIVE), "author")
    reviewer = scripted(tmp_path, "reviewer", [{"reply": NO_CONCERNS}], "reviewer")
    assert run(tmp_path, author, reviewer, "CRASH on exit") == "bug"
    # design, first module, fixed module; design review, code review
    assert len(author.prompts) == 3 and len(reviewer.prompts) == 2
    assert "The design of `classify`" in reviewer.prompts[0]
    # Both sides read how an expectation names the block's values (a real reviewer asked for `result` here).
    assert "as its signature does (`report`, `label`); `result` is\n# only for pipelines" in reviewer.prompts[0]
    assert "naming them as the block's signature\ndoes (`result` is only for pipelines)" in author.prompts[0]
    assert "pipeline main" not in reviewer.prompts[0].split("## Artifact")[1]
    # The code reviewer sees the fixed module, its examples as tests and what running them gave.
    code_review = reviewer.prompts[1]
    assert "text.lower(report)" in code_review and 'test "example 2 (design)"' in code_review
    assert "simulated 3 example(s) with side effects sealed: 3 passed, 0 failed" in code_review
    assert '# example 1 (design): PASSED: input: report = "It crashed on start"; expected: label = "bug"; got: as ' \
           'expected' in code_review
    # The failure went back to the author as a concern with its evidence.
    sent = author.prompts[2]
    assert 'example-2: input: report = "CRASH when saving"; expected: label = "bug"; got: label = "question"' in sent
    (saved,) = ModuleStore(tmp_path).all()
    phases = [row["phase"] for row in AttemptLog(tmp_path).for_spec(saved.provenance["spec-hash"])]
    assert phases == ["design", "write", "simulate"]


def test_the_simulated_failure_is_a_concern_in_the_ledger_resolved_by_the_fix(tmp_path):
    author = scripted(tmp_path, "author", author_rules(CASE_SENSITIVE), "author")
    reviewer = scripted(tmp_path, "reviewer", [{"reply": NO_CONCERNS}], "reviewer")
    run(tmp_path, author, reviewer, "It crashed")
    (saved,) = ModuleStore(tmp_path).all()
    with ConcernLedger.for_workspace(tmp_path) as ledger:
        [row] = ledger.history(saved.provenance["review-subject"])
    assert (row["concern_id"], row["status"]) == ("example-2", "resolved")
    assert 'got: label = "question"' in row["evidence"] and "lower-cased" in row["rationale"]


def test_the_saved_module_keeps_its_examples_and_pipe_test_checks_them(tmp_path):
    author = scripted(tmp_path, "author", author_rules(CASE_SENSITIVE), "author")
    reviewer = scripted(tmp_path, "reviewer", [{"reply": NO_CONCERNS}], "reviewer")
    run(tmp_path, author, reviewer, "It crashed")
    (saved,) = ModuleStore(tmp_path).all()
    assert TESTS_MARKER in saved.text and "execution evidence" not in saved.text
    assert saved.provenance["examples"] == "3 (0 from the program, 3 from the design, 0 from the reviewer)"
    assert saved.provenance["simulation"].startswith("2 run(s); last: passed 3, failed 0, inconclusive 0")
    result = pipe("test", str(saved.path), cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    assert result.stdout.splitlines()[-1] == "3 tests: 3 passed, 0 failed"
    # Broken by hand, the saved module fails its own examples.
    saved.path.write_text(saved.text.replace("text.lower(report)", "report"))
    broken = pipe("test", str(saved.path), cwd=tmp_path)
    assert broken.returncode == 1 and 'FAIL' in broken.stdout and 'label = "question"' in broken.stdout


def test_the_classic_flow_accepts_the_same_wrong_module_by_reading_it(tmp_path):
    author = scripted(tmp_path, "author", [{"match": {"contains": "Write a module"}, "reply": CASE_SENSITIVE}],
                      "author")
    reviewer = scripted(tmp_path, "reviewer", [{"reply": NO_CONCERNS}], "reviewer")
    assert run(tmp_path, author, reviewer, "CRASH on exit", data_driven=False) == "question"
    assert (len(author.prompts), len(reviewer.prompts)) == (1, 1)


def test_examples_the_program_states_are_simulated_without_a_design_step(tmp_path):
    parent = PARENT.replace('''else question."""''', '''else question."""
        examples:
            classify("CRASH") -> "bug"''')
    author = scripted(tmp_path, "author", [{"match": {"contains": "Write a module"}, "reply": CASE_SENSITIVE},
                                           {"match": {"contains": "Running the module"}, "reply": FIXED}], "author")
    reviewer = scripted(tmp_path, "reviewer", [{"reply": NO_CONCERNS}], "reviewer")
    assert run(tmp_path, author, reviewer, "a CRASH", data_driven=False, parent=parent) == "bug"
    assert 'classify("CRASH") -> "bug"' in author.prompts[0] and "First, the design" not in author.prompts[0]
    assert len(author.prompts) == 2 and len(reviewer.prompts) == 1
    assert 'classify("CRASH") -> "bug"' in reviewer.prompts[0]  # the spec the reviewer sees states it too


# ---- leaf output review ----------------------------------------------------------------------------

WRONG_OUTPUT = json.dumps({"concerns": [{"id": "o1", "severity": "blocking", "spec_basis": "bug if it mentions a crash",
                                         "evidence": "the report mentions a crash but the label is question",
                                         "suggested_fix": "label it bug"}], "summary": "wrong label"})
GOOD_MODULE = FIXED.split("\nexample-2")[0]


def output_reviewed(tmp_path, verdict: str):
    """Models for a run whose block's outputs are reviewed: the author's module misses capitals."""
    author = scripted(tmp_path, "author", [{"match": {"contains": "Write a module"}, "reply": CASE_SENSITIVE}],
                      "author")
    reviewer = scripted(tmp_path, "reviewer", [{"match": {"contains": "Output review of"}, "reply": verdict},
                                               {"reply": NO_CONCERNS}], "reviewer")
    return author, reviewer


def test_an_output_reviewer_that_rejects_the_outputs_fails_the_block_with_its_concern(tmp_path):
    # With no repair allowed the rejection is the block's error (tests/test_decompose_repair.py: with repairs).
    author, reviewer = output_reviewed(tmp_path, WRONG_OUTPUT)
    with pytest.raises(PipeRuntimeError) as failed:
        run(tmp_path, author, reviewer, "CRASH on exit", data_driven=False, review_outputs=True, max_run_repairs=0)
    assert failed.value.kind == "ambiguous" and failed.value.catchable
    assert "a reviewer rejected its outputs for these inputs: o1 (bug if it mentions a crash)" in failed.value.message
    asked = reviewer.prompts[-1]
    assert "Output review of triage.pipe:classify:" in asked and '- label = "question"' in asked
    assert '- report = "CRASH on exit"' in asked and "text.contains" not in asked  # outputs, not code
    with ConcernLedger.for_workspace(tmp_path) as ledger:
        [subject] = ledger.subjects("triage.pipe:classify:")[-1:]
        assert subject.endswith(":outputs")
        assert [row["concern_id"] for row in ledger.open_blocking(subject)] == ["o1"]


def test_accepted_outputs_pass_through(tmp_path):
    author, reviewer = output_reviewed(tmp_path, NO_CONCERNS)
    assert run(tmp_path, author, reviewer, "It crashed", data_driven=False, review_outputs=True) == "bug"
    assert sum("Output review of" in text for text in reviewer.prompts) == 1


def test_pipe_run_with_the_data_driven_settings_journals_every_model_step_and_replays(tmp_path):
    (tmp_path / "triage.pipe").write_text(PARENT)
    (tmp_path / "orgtree.toml").write_text("[decompose]\ndata_driven = true\nreview_outputs = true\n")
    (tmp_path / "author.json").write_text(json.dumps(author_rules(CASE_SENSITIVE)))
    (tmp_path / "reviewer.json").write_text(json.dumps([{"reply": NO_CONCERNS}]))
    env = {"PIPE_NO_PLUGINS": "1"}
    first = pipe("run", "triage.pipe", "-i", "report=CRASH", "--model", "scripted:author.json",
                 "--review-model", "scripted:reviewer.json", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    assert first.stdout == "bug\n"
    (run_id,) = [p.name for p in (tmp_path / ".orgtree" / "runs").iterdir()]
    replay = pipe("replay", run_id, cwd=tmp_path, env=env)
    assert replay.returncode == 0, replay.stderr
    assert "0 outside call(s)" in replay.stderr and "identical" in replay.stderr
    bad = pipe("run", "triage.pipe", "--model", "scripted:author.json", cwd=tmp_path, env=env)
    assert bad.returncode == 2  # the input is missing: settings still parse
    (tmp_path / "orgtree.toml").write_text("[decompose]\ndata_driven = 1\n")
    wrong = pipe("run", "triage.pipe", "-i", "report=x", "--model", "scripted:author.json", cwd=tmp_path, env=env)
    assert wrong.returncode == 2 and "data_driven" in wrong.stderr


def test_a_case_the_design_reviewer_proposes_is_added_and_simulated_as_the_reviewers(tmp_path):
    missing = json.dumps({"concerns": [{"id": "d1", "severity": "blocking", "spec_basis": "else question",
                                        "evidence": "no example of an empty report",
                                        "suggested_fix": 'classify("") -> "question"'}], "summary": "a gap"})
    revised = DESIGN.replace('    classify("How do I log in?") -> "question"\n',
                             '    classify("How do I log in?") -> "question"\n    classify("") -> "question"\n')
    rules = author_rules(FIXED.split("\nexample-2")[0])
    rules.insert(0, {"match": {"contains": "concerns about the design"}, "reply": revised + "\nd1: resolved: added"})
    author = scripted(tmp_path, "author", rules, "author")
    reviewer = scripted(tmp_path, "reviewer", [{"match": {"contains": "The design of"}, "replies": [missing, NO_CONCERNS]},
                                               {"reply": NO_CONCERNS}], "reviewer")
    assert run(tmp_path, author, reviewer, "fine") == "question"
    assert len(reviewer.prompts) == 3 and len(author.prompts) == 3  # two design reviews, one code review
    assert 'classify("") -> "question"' in author.prompts[2]  # the settled design the code is written against
    (saved,) = ModuleStore(tmp_path).all()
    assert saved.provenance["examples"] == "4 (0 from the program, 3 from the design, 1 from the reviewer)"
    assert 'test "example 4 (reviewer)":\n    report = ""\n    label = main(report)' in saved.text
    # Every test checks the design's expectation too.
    assert saved.text.count('expect label == "bug" or label == "question", "one of the two labels"') == 4
    with ConcernLedger.for_workspace(tmp_path) as ledger:
        [row] = ledger.history(saved.provenance["design-review-subject"])
    assert (row["concern_id"], row["status"]) == ("d1", "resolved")


# ---- the simulation's sealed skills ----------------------------------------------------------------

def _spec(uses):
    from orgtree_lang.compile.code import AmbiguousSpec
    from orgtree_lang.syntax import types as t
    from orgtree_lang.syntax.spans import Span

    return AmbiguousSpec("save", "Save the note and say where.", (("note", t.STR),), (("where", t.STR),), uses,
                         "main", Span("p.pipe", 1, 1, 1, 1))


def test_writes_are_dry_runs_and_outside_calls_are_sealed_in_simulation(tmp_path):
    from orgtree_lang.decompose.simulate import Case, simulate, with_tests

    spec = _spec(("fs", "http"))
    module = ('use fs, http\n\npipeline main(note: str) -> str:\n    fs.write("note.txt", note)\n'
              '    if note == "fetch":\n        http.fetch("http://127.0.0.1:9/")\n    return "note.txt"\n')
    cases = [Case({"note": "hi"}, {"where": "note.txt"}, "design"),
             Case({"note": "fetch"}, {"where": "note.txt"}, "design"),
             Case({"note": "x"}, {"where": "elsewhere"}, "reviewer")]
    context = SkillContext(Workspace(tmp_path))
    results = simulate(with_tests(module, spec, cases), "save.pipe", spec, cases, REGISTRY, context)
    assert [r.outcome for r in results] == ["passed", "inconclusive", "failed"]
    assert results[0].calls == ['fs.write(path="note.txt", text="hi")']
    assert "http.fetch is sealed in simulation" in results[1].error
    assert results[2].got == {"where": "note.txt"} and 'expected: where = "elsewhere"' in results[2].evidence(spec)
    assert not (tmp_path / "note.txt").exists()  # nothing was written


def test_a_module_that_fails_on_an_example_is_located_in_the_module(tmp_path):
    from orgtree_lang.decompose.simulate import Case, simulate, with_tests

    spec = _spec(())
    module = 'pipeline main(note: str) -> str:\n    return note[10]\n'
    cases = [Case({"note": "short"}, {"where": "x"}, "spec")]
    [result] = simulate(with_tests(module, spec, cases), "save.pipe", spec, cases, REGISTRY,
                        SkillContext(Workspace(tmp_path)))
    assert result.outcome == "failed" and result.location == "save.pipe:2" and "out of range" in result.error
    assert result.evidence(spec).endswith("got: (no value); error: index 10 is out of range for a str of length 5; "
                                          "at save.pipe:2")


# ---- examples that expect a failure ---------------------------------------------------------------------

def test_a_design_may_expect_a_failure_and_states_it_back_in_the_same_form():
    from orgtree_lang.decompose.design import DESIGN_REQUEST, REVIEW_NOTE, Design, parse_design

    assert '-> fails "unterminated quote"' in DESIGN_REQUEST and "fails" in REVIEW_NOTE
    assert "cannot expect a failure" not in DESIGN_REQUEST + REVIEW_NOTE
    program = compile_source(PARENT, "p.pipe", REGISTRY).program
    spec = program.pipelines["main"].ambiguous[0]
    answer = DESIGN.replace('    classify("How do I', '    classify("") -> fails "empty report"\n    classify("How do I')
    design, problems = parse_design(answer, spec, REGISTRY, PARENT)
    assert problems == []
    assert [e.fails for e in design.examples] == [None, None, "empty report", None]
    assert design.examples[2].outputs == {}
    assert '    classify("") -> fails "empty report"\n' in design.text(spec)
    again, _ = parse_design("```pipe\n" + design.text(spec) + "\n```", spec, REGISTRY, PARENT)
    assert [(e.inputs, e.outputs, e.fails) for e in again.examples] == \
        [(e.inputs, e.outputs, e.fails) for e in design.examples]
    # A failing example and a returning one with the same inputs are two examples, not one.
    returning = dataclasses.replace(design.examples[2], outputs={"label": "question"}, fails=None)
    settled = Design.settled(spec, Design(), Design([design.examples[2], returning], ["design", "design"]))
    assert len(settled.examples) == 2


def test_a_failing_example_is_simulated_against_the_module(tmp_path):
    from orgtree_lang.decompose.simulate import Case, simulate, with_tests

    spec = _spec(())
    refuses = 'pipeline main(note: str) -> str:\n    if note == "":\n        fail "an empty note"\n    return note\n'
    cases = [Case({"note": ""}, {}, "design", "empty note"), Case({"note": "hi"}, {"where": "hi"}, "spec")]
    context = SkillContext(Workspace(tmp_path))
    text = with_tests(refuses, spec, cases)
    assert compile_source(text, "save.pipe", REGISTRY).program.tests  # the saved module's `pipe test` runs it
    assert [r.outcome for r in simulate(text, "save.pipe", spec, cases, REGISTRY, context)] == ["passed", "passed"]
    returns = 'pipeline main(note: str) -> str:\n    return note\n'
    first, second = simulate(with_tests(returns, spec, cases), "save.pipe", spec, cases, REGISTRY, context)
    assert (first.outcome, second.outcome) == ("failed", "passed")
    assert '"empty note" in message' in first.error and '(main returned normally)' in first.error
    assert first.evidence(spec).startswith('input: note = ""; expected: an error whose message contains "empty note"')
    other = refuses.replace("an empty note", "no text")
    [wrong] = simulate(with_tests(other, spec, cases[:1]), "save.pipe", spec, cases[:1], REGISTRY, context)
    assert wrong.outcome == "failed" and 'message = "no text"' in wrong.error


def test_a_case_from_real_inputs_passes_when_the_module_refuses_it_with_fail_and_not_when_it_crashes(tmp_path):
    from orgtree_lang.decompose.simulate import Case, simulate, with_tests

    spec = _spec(())
    refuses = 'pipeline main(note: str) -> str:\n    if note == "?":\n        fail "unknown note: ?"\n    return note\n'
    crashes = 'pipeline main(note: str) -> str:\n    return note[5]\n'
    # A failing input a run repaired the module for (its outputs unknown), and the same input stated by the spec.
    cases = [Case({"note": "?"}, {}, "run"), Case({"note": "?"}, {"where": "?"}, "spec")]
    context = SkillContext(Workspace(tmp_path))
    run_case, spec_case = simulate(with_tests(refuses, spec, cases), "save.pipe", spec, cases, REGISTRY, context)
    # The spec may say to refuse such an input (an unknown unit): a deliberate `fail` is an answer, shown to the
    # code reviewer as a refusal; a stated example still needs its value.
    assert (run_case.outcome, spec_case.outcome) == ("passed", "failed")
    assert "refused them with `fail`" in run_case.evidence(spec) and "unknown note: ?" in run_case.evidence(spec)
    [crash] = simulate(with_tests(crashes, spec, cases[:1]), "save.pipe", spec, cases[:1], REGISTRY, context)
    assert crash.outcome == "failed" and "out of range" in crash.error


# ---- a failing example blocks the save (issue 23 item 10) ------------------------------------------------------

STATED = PARENT.replace('''else question."""''', '''else question."""
        examples:
            classify("It crashed") -> "bug"
            classify("CRASH when saving") -> "bug"''')
CLAIMS_A_FIX = CASE_SENSITIVE + "\nexample-2: resolved: the report is lower-cased now"  # ... but it is not


def test_a_module_that_keeps_failing_an_example_the_program_states_is_not_saved(tmp_path):
    """Simulation says "passed 1, failed 1" three times while the author claims a fix; the reviewer, reading
    the module, raises nothing. The failing example must not end as a concern the reviewer's silence resolved."""
    author = scripted(tmp_path, "author", [{"match": {"contains": "Write a module"}, "reply": CASE_SENSITIVE},
                                           {"reply": CLAIMS_A_FIX}], "author")
    reviewer = scripted(tmp_path, "reviewer", [{"reply": NO_CONCERNS}], "reviewer")
    with pytest.raises(PipeRuntimeError) as failed:
        run(tmp_path, author, reviewer, "It crashed", data_driven=False, parent=STATED)
    assert "example-2" in failed.value.message and 'got: label = "question"' in failed.value.message
    assert ModuleStore(tmp_path).all() == []
    with ConcernLedger.for_workspace(tmp_path) as ledger:
        (subject,) = ledger.subjects("triage.pipe:classify:")
        (row,) = ledger.history(subject)
        events = [(e["event"], e["rationale"]) for e in ledger.events(subject)]
    assert (row["concern_id"], row["status"]) == ("example-2", "open")
    assert not [e for e in events if e[0] == "resolved"], events  # neither the author's word nor the silence


def test_the_author_cannot_reject_an_example_the_program_states(tmp_path):
    rejects = CASE_SENSITIVE + "\nexample-2: rejected: capital letters are not a crash"
    author = scripted(tmp_path, "author", [{"match": {"contains": "Write a module"}, "reply": CASE_SENSITIVE},
                                           {"reply": rejects}], "author")
    reviewer = scripted(tmp_path, "reviewer", [{"reply": NO_CONCERNS}], "reviewer")
    with pytest.raises(PipeRuntimeError, match="example-2"):
        run(tmp_path, author, reviewer, "It crashed", data_driven=False, parent=STATED)
    assert ModuleStore(tmp_path).all() == []
    # It was told why its rejection does not count.
    assert any("the program states this example" in prompt for prompt in author.prompts), author.prompts[-1]


def test_a_failing_example_fixed_in_review_is_resolved_by_the_passing_simulation(tmp_path):
    """Still failing when the review starts, the example is an open concern the reviewer's round does not close;
    the author fixes it in the revision, the simulation passes, and only then is it resolved, with that evidence."""
    author = scripted(tmp_path, "author", [{"match": {"contains": "A reviewer raised these concerns"}, "reply": FIXED},
                                           {"reply": CLAIMS_A_FIX}], "author")
    reviewer = scripted(tmp_path, "reviewer", [{"reply": NO_CONCERNS}], "reviewer")
    assert run(tmp_path, author, reviewer, "a CRASH", data_driven=False, parent=STATED) == "bug"
    (saved,) = ModuleStore(tmp_path).all()
    assert "text.lower(report)" in saved.text
    with ConcernLedger.for_workspace(tmp_path) as ledger:
        (row,) = ledger.history(saved.provenance["review-subject"])
    assert (row["concern_id"], row["status"]) == ("example-2", "resolved")
    assert row["rationale"].startswith("example 2 passed when simulated (run 4)")
    assert len(reviewer.prompts) == 2  # the first round could not accept it; the second, after the fix, did


def test_escalation_cannot_dismiss_a_failing_example_the_program_states(tmp_path):
    author = scripted(tmp_path, "author", [{"match": {"contains": "Write a module"}, "reply": CASE_SENSITIVE},
                                           {"reply": CLAIMS_A_FIX}], "author")
    reviewer = scripted(tmp_path, "reviewer", [{"reply": NO_CONCERNS}], "reviewer")
    asked = []

    def human(question: str) -> str:
        asked.append(question)
        return "example-2: dismiss: capital letters do not matter here"

    with pytest.raises(PipeRuntimeError, match="example-2") as failed:
        run_decomposed(tmp_path, STATED, {"report": "It crashed"}, author, reviewer, file="triage.pipe", human=human)
    assert asked and "still open after escalating to the human node dismissed 0, upheld 1" in failed.value.message
    assert ModuleStore(tmp_path).all() == []
    with ConcernLedger.for_workspace(tmp_path) as ledger:
        (subject,) = ledger.subjects("triage.pipe:classify:")
        (row,) = ledger.history(subject)
    assert row["status"] == "open"
    # The author heard why the dismissal did not count.
    assert any("only a module that passes it settles it" in prompt for prompt in author.prompts)
