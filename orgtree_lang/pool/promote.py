"""Promote a generated module into the pool: an independent reviewer writes test inputs, the module runs on them,
the reviewer judges the outputs against the spec, and an accepted module becomes the skill `learned.<name>`."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orgtree_lang.pool.answers import Judgement, TrialPlan, ask_structured, schema_text
from orgtree_lang.pool.learned import LearnedModule, LearnedStore, check_name
from orgtree_lang.pool.store import PoolError, PoolStore
from orgtree_lang.review.errors import SelfReviewError

CASE_STEPS = 200_000  # budget of one test run
CASE_SECONDS = 20.0

PLAN_SYSTEM = f"""You test a module before it joins a shared pool of skills that every agent may call. You did \
not write it and you see only its spec and signature: use it as its callers will. Write test inputs that show \
whether it meets its spec: ordinary cases, edge cases the spec mentions, and inputs where a careless \
implementation fails. For each, say what a correct output is. Answer with one JSON object and nothing else, \
matching this JSON schema:

{schema_text(TrialPlan)}
"""

JUDGE_SYSTEM_NOTE = f"""Now judge the outputs against the spec, case by case. Accept only if every output meets the \
spec. Answer with one JSON object and nothing else, matching this JSON schema:

{schema_text(Judgement)}"""


def _fresh() -> str:
    return uuid.uuid4().hex


def learned_spec(module: LearnedModule):
    """The AmbiguousSpec a promoted module answers (from its header), for validating a corrected version."""
    from orgtree_lang.compile.code import AmbiguousSpec
    from orgtree_lang.syntax import types as T
    from orgtree_lang.syntax.spans import Span

    p = module.provenance
    inputs = tuple((n, T.parse(t)) for n, t in json.loads(p.get("inputs", "[]")))
    outputs = tuple((n, T.parse(t)) for n, t in json.loads(p.get("outputs", "[]")))
    return AmbiguousSpec(module.name, module.doc, inputs, outputs, tuple(json.loads(p.get("uses", "[]"))), "main",
                         Span(str(module.path), 1, 1, 1, 1))


def saved_module_spec(saved, root: Path, registry):
    """The ambiguous block a saved module was written for, found in its parent program by spec hash.

    Falls back to the module itself (its `main` signature and docstring) when the parent cannot be read."""
    from orgtree_lang.compile.api import compile_source
    from orgtree_lang.decompose.reuse import spec_in_parent
    from orgtree_lang.decompose.spec import OUTPUTS_RECORD

    spec = spec_in_parent(saved, root, registry)
    if spec is not None:
        return spec
    parent = saved.provenance.get("parent", "").rsplit(":", 1)[0]
    from orgtree_lang.compile.code import AmbiguousSpec

    program = compile_source(saved.path.read_text(encoding="utf-8"), str(saved.path), registry).program
    main = program.pipelines.get("main")
    if main is None or not main.doc.strip():
        raise PoolError(f"cannot find the spec of {saved.path}: its parent {parent or '(unknown)'} is not readable "
                        "and its `main` has no docstring",
                        hint="restore the parent program, or give `main` a docstring that states its spec")
    if str(main.returns) == OUTPUTS_RECORD and OUTPUTS_RECORD in program.records:
        outputs = tuple(program.records[OUTPUTS_RECORD].fields)
    else:
        outputs = ((saved.provenance.get("block", "result"), main.returns),)
    return AmbiguousSpec(saved.provenance.get("block", "main"), main.doc, tuple((p.name, p.type) for p in main.params),
                         outputs, tuple(program.uses), "main", main.span)


def promote(root: Path | str, saved, *, reviewer, registry, name: str | None = None,
            new_conversation: Callable[[], str] = _fresh,
            progress: Callable[[str], None] = lambda _text: None) -> dict[str, Any]:
    """Test `saved` (a decompose.store.SavedModule) with an independent reviewer; on acceptance save it as
    `learned.<name>`. Returns the recorded promotion (accepted, reasons, cases, name, path).

    Raises SelfReviewError when the reviewer's conversation is one that wrote or reviewed the module,
    PoolError when the module cannot be promoted (no spec, a taken name), ModelError from the model."""
    from orgtree_lang.compile.api import compile_source
    from orgtree_lang.decompose.spec import required_signature
    from orgtree_lang.memory.turn import agent_turns
    from orgtree_lang.models.base import Message

    root = Path(root)
    name = check_name(name or saved.provenance.get("block", ""))
    learned = LearnedStore(root)
    existing = learned.get(name)
    if existing is not None and existing.provenance.get("source") != str(saved.path):
        raise PoolError(f"learned.{name} already exists (promoted from {existing.provenance.get('source')})",
                        hint="pick another name with --name")
    spec = saved_module_spec(saved, root, registry)
    program = compile_source(saved.path.read_text(encoding="utf-8"), str(saved.path), registry).program
    for p in program.pipelines["main"].params:
        if p.type.kind == "record":
            raise PoolError(f"{saved.path} takes `{p.name}: {p.type}`, a record other modules cannot build",
                            hint="only modules whose inputs are plain values can be promoted")
    conversation = new_conversation()
    authors = {saved.provenance.get("author-conversation", "")}
    earlier = set(filter(None, saved.provenance.get("reviewer-conversations", "").split(",")))
    if conversation in authors | earlier:
        role = "wrote" if conversation in authors else "already reviewed"
        raise SelfReviewError(f"refused: promotion of {saved.path} would run in conversation {conversation!r}, "
                              f"which {role} the module; the tester must be independent",
                              hint="every promotion runs its reviewer in a fresh conversation")
    signature = required_signature(spec)
    spec_text = f"The step `{spec.name}`:\n{spec.doc.strip()}\n\nIts signature:\n{signature}"
    messages = [Message("system", PLAN_SYSTEM), Message("user", spec_text)]
    # The tester is an agent of the workspace: it takes its turn on the scratchpad around each of its answers.
    reviewer = agent_turns(reviewer, f"promotion tester of {name}", spec_text, root, reviewer=reviewer)
    progress(f"asking {reviewer.name} for test inputs")
    plan = ask_structured(reviewer, messages, TrialPlan, conversation, f"test plan for {saved.path.name}")
    messages.append(Message("assistant", plan.model_dump_json()))
    results = []
    import tempfile

    # Cases are numbered from 1 wherever they appear: progress, what the reviewer sees, its verdicts, the report.
    with tempfile.TemporaryDirectory(prefix="pipe-promotion-") as scratch:  # test runs touch no real files
        for number, case in enumerate(plan.cases, 1):
            progress(f"running case {number} of {len(plan.cases)}")
            results.append({"case": number, "inputs": case.inputs, "expect": case.expect,
                            **_run_case(program, registry, Path(scratch), case.inputs)})
    shown = json.dumps([{key: r[key] for key in ("case", "inputs", "expect", "error", "output") if key in r}
                        for r in results], indent=1, ensure_ascii=False)
    messages.append(Message("user", f"The module ran on your cases:\n{shown}\n\n{JUDGE_SYSTEM_NOTE}"))
    progress(f"asking {reviewer.name} to judge {len(results)} output(s)")
    judgement = ask_structured(reviewer, messages, Judgement, conversation, f"judgement of {saved.path.name}",
                               check=lambda answer: answer.unjudged(len(results)))
    verdicts = {v.case: v for v in judgement.cases}  # one for each case: `unjudged` saw to it
    for result in results:
        result["ok"], result["reason"] = verdicts[result["case"]].ok, verdicts[result["case"]].reason
    failing = [r["case"] for r in results if not r["ok"]]
    accepted = judgement.accepted and not failing
    reasons = judgement.reasons
    if judgement.accepted and failing:
        reasons += f" (not accepted: the reviewer judged case(s) {', '.join(map(str, failing))} wrong)"
    store = PoolStore.for_workspace(root)
    try:
        seq = store.record_promotion(str(saved.path), name, accepted, reasons, results,
                                     getattr(reviewer, "name", ""), conversation)
    finally:
        store.close()
    path = None
    if accepted:
        provenance = {
            "source": str(saved.path), "spec-hash": saved.spec_hash,
            "inputs": json.dumps([[n, str(t)] for n, t in spec.inputs]),
            "outputs": json.dumps([[n, str(t)] for n, t in spec.outputs]),
            "uses": json.dumps(list(program.uses)), "author-model": saved.provenance.get("author-model", ""),
            "promoted-by": getattr(reviewer, "name", ""), "promotion-conversation": conversation,
            "promotion": str(seq), "test-cases": str(len(results)), "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        }
        path = learned.save(name, saved.body, spec.doc.strip(), provenance, registry).path
    return {"seq": seq, "name": name, "accepted": accepted, "reasons": reasons, "cases": results,
            "path": str(path) if path else None}


def _run_case(program, registry, scratch: Path, inputs: dict[str, Any]) -> dict[str, Any]:
    """Run the module's main on one case in a scratch workspace with a bounded budget: {"output": value} or
    {"error": message}."""
    from orgtree_lang.runtime.errors import PipeRuntimeError
    from orgtree_lang.runtime.skills import SkillContext
    from orgtree_lang.runtime.values import to_plain
    from orgtree_lang.org.scheduler import Scheduler
    from orgtree_lang.runtime.workspace import Workspace
    from orgtree_lang.vm.budget import Budget
    from orgtree_lang.vm.machine import Machine
    from orgtree_lang.vm.services import Services

    machine = Machine(program, Services(registry=registry,
                                        context=SkillContext(Workspace(scratch), run_id="promotion"),
                                        budget=Budget(max_steps=CASE_STEPS, max_seconds=CASE_SECONDS), org=Scheduler))
    try:
        machine.start("main", dict(inputs), run_id="promotion")
        machine.run()
    except PipeRuntimeError as err:
        return {"error": err.message}
    return {"output": to_plain(machine.state.result)}


def successful_uses(root: Path | str, block: str) -> int:
    """How many times the workspace's runs resolved the ambiguous block `block` and its module ran to the end
    (the org tree's `ambiguous` nodes of that name with status ok)."""
    from orgtree_lang.runlog.store import TreeStore
    from orgtree_lang.pool.store import state_db

    if not state_db(root).is_file():
        return 0
    with TreeStore(state_db(root)) as store:
        return store.count(block, "ambiguous", "ok")


def due_for_promotion(root: Path | str, threshold: int) -> list:
    """Saved modules used successfully at least `threshold` times that were never put up for promotion.

    A block name shared by modules of several parents is skipped: its uses cannot be told apart."""
    from collections import Counter

    from orgtree_lang.decompose.store import ModuleStore

    saved = ModuleStore(Path(root)).all()
    names = Counter(m.provenance.get("block") for m in saved)
    store = PoolStore.for_workspace(root)
    try:
        tried = {row["module"] for row in store.promotions()}
    finally:
        store.close()
    learned = {m.provenance.get("source") for m in LearnedStore(root).all()}
    return [m for m in saved if names[m.provenance.get("block")] == 1 and str(m.path) not in tried | learned
            and successful_uses(root, m.provenance.get("block", "")) >= threshold]
