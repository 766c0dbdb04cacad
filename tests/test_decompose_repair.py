"""Repair on real data (docs/decomposer.md, "Repair on real data"): a generated module that fails at run time goes
back to its author with the failing case, is revised (or split), reviewed and simulated, and the block runs again."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from cli_testing import pipe as run_pipe
from decompose_testing import GOOD, NO_CONCERNS, PRICE_FIRST as FIRST, PRICE_FIXED as FIXED, run_decomposed, scripted
from orgtree_lang.decompose.decomposer import DecomposeSettings
from orgtree_lang.decompose.output_review import sampled
from orgtree_lang.decompose.versions import ModuleVersions
from orgtree_lang.pool.store import PoolStore
from orgtree_lang.run.registries import default_registry, workspace_registry
from orgtree_lang.runtime.config import ConfigError
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.skills import skill

PRICES = '''use text

pipeline main(items: list[str]) -> list[int]:
    amounts = []
    for item in items:
        ambiguous cents(item: str) -> amount: int:
            """The amount in cents of a price written with a dot, like "3.50"; a price may have no cents part."""
        amounts = amounts + [amount]
    return amounts
'''
# The repair as a split: the part that failed becomes a nested block of its own.
SPLIT = '''```pipe
use text

pipeline main(item: str) -> int:
    parts = text.split(item, ".")
    ambiguous cents_part(parts: list[str]) -> extra: int:
        """The cents after the dot: the second of `parts` as a whole number, or 0 when there is only one part."""
    return int(parts[0]) * 100 + extra
```'''
CENTS_PART = '''```pipe
pipeline main(parts: list[str]) -> int:
    if len(parts) < 2:
        return 0
    return int(parts[1])
```'''
ITEMS = ["3.50", "1.25", "12", "4.00"]
REPAIR = "This is a repair"


def models(tmp_path: Path, author_rules: list[dict], reviewer_rules: list[dict] | None = None):
    return (scripted(tmp_path, "author", author_rules, "author"),
            scripted(tmp_path, "reviewer", reviewer_rules or [{"reply": NO_CONCERNS}], "reviewer"))


def history(tmp_path: Path, block: str = "cents", parent: str = "prog"):
    with ModuleVersions(tmp_path) as versions:
        return versions.history(tmp_path / ".orgtree" / "modules" / parent / f"{block}.pipe")


def test_a_module_failing_on_its_third_input_is_repaired_and_the_run_goes_on(tmp_path):
    author, reviewer = models(tmp_path, [{"match": {"contains": REPAIR}, "reply": FIXED}, {"reply": FIRST}])
    assert run_decomposed(tmp_path, PRICES, {"items": ITEMS}, author, reviewer, review_outputs="first",
                          review_sample=0) == [350, 125, 1200, 400]
    (repair_request,) = author.asked(REPAIR)
    asked = repair_request[0][-1].content
    # The failing inputs, the error (at the module's own line), the module as it was, the examples so far.
    assert '- item = "12"' in asked and "index 1 is out of range for a list of length 1 (at line 5" in asked
    assert "return int(parts[0]) * 100 + int(parts[1])" in asked
    assert '- item = "12" -> runs without an error and meets every expectation (run)' in asked
    versions = history(tmp_path)
    assert [v.version for v in versions] == [1, 2] and versions[0].reason == "written"
    assert versions[1].reason.startswith("error: index 1 is out of range") and versions[1].previous == \
        versions[0].body_hash
    saved = (tmp_path / ".orgtree" / "modules" / "prog" / "cents.pipe").read_text()
    # The failing case is a saved example of the new version, which the run's simulation ran before the review.
    assert 'test "example 1 (run)":\n    item = "12"' in saved and "# orgtree: repaired = version 2 after" in saved
    assert "simulation = 1 run(s); last: passed 1" in saved
    # Outputs reviewed on the first run of each version only (no sample): version 1 at "3.50", version 2 at "12".
    reviewed = [p for p in reviewer.prompts if p.startswith("Output review of")]
    assert len(reviewed) == 2 and '- item = "3.50"' in reviewed[0] and '- item = "12"' in reviewed[1]


def test_a_repair_may_split_the_failing_part_into_a_nested_block(tmp_path):
    author, reviewer = models(tmp_path, [{"match": {"contains": "step `cents_part`"}, "reply": CENTS_PART},
                                         {"match": {"contains": REPAIR}, "reply": SPLIT}, {"reply": FIRST}])
    assert run_decomposed(tmp_path, PRICES, {"items": ITEMS}, author, reviewer) == [350, 125, 1200, 400]
    nested = tmp_path / ".orgtree" / "modules" / "cents" / "cents_part.pipe"
    assert nested.is_file() and "return int(parts[1])" in nested.read_text()
    assert "ambiguous cents_part" in (tmp_path / ".orgtree" / "modules" / "prog" / "cents.pipe").read_text()


def test_a_module_still_failing_when_repairs_run_out_goes_to_the_parent_blocks_author(tmp_path):
    # The outer block's module leaves the price to a nested block, whose module keeps failing on "12"; with one
    # repair allowed, the failure goes up to the outer module's author, who writes it without the nested block.
    outer = '''```pipe
use text

pipeline main(item: str) -> int:
    ambiguous parse(item: str) -> value: int:
        """The amount in cents of a price like "3.50" or "12"."""
    return value
```'''
    nested_fixed_badly = FIRST.replace("int(parts[1])", "int(parts[1]) + 0")
    author, reviewer = models(tmp_path, [
        {"match": {"contains": [REPAIR, "step `cents`"]}, "reply": FIXED},
        {"match": {"contains": [REPAIR, "step `parse`"]}, "reply": nested_fixed_badly},
        {"match": {"contains": "step `parse`"}, "reply": FIRST},
        {"reply": outer}])
    assert run_decomposed(tmp_path, PRICES, {"items": ITEMS}, author, reviewer, max_run_repairs=1) == \
        [350, 125, 1200, 400]
    (to_parent,) = author.asked("step `cents`")[1:]
    asked = to_parent[0][-1].content
    assert REPAIR in asked and "still fails after 1 repair(s)" in asked
    # The nested module's repair could not pass the failing input: its simulation said so, and it was not saved.
    assert any("index 1 is out of range" in p for p in author.prompts if "Running the module on its examples" in p)
    assert [v.version for v in history(tmp_path)] == [1, 2]


def test_at_the_program_the_failure_goes_to_a_person_who_may_guide_one_more_repair(tmp_path):
    author, reviewer = models(tmp_path, [{"match": {"contains": "a missing cents part counts as 0"}, "reply": FIXED},
                                         {"reply": FIRST}])
    asked: list[str] = []

    def person(question: str) -> str:
        asked.append(question)
        return "retry: a missing cents part counts as 0"

    assert run_decomposed(tmp_path, PRICES, {"items": ITEMS}, author, reviewer, max_run_repairs=0,
                          human=person) == [350, 125, 1200, 400]
    assert len(asked) == 1 and "still fails on real data after 0 repair(s)" in asked[0] and '"12"' in asked[0]


def test_a_person_who_says_fail_ends_the_run_with_the_modules_error(tmp_path):
    author, reviewer = models(tmp_path, [{"reply": FIRST}])
    with pytest.raises(PipeRuntimeError) as failed:
        run_decomposed(tmp_path, PRICES, {"items": ITEMS}, author, reviewer, max_run_repairs=0,
                       human=lambda question: "fail")
    assert "index 1 is out of range" in failed.value.message and not author.asked(REPAIR)


def test_an_output_review_that_rejects_the_outputs_triggers_a_repair(tmp_path):
    triage = '''use text

pipeline main(report: str) -> str:
    ambiguous classify(report: str) -> label: str:
        """Label the report: bug if it mentions a crash (in any case), else question."""
    return label
'''
    case_sensitive = GOOD.replace("text.lower(report)", "report")
    rejected = json.dumps({"concerns": [{"id": "o1", "severity": "blocking", "spec_basis": "bug if it mentions a crash",
                                         "evidence": "the report says CRASH but the label is question",
                                         "suggested_fix": "match crash in any case"}], "summary": "wrong label"})
    author, reviewer = models(tmp_path, [{"match": {"contains": REPAIR}, "reply": GOOD}, {"reply": case_sensitive}],
                              [{"match": {"contains": "Output review of"}, "replies": [rejected, NO_CONCERNS]},
                               {"reply": NO_CONCERNS}])
    assert run_decomposed(tmp_path, triage, {"report": "CRASH on exit"}, author, reviewer, file="triage.pipe",
                          review_outputs="first") == "bug"
    (request,) = author.asked(REPAIR)
    assert "a reviewer rejected its outputs for these inputs: o1 (bug if it mentions a crash)" in \
        request[0][-1].content and '- label = "question"' in request[0][-1].content
    assert [v.version for v in history(tmp_path, "classify", "triage")] == [1, 2]


@skill("demo.ratio")
def ratio(a: int, b: int) -> int:
    """How many times b goes into a."""
    return a // b  # crashes (ZeroDivisionError) for b = 0: the bug to report


def demo_registry(tmp_path: Path):
    base = default_registry(plugins=False)
    base.register(ratio)
    return workspace_registry(tmp_path, base=base, plugins=False)


SHARES = '''use demo

pipeline main(total: int, people: int) -> int:
    ambiguous share(total: int, people: int) -> each: int:
        """How much each person gets when `total` is split evenly between `people`; nobody (0 people) gets 0."""
    return each
'''
USES_RATIO = "```pipe\nuse demo\n\npipeline main(total: int, people: int) -> int:\n    return demo.ratio(total, people)\n```"
GUARDED = ("```pipe\nuse demo\n\npipeline main(total: int, people: int) -> int:\n    if people == 0:\n        return 0\n"
           "    return demo.ratio(total, people)\n```")


def test_a_skill_that_crashes_gets_a_bug_report_filed_for_the_pools_review(tmp_path):
    author, reviewer = models(tmp_path, [{"match": {"contains": REPAIR}, "reply": GUARDED}, {"reply": USES_RATIO}])
    assert run_decomposed(tmp_path, SHARES, {"total": 10, "people": 0}, author, reviewer,
                          registry=demo_registry(tmp_path)) == 0
    store = PoolStore.for_workspace(tmp_path)
    try:
        (bug,) = store.bugs("demo.ratio")
    finally:
        store.close()
    assert bug.status == "open" and "ZeroDivisionError" in bug.observed
    assert "block `share`" in bug.use_case and bug.reporter_conversation.startswith("run:")


def test_a_repair_author_who_blames_a_skill_files_a_bug_report(tmp_path):
    blames = GUARDED + "\nblame: demo.ratio: it crashes for 0 instead of failing with a message"
    author, reviewer = models(tmp_path, [{"match": {"contains": REPAIR}, "reply": blames}, {"reply": USES_RATIO}])
    run_decomposed(tmp_path, SHARES, {"total": 10, "people": 0}, author, reviewer, registry=demo_registry(tmp_path))
    store = PoolStore.for_workspace(tmp_path)
    try:
        observed = sorted(b.observed for b in store.bugs("demo.ratio"))
    finally:
        store.close()
    # One from the crash itself, one from the author who read the evidence.
    assert len(observed) == 2 and "it crashes for 0 instead of failing with a message" in observed


def test_with_no_model_a_failing_module_fails_the_run_as_before(tmp_path):
    author, reviewer = models(tmp_path, [{"reply": FIRST}])
    run_decomposed(tmp_path / "a", PRICES, {"items": ["3.50"]}, author, reviewer)
    with pytest.raises(PipeRuntimeError) as failed:
        run_decomposed(tmp_path / "a", PRICES, {"items": ITEMS}, None, None)
    assert "index 1 is out of range" in failed.value.message and len(history(tmp_path / "a")) == 1


def test_review_settings_are_read_and_checked(tmp_path):
    (tmp_path / "orgtree.toml").write_text('[decompose]\nreview_outputs = "all"\nreview_sample = 0.5\n'
                                           "max_run_repairs = 4\n")
    settings = DecomposeSettings.from_config(tmp_path / "orgtree.toml")
    assert (settings.review_outputs, settings.review_sample, settings.max_run_repairs) == ("all", 0.5, 4)
    assert DecomposeSettings().review_outputs == "first" and DecomposeSettings().max_run_repairs == 2
    (tmp_path / "orgtree.toml").write_text("[decompose]\nreview_outputs = true\n")
    assert DecomposeSettings.from_config(tmp_path / "orgtree.toml").review_outputs == "all"
    (tmp_path / "orgtree.toml").write_text('[decompose]\nreview_outputs = "sometimes"\n')
    with pytest.raises(ConfigError, match="review_outputs must be one of 'off', 'first', 'all'"):
        DecomposeSettings.from_config(tmp_path / "orgtree.toml")
    (tmp_path / "orgtree.toml").write_text("[decompose]\nreview_sample = 2\n")
    with pytest.raises(ConfigError, match="review_sample must be a share from 0 to 1"):
        DecomposeSettings.from_config(tmp_path / "orgtree.toml")


def test_the_review_sample_is_drawn_per_block_reach_and_the_same_each_time():
    nodes = [f"run1/main/cents@{i}" for i in range(400)]
    drawn = [sampled(node, 0.1) for node in nodes]
    assert drawn == [sampled(node, 0.1) for node in nodes]
    assert 20 <= sum(drawn) <= 60  # about a tenth
    assert not any(sampled(node, 0) for node in nodes) and all(sampled(node, 1) for node in nodes)


def test_pipe_modules_show_history_lists_each_version_with_its_reason_and_diff(tmp_path):
    author, reviewer = models(tmp_path, [{"match": {"contains": REPAIR}, "reply": FIXED}, {"reply": FIRST}])
    run_decomposed(tmp_path, PRICES, {"items": ITEMS}, author, reviewer)
    shown = run_pipe("modules", "show", "cents", "--history", "--workspace", str(tmp_path), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "# versions (2)" in out and "# version 1 " in out and "written" in out
    assert "# version 2 " in out and "error: index 1 is out of range" in out
    assert "1 from real inputs a run failed on" in out and "#   +    if len(parts) == 1:" in out


def test_later_runs_are_sampled_and_a_sampled_review_that_cannot_be_asked_is_skipped(tmp_path):
    author, reviewer = models(tmp_path, [{"reply": FIXED}])
    run_decomposed(tmp_path, PRICES, {"items": ["3.50"]}, author, reviewer, review_outputs="first")
    assert sum(p.startswith("Output review of") for p in reviewer.prompts) == 1  # the first run
    # Every later run drawn (review_sample = 1): this reviewer answers code reviews only, so each spot check fails
    # and is skipped.
    picky = scripted(tmp_path, "picky", [{"match": {"contains": "Review round"}, "reply": NO_CONCERNS}], "reviewer")
    assert run_decomposed(tmp_path, PRICES, {"items": ["4.00", "12"]}, author, picky, review_outputs="first",
                          review_sample=1) == [400, 1200]
    assert len(picky.prompts) == 2 and all(p.startswith("Output review of") for p in picky.prompts)
    # A review the settings ask for is no spot check: its failure is the block's.
    with pytest.raises(PipeRuntimeError, match="no response for this reviewer request"):
        run_decomposed(tmp_path, PRICES, {"items": ["4.00"]}, author, picky, review_outputs="all")


def test_the_repair_example_runs_offline_with_its_scripted_models(tmp_path):
    root = Path(__file__).resolve().parent.parent
    done = run_pipe("run", "examples/repair_prices.pipe", "--workspace", str(tmp_path), "--model",
                    "scripted:examples/models/prices_author.yaml", "--review-model",
                    "scripted:examples/models/prices_reviewer.yaml", cwd=root,
                    env={"PIPE_NO_PLUGINS": "1", "PIPE_MODEL": None})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "2075\n"  # 350 + 125 + 1200 + 400
    assert "main/cents@7: repairing cents.pipe (error: index 1 is out of range" in done.stderr
    assert "repaired: version 2 of cents.pipe; running the block again from its inputs" in done.stderr
    assert [v.version for v in history(tmp_path, parent="repair_prices")] == [1, 2]


def test_outputs_that_fail_the_blocks_expectation_are_reviewed_and_repaired(tmp_path):
    labelled = '''use text

pipeline main(report: str) -> str:
    ambiguous classify(report: str) -> label: str:
        """Label the report: bug if it mentions a crash (in any case), else question."""
        expect label == "bug" or label == "question", "one of the two labels"
    return label
'''
    capitalised = GOOD.replace('return "bug"', 'return "Bug"')
    author, reviewer = models(tmp_path, [{"match": {"contains": REPAIR}, "reply": GOOD}, {"reply": capitalised}])
    # Output reviews: the failing run (the first of version 1, and one that fails an expectation), then the first run
    # of version 2.
    assert run_decomposed(tmp_path, labelled, {"report": "it crashed"}, author, reviewer, file="triage.pipe",
                          review_outputs="first", review_sample=0) == "bug"
    (request,) = author.asked(REPAIR)
    asked = request[0][-1].content
    assert "its outputs do not meet an expectation" in asked and 'label == "bug" or label == "question"' in asked
    assert '- label = "Bug"' in asked
    outputs_reviews = [p for p in reviewer.prompts if p.startswith("Output review of")]
    assert len(outputs_reviews) == 2 and '- label = "Bug"' in outputs_reviews[0]
    saved = (tmp_path / ".orgtree" / "modules" / "triage" / "classify.pipe").read_text()
    # The failing input is an example of the new version, checked against the block's expectation.
    assert 'test "example 1 (run)":\n    report = "it crashed"' in saved
    assert 'expect label == "bug" or label == "question", "one of the two labels"' in saved


# ---- parallel reaches of one block: one repair at a time -------------------------------------------------------

GATHERED = threading.Barrier(2)


@skill("gate.both", slow=True)
def both_here() -> bool:
    """Waits until two callers are here (the two parallel reaches run the first module together)."""
    GATHERED.wait(timeout=60)
    return True


PARALLEL_PRICES = '''use text, gate

pipeline main(items: list[str]) -> list[int]:
    amounts = for item in items parallel:
        ambiguous cents(item: str) -> amount: int:
            """The amount in cents of a price written with a dot, like "3.50"; a price may have no cents part."""
        amount
    return amounts
'''
# Both reaches run this one together, and both fail on it (neither price has a dot).
GATED_FIRST = FIRST.replace("    parts = text.split", "    gate.both()\n    parts = text.split").replace(
    "use text", "use text, gate")


def test_two_parallel_reaches_failing_on_one_module_make_one_repair_and_the_second_runs_on_it(tmp_path):
    from orgtree_lang.compile.api import compile_source
    from orgtree_lang.decompose.decomposer import Decomposer
    from orgtree_lang.run.runner import RunOptions, run_program

    GATHERED.reset()
    author, reviewer = models(tmp_path, [{"match": {"contains": REPAIR}, "reply": FIXED}, {"reply": GATED_FIRST}])
    registry = default_registry(plugins=False)
    registry.register(both_here)
    (tmp_path / "prog.pipe").write_text(PARALLEL_PRICES)
    decomposer = Decomposer(author=author, reviewer=reviewer, registry=registry, workspace=tmp_path,
                            parent_file="prog.pipe", parent_source=PARALLEL_PRICES,
                            settings=DecomposeSettings(protocol=False, review_outputs="off"))
    options = RunOptions(printer=lambda line: None, durable=True, durability="process", executor="threads:4",
                         decomposer=decomposer, inputs={"items": ["12", "7"]})
    machine = run_program(compile_source(PARALLEL_PRICES, "prog.pipe", registry).program, tmp_path, registry,
                          options, source=PARALLEL_PRICES, program_path=tmp_path / "prog.pipe")
    assert machine.state.result == [1200, 700]
    # One module written, one repair asked for: the reach that did not repair waited and ran the revision.
    assert len(author.asked(REPAIR)) == 1 and len(author.prompts) == 2
    assert [v.version for v in history(tmp_path)] == [1, 2]
    assert decomposer.repairs == {next(iter(decomposer.repairs)): 1}


GATE_SKILL = '''import threading

from orgtree_lang.runtime.skills import skill

GATHERED = threading.Barrier(2)


@skill("gate.both", slow=True)
def both() -> bool:
    """Waits until two callers are here (the two parallel reaches run the first module together)."""
    GATHERED.wait(timeout=60)
    return True
'''


def test_parallel_reaches_sharing_one_repair_replay_with_no_outside_call(tmp_path):
    import os

    (tmp_path / "skills").mkdir()
    (tmp_path / "skills" / "gate.py").write_text(GATE_SKILL)
    (tmp_path / "prog.pipe").write_text(PARALLEL_PRICES)
    (tmp_path / "orgtree.toml").write_text("[decompose]\nreview_outputs = \"off\"\nprotocol = false\n")
    (tmp_path / "author.json").write_text(json.dumps([{"match": {"contains": REPAIR}, "reply": FIXED},
                                                      {"reply": GATED_FIRST}]))
    (tmp_path / "reviewer.json").write_text(json.dumps([{"reply": NO_CONCERNS}]))
    env = {"PIPE_NO_PLUGINS": "1", "PIPE_MODEL": None}
    first = run_pipe("run", "prog.pipe", "-i", 'items=["12", "7"]', "--json", "--executor", "threads:4", "--model",
                     "scripted:author.json", "--review-model", "scripted:reviewer.json", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["output"] == [1200, 700]
    assert [v.version for v in history(tmp_path)] == [1, 2]  # one repair
    os.remove(tmp_path / "author.json")  # a replay needs no model: none is there to ask
    replayed = run_pipe("replay", json.loads(first.stdout)["run_id"], cwd=tmp_path, env=env)
    assert replayed.returncode == 0, replayed.stderr
    assert "0 outside call(s)" in replayed.stderr and "identical" in replayed.stderr


# ---- a module that refuses inputs its spec accepts ----------------------------------------------------------------

# Right for prices with a dot; refuses the others with `fail`, although the spec says a price may have no cents part.
REFUSES = FIRST.replace("    parts = text.split(item, \".\")\n",
                        "    parts = text.split(item, \".\")\n    if len(parts) != 2:\n        fail f\"not a price: {item}\"\n")
WRONG_REFUSAL = json.dumps({"concerns": [{"id": "r1", "severity": "blocking", "spec_basis": "a price may have no "
                                          "cents part", "evidence": "12 is a price without cents: 1200",
                                          "suggested_fix": "read a price with no dot as whole units"}],
                            "summary": "the refusal is wrong"})
REFUSAL = "It refused these inputs with `fail`"


def test_a_refusal_the_reviewer_says_the_spec_does_not_call_for_is_repaired(tmp_path):
    author, reviewer = models(tmp_path, [{"match": {"contains": REPAIR}, "reply": FIXED}, {"reply": REFUSES}],
                              [{"match": {"contains": REFUSAL}, "reply": WRONG_REFUSAL}, {"reply": NO_CONCERNS}])
    assert run_decomposed(tmp_path, PRICES, {"items": ITEMS}, author, reviewer, review_outputs="first",
                          review_sample=0) == [350, 125, 1200, 400]
    (refusal,) = [p for p in reviewer.prompts if REFUSAL in p]
    assert "the message: not a price: 12" in refusal and '- item = "12"' in refusal
    (request,) = author.asked(REPAIR)
    asked = request[0][-1].content
    assert "it refused these inputs with `fail` (not a price: 12), and a reviewer says the spec does not: r1" in asked
    # The inputs it refused are a case the revision must give outputs for: a revision that refuses them again fails.
    assert '- item = "12" -> gives outputs (not `fail`)' in asked
    assert [c.source for c in history(tmp_path)[1].cases] == ["refused"]


def test_a_refusal_the_spec_calls_for_is_the_blocks_answer_and_only_three_per_version_and_run_are_reviewed(tmp_path):
    strict = '''use text

pipeline main(items: list[str]) -> list[int]:
    amounts = []
    for item in items:
        try:
            ambiguous cents(item: str) -> amount: int:
                """Refuses a price without a dot. The amount in cents of a price written with a dot, like "3.50"."""
            amounts = amounts + [amount]
        except e:
            amounts = amounts + [-1]
    return amounts
'''
    author, reviewer = models(tmp_path, [{"reply": REFUSES}])
    items = ["3.50", "1", "2", "3", "4"]
    assert run_decomposed(tmp_path, strict, {"items": items}, author, reviewer, review_outputs="first",
                          review_sample=0) == [350, -1, -1, -1, -1]
    refusals = [p for p in reviewer.prompts if REFUSAL in p]
    assert [p.split("the message: not a price: ")[1][0] for p in refusals] == ["1", "2", "3"]
    assert author.asked(REPAIR) == [] and [v.version for v in history(tmp_path)] == [1]
