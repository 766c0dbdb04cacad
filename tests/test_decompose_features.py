"""The decomposer's reuse of similar modules, "needs research" answers, attempt log, output fitting and prompt budget."""

from __future__ import annotations

import json

import pytest
from cli_testing import pipe as run_pipe
from decompose_testing import GOOD, NO_CONCERNS, run_decomposed, scripted

from orgtree_lang.compile.api import compile_source
from orgtree_lang.decompose.attempts import AttemptLog
from orgtree_lang.decompose.coerce import fit_outputs, model_reshaper
from orgtree_lang.decompose.decomposer import LANGUAGE_NOTES, DecomposeSettings
from orgtree_lang.decompose.prompt import PromptTooLarge, allowed_skills, build_request
from orgtree_lang.decompose.research import recorded_needs
from orgtree_lang.decompose.spec import spec_hash
from orgtree_lang.decompose.store import ModuleStore
from orgtree_lang.models.tokens import count_tokens, set_context_window
from orgtree_lang.runtime.config import ConfigError
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.records import RecordTypes
from orgtree_lang.run.registries import default_registry

REGISTRY = default_registry(plugins=False)


def parent(block: str, doc: str) -> str:
    return f'''use text

pipeline main(report: str) -> str:
    ambiguous {block}(report: str) -> label: str:
        """{doc}"""
    return label
'''


FIRST = parent("classify", "Label the report: bug if it mentions a crash, else question.")
SIMILAR = parent("triage_report", "Label the report: bug if it mentions a crash, else a question.")
OTHER = GOOD.replace('"question"', '"other"')


def run(tmp_path, source: str, author, reviewer, report: str, file: str = "triage.pipe", **settings):
    return run_decomposed(tmp_path, source, {"report": report}, author, reviewer, file=file, **settings)


def write_first(tmp_path) -> None:
    author = scripted(tmp_path, "a0", [{"match": {"contains": "Write a module"}, "reply": GOOD}], "author")
    reviewer = scripted(tmp_path, "r0", [{"reply": NO_CONCERNS}], "reviewer")
    assert run(tmp_path, FIRST, author, reviewer, "crash") == "bug"


def test_a_similar_module_that_the_reviewer_accepts_is_reused_without_writing(tmp_path):
    write_first(tmp_path)
    author = scripted(tmp_path, "a1", [{"reply": OTHER}], "author")
    reviewer = scripted(tmp_path, "r1", [
        {"match": {"contains": "The new step"}, "reply": json.dumps({"accept": True, "reasons": "same rule"})}],
        "reviewer")
    assert run(tmp_path, SIMILAR, author, reviewer, "It crashed", file="other.pipe") == "bug"
    assert author.prompts == [] and len(reviewer.prompts) == 1
    assert "triage_report" in reviewer.prompts[0] and "classify.pipe" in reviewer.prompts[0]
    reused = ModuleStore(tmp_path).path_for("other.pipe", "triage_report")
    provenance = ModuleStore(tmp_path).read(reused).provenance
    assert provenance["reused-from"].endswith("classify.pipe") and "same rule" in provenance["reuse-accepted-by"]
    # Saved under the new block's spec hash: the next run asks nobody.
    reviewer.forget()
    assert run(tmp_path, SIMILAR, author, reviewer, "fine", file="other.pipe") == "question"
    assert author.prompts == [] and reviewer.prompts == []


def test_a_similar_module_the_reviewer_rejects_is_not_reused(tmp_path):
    write_first(tmp_path)
    author = scripted(tmp_path, "a1", [{"match": {"contains": "Write a module"}, "reply": OTHER}], "author")
    reviewer = scripted(tmp_path, "r1", [
        {"match": {"contains": "The new step"}, "reply": json.dumps({"accept": False, "reasons": "wording differs"})},
        {"reply": NO_CONCERNS}], "reviewer")
    assert run(tmp_path, SIMILAR, author, reviewer, "calm", file="other.pipe") == "other"
    assert len(author.prompts) == 1
    # The author was shown the similar module as a reference.
    assert "A saved module for a similar block (classify)" in author.prompts[0]
    assert "reused-from" not in ModuleStore(tmp_path).read(
        ModuleStore(tmp_path).path_for("other.pipe", "triage_report")).provenance


def test_an_unrelated_module_is_not_offered_for_reuse(tmp_path):
    write_first(tmp_path)
    unrelated = parent("translate_text", "Translate the text into French.")
    author = scripted(tmp_path, "a1", [{"match": {"contains": "Write a module"}, "reply": OTHER}], "author")
    reviewer = scripted(tmp_path, "r1", [{"reply": NO_CONCERNS}], "reviewer")
    run(tmp_path, unrelated, author, reviewer, "x", file="other.pipe")
    assert not any("The new step" in call for call in reviewer.prompts)


def test_a_needs_research_answer_is_recorded_and_fails_clearly_with_nothing_saved(tmp_path):
    # With research switched off (max_research = 0) the need fails the block at once.
    answer = '```json\n{"needs_research": {"reasons": ["the ticket API is unknown"], ' \
             '"questions": ["Which endpoint lists tickets?"]}}\n```'
    author = scripted(tmp_path, "a", [{"reply": answer}], "author")
    reviewer = scripted(tmp_path, "r", [{"reply": NO_CONCERNS}], "reviewer")
    with pytest.raises(PipeRuntimeError) as err:
        run(tmp_path, FIRST, author, reviewer, "crash", max_research=0)
    assert "needs research" in err.value.message and "the ticket API is unknown" in err.value.message
    assert "Which endpoint lists tickets?" in err.value.hint and not err.value.catchable
    (need,) = recorded_needs(tmp_path)
    assert need["block"] == "classify" and need["questions"] == ["Which endpoint lists tickets?"]
    assert ModuleStore(tmp_path).all() == [] and reviewer.prompts == []


def test_every_author_answer_is_in_the_attempt_log(tmp_path):
    wrong = "```pipe\npipeline main(report: str) -> int:\n    return 1\n```"
    author = scripted(tmp_path, "a", [{"match": {"contains": "not accepted yet"}, "reply": GOOD},
                                      {"match": {"contains": "Write a module"}, "reply": wrong}], "author")
    reviewer = scripted(tmp_path, "r", [{"reply": NO_CONCERNS}], "reviewer")
    run(tmp_path, FIRST, author, reviewer, "crash")
    spec = compile_source(FIRST, "triage.pipe", REGISTRY).program.pipelines["main"].ambiguous[0]
    log = AttemptLog(tmp_path)
    first, second = log.for_spec(spec_hash(spec))
    log.close()
    assert (first["attempt"], first["accepted"], second["attempt"], second["accepted"]) == (1, False, 2, True)
    assert first["answer"] == wrong and any("-> int" in p or "int" in p for p in first["problems"])


def test_max_repairs_from_orgtree_toml_limits_the_attempts(tmp_path):
    (tmp_path / "orgtree.toml").write_text("[decompose]\nmax_repairs = 0\n")
    settings = DecomposeSettings.from_config(tmp_path / "orgtree.toml")
    assert settings.max_repairs == 0
    wrong = "```pipe\npipeline main(report: str) -> int:\n    return 1\n```"
    author = scripted(tmp_path, "a", [{"reply": wrong}], "author")
    with pytest.raises(PipeRuntimeError, match="after 1 attempts"):
        run(tmp_path, FIRST, author, scripted(tmp_path, "r", [{"reply": NO_CONCERNS}], "reviewer"), "x",
            max_repairs=settings.max_repairs)
    assert len(author.prompts) == 1
    (tmp_path / "orgtree.toml").write_text('[decompose]\nmax_repairs = "three"\n')
    with pytest.raises(ConfigError, match="max_repairs must be a whole number"):
        DecomposeSettings.from_config(tmp_path / "orgtree.toml")


def test_a_request_that_cannot_fit_the_context_share_is_a_clear_error(tmp_path):
    author = scripted(tmp_path, "tiny", [{"reply": GOOD}], "author")
    set_context_window(author.name, 400)  # the language card alone is larger than the whole window
    with pytest.raises(PipeRuntimeError, match="do not fit in the model's 400-token context window"):
        run(tmp_path, FIRST, author, scripted(tmp_path, "r", [{"reply": NO_CONCERNS}], "reviewer"), "x")
    assert author.prompts == [] and ModuleStore(tmp_path).all() == []


def test_the_request_shrinks_to_fit_and_never_exceeds_its_budget():
    source = FIRST
    spec = compile_source(source, "triage.pipe", REGISTRY).program.pipelines["main"].ambiguous[0]
    big = {"report": "word " * 200_000}
    full = build_request(spec, big, REGISTRY, "triage.pipe", source, [("x", GOOD)], count=count_tokens,
                         budget=100_000, fixed=LANGUAGE_NOTES)
    assert full.level == 0 and "A saved module for a similar block (x)" in full.text
    notes = count_tokens(LANGUAGE_NOTES)  # the system prompt is counted on its own, outside the request's budget
    levels = []
    for budget in (800, 500, 300, 200):
        request = build_request(spec, big, REGISTRY, "triage.pipe", source, [("x", GOOD)], count=count_tokens,
                                budget=budget, fixed=LANGUAGE_NOTES)
        assert request.tokens == count_tokens(request.text) <= budget
        assert request.fixed_tokens == notes
        levels.append(request.level)
    assert levels == sorted(levels) and levels[-1] > 0  # smaller budgets cut more
    with pytest.raises(PromptTooLarge, match="even in its shortest form"):
        build_request(spec, big, REGISTRY, "triage.pipe", source, [], count=count_tokens, budget=60,
                      fixed=LANGUAGE_NOTES)


def test_the_language_card_and_the_requests_share_must_fit_the_window_together():
    spec = compile_source(FIRST, "triage.pipe", REGISTRY).program.pipelines["main"].ambiguous[0]
    notes = count_tokens(LANGUAGE_NOTES)
    fits = build_request(spec, {"report": "x"}, REGISTRY, "triage.pipe", FIRST, [], count=count_tokens,
                         budget=1000, fixed=LANGUAGE_NOTES, window=notes + 1000)
    assert fits.tokens <= 1000
    with pytest.raises(PromptTooLarge, match="language card"):
        build_request(spec, {"report": "x"}, REGISTRY, "triage.pipe", FIRST, [], count=count_tokens,
                      budget=1000, fixed=LANGUAGE_NOTES, window=notes + 999)


def test_allowed_skills_are_ranked_by_relevance_to_the_block():
    source = '''use text
use lists

pipeline main(line: str) -> list[str]:
    ambiguous fields(line: str) -> parts: list[str]:
        """Split the line into parts at each comma."""
    return parts
'''
    spec = compile_source(source, "f.pipe", REGISTRY).program.pipelines["main"].ambiguous[0]
    ranked = [skill.name for skill in allowed_skills(spec, REGISTRY)]
    assert ranked[0] == "text.split"
    assert set(ranked) == {n for n in REGISTRY.names() if n.startswith(("text.", "lists."))}


def record_types(source: str) -> RecordTypes:
    return RecordTypes(compile_source(source, "r.pipe", REGISTRY).program.records)


def test_outputs_are_fitted_by_exact_coercion_before_any_model_is_asked(tmp_path):
    source = '''record Item:
    name: str
    size: int

pipeline main() -> int:
    ambiguous pick() -> count: int, ratio: float, item: Item, flags: list[bool]:
        """Pick."""
    return count
'''
    program = compile_source(source, "r.pipe", REGISTRY).program
    spec = program.pipelines["main"].ambiguous[0]
    reshaper_calls = []
    fitted = fit_outputs({"count": " 42 ", "ratio": "2.5", "item": {"name": "a", "size": "7"}, "flags": ["true", False]},
                         spec, RecordTypes(program.records), lambda v, t: reshaper_calls.append(v))
    assert fitted["count"] == 42 and fitted["ratio"] == 2.5
    assert fitted["flags"] == [True, False] and fitted["item"].fields == {"name": "a", "size": 7}
    assert reshaper_calls == []


def test_a_value_no_rule_fits_gets_one_model_reshape_then_a_clear_error(tmp_path):
    source = '''pipeline main() -> int:
    ambiguous count_words() -> total: int:
        """Count."""
    return total
'''
    program = compile_source(source, "r.pipe", REGISTRY).program
    spec, records = program.pipelines["main"].ambiguous[0], RecordTypes(program.records)
    model = scripted(tmp_path, "shaper", [{"match": {"contains": "twelve"}, "reply": "```json\n12\n```"},
                                          {"reply": "not json"}], "author")
    assert fit_outputs({"total": "twelve"}, spec, records, model_reshaper(model, records, "c1")) == {"total": 12}
    assert len(model.prompts) == 1 and "Type: int" in model.prompts[0]
    with pytest.raises(PipeRuntimeError) as err:
        fit_outputs({"total": "lots"}, spec, records, model_reshaper(model, records, "c2"))
    assert "output `total` of ambiguous block count_words must be int" in err.value.message
    assert '"lots"' in err.value.message and len(model.prompts) == 2


NARROWED = '''use text, lists

pipeline main(report: str) -> str:
    ambiguous classify(report: str) -> label: str:
        """Label the report: bug if it mentions a crash, else question."""
        use text.lower, text.contains
    return label
'''


def test_a_block_narrows_the_skills_its_module_may_use(tmp_path):
    program = compile_source(NARROWED, "n.pipe", REGISTRY).program
    spec = program.pipelines["main"].ambiguous[0]
    assert spec.uses == ("text.lower", "text.contains")
    assert [s.name for s in allowed_skills(spec, REGISTRY)] == ["text.contains", "text.lower"]
    wide = scripted(tmp_path, "a", [{"match": {"contains": "not accepted yet"}, "reply": GOOD.replace(
        "use text", "use text.lower, text.contains")}, {"match": {"contains": "Write a module"}, "reply": GOOD}],
        "author")
    reviewer = scripted(tmp_path, "r", [{"reply": NO_CONCERNS}], "reviewer")
    assert run(tmp_path, NARROWED, wide, reviewer, "crash", file="n.pipe") == "bug"
    # The first answer's `use text` is wider than the block allows: sent back, then accepted narrowed.
    assert len(wide.prompts) == 2 and "`use text` is not allowed" in wide.prompts[1]
    assert "text.split" not in wide.prompts[0] and "text.contains(" in wide.prompts[0]


def test_block_use_lines_are_checked_and_formatted():
    from orgtree_lang.syntax.diagnostics import CompileError
    from orgtree_lang.syntax.formatter import format_source

    assert format_source(NARROWED) == NARROWED
    bad = NARROWED.replace("use text.lower, text.contains", "use fs, text.nope").replace(
        "pipeline main(report: str) -> str:\n", "pipeline main(report: str) -> str:\n    use text\n")
    with pytest.raises(CompileError) as err:
        compile_source(bad, "bad.pipe", REGISTRY)
    messages = [d.message for d in err.value.diagnostics]
    assert any("`use` inside a pipeline is allowed only in an ambiguous block" in m for m in messages)
    assert any("cannot use `fs`: a block may only narrow the module's skills" in m for m in messages)
    assert any("`use text.nope` in ambiguous block `classify` names no installed skill" in m for m in messages)


def pipe_in(folder, *args):
    return run_pipe(*args, cwd=folder, env={"PIPE_NO_PLUGINS": "1"})


def test_model_answers_are_journaled_so_resume_asks_only_what_was_not_answered(tmp_path):
    (tmp_path / "triage.pipe").write_text(FIRST)
    (tmp_path / "author.json").write_text(json.dumps([{"match": {"contains": "Write a module"}, "reply": GOOD}]))
    (tmp_path / "broken_reviewer.json").write_text(json.dumps([{"match": {"contains": "never matches"},
                                                                "reply": NO_CONCERNS}]))
    first = pipe_in(tmp_path, "run", "triage.pipe", "-i", "report=crash", "--json", "--model", "scripted:author.json",
                    "--review-model", "scripted:broken_reviewer.json")
    assert first.returncode == 70, first.stderr
    assert "has no response for this reviewer request" in first.stderr
    run_id = json.loads(first.stdout)["run_id"]
    # The author may not be asked again: its answer is in the journal. A reviewer that answers is given now.
    (tmp_path / "author.json").write_text(json.dumps([{"match": {"contains": "never matches"}, "reply": OTHER}]))
    (tmp_path / "reviewer.json").write_text(json.dumps([{"reply": NO_CONCERNS}]))
    resumed = pipe_in(tmp_path, "resume", run_id, "--json", "--model", "scripted:author.json",
                      "--review-model", "scripted:reviewer.json")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["output"] == "bug"
    replayed = pipe_in(tmp_path, "replay", run_id)
    assert replayed.returncode == 0, replayed.stderr
    assert "identical" in replayed.stdout + replayed.stderr


def test_a_saved_module_is_reused_by_pipe_run_with_no_model_configured(tmp_path):
    (tmp_path / "triage.pipe").write_text(FIRST)
    (tmp_path / "author.json").write_text(json.dumps([{"match": {"contains": "Write a module"}, "reply": GOOD}]))
    (tmp_path / "reviewer.json").write_text(json.dumps([{"reply": NO_CONCERNS}]))
    without = pipe_in(tmp_path, "run", "triage.pipe", "-i", "report=crash")
    assert without.returncode == 70 and "no module is saved for it and no model is configured" in without.stderr
    written = pipe_in(tmp_path, "run", "triage.pipe", "-i", "report=crash", "--model", "scripted:author.json",
                      "--review-model", "scripted:reviewer.json")
    assert written.returncode == 0 and written.stdout == "bug\n", written.stderr
    reused = pipe_in(tmp_path, "run", "triage.pipe", "-i", "report=all fine")
    assert reused.returncode == 0 and reused.stdout == "question\n", reused.stderr
    assert "reused" in reused.stderr and "model answers come from" not in reused.stderr


def nested_module(inner: str) -> str:
    return f'''```pipe
use text

pipeline main(report: str) -> str:
    ambiguous {inner}(report: str) -> label: str:
        """Label the report, one level further down."""
    return label
```'''


def test_decomposition_recurses_until_the_depth_limit_then_fails_clearly(tmp_path):
    author = scripted(tmp_path, "a", [
        {"match": {"contains": "step `classify`"}, "reply": nested_module("level_one")},
        {"match": {"contains": "step `level_one`"}, "reply": nested_module("level_two")},
        {"match": {"contains": "step `level_two`"}, "reply": GOOD},
    ], "author")
    reviewer = scripted(tmp_path, "r", [{"reply": NO_CONCERNS}], "reviewer")
    with pytest.raises(PipeRuntimeError) as err:
        run(tmp_path, FIRST, author, reviewer, "crash", max_depth=2)
    assert "ambiguous block `level_two` is 2 generated modules deep, the limit is 2" in err.value.message
    assert not err.value.catchable
    assert [call.split("`")[1] for call in author.prompts] == ["classify", "level_one"]
    # With one more level allowed, the same answers resolve all three blocks.
    assert run(tmp_path, FIRST, author, reviewer, "crash", max_depth=3) == "bug"
    assert {m.provenance["block"] for m in ModuleStore(tmp_path).all()} == {"classify", "level_one", "level_two"}
