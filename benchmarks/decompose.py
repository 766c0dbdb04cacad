"""Model calls and tokens per decomposition, the second run's (zero) calls, and the synthesis prompt's size.

    python benchmarks/decompose.py

Uses examples/ambiguous_triage.pipe with the scripted models in examples/models/ (offline, deterministic):

1. First run in an empty workspace: the `classify` block is written, reviewed (one blocking concern, a
   revision, acceptance), saved and run. Every model call goes through a counting wrapper; tokens are the
   `Completion.usage` figures (tiktoken counts for scripted models).
2. Second run in the same workspace with a different report: the saved module is reused. It must make
   0 model calls (the script exits 1 otherwise).
3. The synthesis request (`Decomposer._request` plus the system message) for a block input of 1 KB and of
   10 MB. Input values are summarized to SUMMARY_CHARS characters in the prompt, so both must stay within
   PROMPT_BUDGET tokens (the script exits 1 otherwise) and be about the same size.
4. Today's flow against the data-driven one ([decompose] data_driven = true: design, design review, code,
   simulation, code review) on the same scripted scenarios (SCENARIOS): model calls, tokens, and whether the
   saved module answers hidden cases right. The data-driven flow must get them all right (exit 1 otherwise).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path

from orgtree_lang.compile.api import compile_source
from orgtree_lang.decompose.decomposer import LANGUAGE_NOTES, DecomposeSettings, Decomposer
from orgtree_lang.decompose.prompt import CONTEXT_SHARE, build_request
from orgtree_lang.models.scripted import ScriptedModel
from orgtree_lang.models.tokens import count_tokens
from orgtree_lang.run.registries import default_registry
from orgtree_lang.runtime.skills import SkillContext
from orgtree_lang.runtime.workspace import Workspace
from orgtree_lang.run.factory import plain_machine

REPO = Path(__file__).resolve().parent.parent
PARENT = REPO / "examples" / "ambiguous_triage.pipe"
AUTHOR = REPO / "examples" / "models" / "triage_author.yaml"
REVIEWER = REPO / "examples" / "models" / "triage_reviewer.yaml"
PARENT_NAME = "examples/ambiguous_triage.pipe"
# A quarter of 8,192 tokens, the context window `context_window()` assumes for a model it does not know.
PROMPT_BUDGET = 2048


class Counting:
    """Passes calls through to a model and keeps each call's usage."""

    def __init__(self, model) -> None:
        self.model = model
        self.name = model.name
        self.calls: list = []

    def complete(self, *args, **kwargs):
        done = self.model.complete(*args, **kwargs)
        self.calls.append(done.usage)
        return done

    def tokens(self) -> tuple[int, int]:
        return sum(u.prompt_tokens for u in self.calls), sum(u.completion_tokens for u in self.calls)


def decompose_once(workspace: Path, registry, report: str) -> tuple[str, Counting, Counting, float]:
    """Run the example's main with fresh scripted models; return its result, both counters and the seconds."""
    source = PARENT.read_text(encoding="utf-8")
    program = compile_source(source, PARENT_NAME, registry).program
    author = Counting(ScriptedModel.from_file(AUTHOR, role="author"))
    reviewer = Counting(ScriptedModel.from_file(REVIEWER, role="reviewer"))
    # A reused module's later runs have their outputs reviewed at random (`review_sample`, 10% of runs by their run
    # id): the reuse row measures reuse, so none is sampled here (it made the second run call a model 1 time in 10).
    decomposer = Decomposer(author=author, reviewer=reviewer, registry=registry, workspace=workspace,
                            parent_file=PARENT_NAME, parent_source=source,
                            settings=DecomposeSettings(review_sample=0.0))
    machine = plain_machine(program, registry=registry, context=SkillContext(Workspace(workspace)),
                      resolver=decomposer, printer=lambda line: None)
    started = time.perf_counter()
    machine.start("main", {"report": report})
    result = machine.run().result
    return result, author, reviewer, time.perf_counter() - started


def row(label: str, author: Counting, reviewer: Counting, seconds: float) -> str:
    (ap, ac), (rp, rc) = author.tokens(), reviewer.tokens()
    return (f"{label:<26} {len(author.calls):>6} {len(reviewer.calls):>8} {len(author.calls) + len(reviewer.calls):>6}"
            f" {ap + rp:>14,} {ac + rc:>18,} {seconds * 1000:>9.1f}")


def synthesis_tokens(registry, size: int) -> tuple[int, int, float]:
    """Tokens of the synthesis request (system + user message) for a `report` of `size` characters."""
    source = PARENT.read_text(encoding="utf-8")
    program = compile_source(source, PARENT_NAME, registry).program
    spec = program.pipelines["main"].ambiguous[0]
    sentence = "The export button does nothing when the list is empty. "
    report = (sentence * (size // len(sentence) + 1))[:size]
    started = time.perf_counter()
    request = build_request(spec, {"report": report}, registry, PARENT_NAME, source, [], count=count_tokens,
                            budget=PROMPT_BUDGET, fixed=LANGUAGE_NOTES)
    seconds = time.perf_counter() - started
    return request.tokens, len(request.text), seconds


# ---- today's flow against the data-driven one ----------------------------------------------------

FLOW_PARENT = '''use text

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
RIGHT = '''```pipe
use text

pipeline main(report: str) -> str:
    if text.contains(text.lower(report), "crash"):
        return "bug"
    return "question"
```
example-2: resolved: lower-cased first
c1: resolved: lower-cased first'''
# A plausible first module that fails a hidden case (a crash in capitals).
WRONG = RIGHT.replace("text.lower(report)", "report")
ACCEPT = json.dumps({"concerns": [], "summary": "fits the spec"})
CONCERN = json.dumps({"concerns": [{"id": "c1", "severity": "blocking", "spec_basis": "in any letter case",
                                    "evidence": "`CRASH` in capitals is missed", "suggested_fix": "lower-case it"}],
                      "summary": "one problem"})
HIDDEN = {"CRASH!": "bug", "it Crashed twice": "bug", "crash": "bug", "Where is the manual?": "question",
          "": "question"}
# name: (first module, whether the code reviewer, reading, catches the case-sensitive test when it sees it)
SCENARIOS = {
    "right first module": (RIGHT, False),
    "wrong first, reader misses it": (WRONG, False),
    "wrong first, reader catches it": (WRONG, True),
}


def flow_run(workspace: Path, registry, first: str, catches: bool, data_driven: bool):
    """Decompose FLOW_PARENT once; the counters, and how many HIDDEN cases the saved module gets right."""
    rules = [{"match": {"contains": "First, the design"}, "reply": DESIGN},
             {"match": {"contains": "The design is settled"}, "reply": first},
             {"match": {"contains": "Write a module"}, "reply": first},
             {"match": {"contains": "Running the module on its examples"}, "reply": RIGHT},
             {"match": {"contains": "A reviewer raised these concerns"}, "reply": RIGHT}]
    # The design review accepts; the code review raises the concern only on a module that has the bug.
    reviews = [{"match": {"contains": "The design of `classify`"}, "reply": ACCEPT},
               *([{"match": {"contains": "text.contains(report,"}, "reply": CONCERN}] if catches else []),
               {"reply": ACCEPT}]
    (workspace / "author.json").write_text(json.dumps(rules))
    (workspace / "reviewer.json").write_text(json.dumps(reviews))
    author = Counting(ScriptedModel.from_file(workspace / "author.json", role="author"))
    reviewer = Counting(ScriptedModel.from_file(workspace / "reviewer.json", role="reviewer"))
    program = compile_source(FLOW_PARENT, "triage.pipe", registry).program
    settings = dataclasses.replace(DecomposeSettings(), data_driven=data_driven)
    right = 0
    for report, expected in HIDDEN.items():
        decomposer = Decomposer(author=author, reviewer=reviewer, registry=registry, workspace=workspace,
                                parent_file="triage.pipe", parent_source=FLOW_PARENT, settings=settings)
        machine = plain_machine(program, registry=registry, context=SkillContext(Workspace(workspace)),
                                resolver=decomposer, printer=lambda line: None)
        machine.start("main", {"report": report})
        right += machine.run().result == expected
    return author, reviewer, right


def compare_flows(registry) -> bool:
    """Print one row per scenario and flow; False if the data-driven flow missed a hidden case."""
    print(f"{'scenario':<32} {'flow':<12} {'author':>6} {'reviewer':>8} {'calls':>6} {'prompt tokens':>14} "
          f"{'completion':>10}  hidden cases right")
    good = True
    for name, (first, catches) in SCENARIOS.items():
        for data_driven in (False, True):
            with tempfile.TemporaryDirectory() as tmp:
                author, reviewer, right = flow_run(Path(tmp), registry, first, catches, data_driven)
            (ap, ac), (rp, rc) = author.tokens(), reviewer.tokens()
            print(f"{name:<32} {'data-driven' if data_driven else 'today':<12} {len(author.calls):>6} "
                  f"{len(reviewer.calls):>8} {len(author.calls) + len(reviewer.calls):>6} {ap + rp:>14,} "
                  f"{ac + rc:>10,}  {right}/{len(HIDDEN)}")
            good = good and (right == len(HIDDEN) or not data_driven)
    return good


def main() -> int:
    registry = default_registry(plugins=False)
    failed = False
    print("decomposition of `classify` in examples/ambiguous_triage.pipe, scripted models from examples/models/")
    print(f"{'run':<26} {'author':>6} {'reviewer':>8} {'calls':>6} {'prompt tokens':>14} "
          f"{'completion tokens':>18} {'ms':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        result, author, reviewer, seconds = decompose_once(workspace, registry, "Please add CSV export")
        print(row("1st run (write+review)", author, reviewer, seconds) + f"   -> {result}")
        for i, usage in enumerate(author.calls, 1):
            print(f"    author call {i}: {usage.prompt_tokens:,} prompt + {usage.completion_tokens:,} completion")
        for i, usage in enumerate(reviewer.calls, 1):
            print(f"    reviewer call {i}: {usage.prompt_tokens:,} prompt + {usage.completion_tokens:,} completion")
        result, author, reviewer, seconds = decompose_once(workspace, registry, "How do I change my password?")
        print(row("2nd run (reuse)", author, reviewer, seconds) + f"   -> {result}")
        if author.calls or reviewer.calls:
            print("FAIL: the second run called a model")
            failed = True

    print()
    print(f"synthesis request (system + user message), budget {CONTEXT_SHARE:.0%} of an 8,192-token window")
    small_tokens, small_chars, small_s = synthesis_tokens(registry, 1024)
    big_tokens, big_chars, big_s = synthesis_tokens(registry, 10 * 1024 * 1024)
    print(f"  report of 1 KB:  {small_tokens:>6,} prompt tokens ({small_chars:,} characters of user message, "
          f"built in {small_s * 1000:.2f} ms)")
    print(f"  report of 10 MB: {big_tokens:>6,} prompt tokens ({big_chars:,} characters of user message, "
          f"built in {big_s * 1000:.2f} ms)")
    print(f"  ratio 10 MB / 1 KB: {big_tokens / small_tokens:.3f}; budget {PROMPT_BUDGET:,} tokens")
    if max(small_tokens, big_tokens) > PROMPT_BUDGET:
        print("FAIL: the synthesis prompt is over budget")
        failed = True

    print()
    print("today's flow against the data-driven one, same scripted models (one decomposition, then 4 reuses)")
    if not compare_flows(registry):
        print("FAIL: the data-driven flow saved a module that misses a hidden case")
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
