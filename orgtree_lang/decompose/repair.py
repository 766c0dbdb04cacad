"""Repair on real data (ADaPT's as-needed decomposition): a block's module that fails at run time goes back to its
author with the failing case; the revision is reviewed and simulated like a first writing, saved as the module's
next version, and the block runs again from its inputs. Repairs run out into the parent block's author, then a person.

The entry point for other run-time agents is `repair(decomposer, block, evidence)`: the module revised for the
evidence as a repair (its versions kept, the failing case binding)."""

from __future__ import annotations

import json
from typing import Any

from orgtree_lang.decompose.design import spec_with_contracts
from orgtree_lang.decompose.evidence import (Evidence, RepairRequest, RepairsExhausted, evidence_of, refusal_of,
                                             request_text, where)
from orgtree_lang.decompose.output_review import listing, outputs_subject, rejection, review_outputs, sampled
from orgtree_lang.decompose.repair_turns import repair_turn
from orgtree_lang.decompose.simulate import Case, module_part
from orgtree_lang.decompose.spec import spec_hash
from orgtree_lang.decompose.store import SavedModule, body_hash
from orgtree_lang.decompose.versions import ModuleVersion, ModuleVersions
from orgtree_lang.decompose.writing import write_module
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.values import display_short

PERSON_RETRY = "retry"


def run_repaired(decomposer, program, block, saved: SavedModule, author) -> dict[str, Any]:
    """The block's outputs from its module: a run that fails (or whose outputs fail an expectation or their review)
    is repaired and the block run again, while `[decompose] max_run_repairs` for the module in this run allow."""
    digest = spec_hash(block.spec)
    attempt, asked = 0, False
    while True:
        failure: PipeRuntimeError | None = None
        try:
            outputs = decomposer.run_child(program, block, saved, author, name=f"repair-{attempt}" if attempt else "")
        except PipeRuntimeError as err:
            saved, program = decomposer.ran.pop(block.node, (saved, program))  # a re-plan on the way revised it
            evidence = evidence_of(err, block, saved) or reviewed_refusal(decomposer, block, saved, err)
            if evidence is None:
                raise
            failure = err
        else:
            saved, program = decomposer.ran.pop(block.node, (saved, program))
            if decomposer.author is None:
                return outputs  # no agents: the parent checks the block's expectations, as it always has
            evidence, failure = checked_outputs(decomposer, block, saved, outputs)
            if evidence is None:
                return outputs
        if decomposer.author is None:
            raise failure
        file_bugs(decomposer, block, evidence.blamed, evidence, f"{attempt}")
        # One repair of a module at a time: while another reach (a parallel branch) repairs it, wait; if it revised
        # the module this reach ran, run the block again on the revision instead of repairing it a second time.
        revised = repair_turn(decomposer, block, digest, saved)
        if revised is not None:
            saved, program = revised
            attempt += 1
            block.note(f"another reach of the block revised {saved.path.name} meanwhile: running the block again "
                       "on the revision")
            continue
        try:
            saved, program, asked = _repaired(decomposer, block, digest, saved, evidence, failure, attempt + 1, asked)
        finally:
            decomposer.repair_turns.release(block, digest)
        attempt += 1


def _repaired(decomposer, block, digest: str, saved: SavedModule, evidence: Evidence, failure, attempt: int,
              asked: bool):
    """(module, program, asked): the module revised for `evidence` by this reach (which holds the repair turn), within
    `[decompose] max_run_repairs` for the module in this run; when they ran out, a person may guide one more (at the
    program's own block, asked once per reach), else the failure goes up (RepairsExhausted)."""
    from orgtree_lang.compile.api import compile_source

    guidance = ""
    used = decomposer.repairs.get(digest, 0)
    if used >= decomposer.settings.max_run_repairs:
        guidance = "" if asked else _person_says(decomposer, block, evidence, used)
        asked = True
        if not guidance:
            # With no repair made there is nothing to add: the failure is what it would be with no repairs.
            raise _exhausted(block, saved, evidence, used, failure) if used else failure
    decomposer.repairs[digest] = used + 1
    block.note(f"repairing {saved.path.name} ({evidence.summary()[:120]})")
    try:
        saved = repair(decomposer, block, evidence, key=f"{block.node}:repair-{attempt}", guidance=guidance,
                       saved=saved)
    except PipeRuntimeError as err:
        if err.kind in ("model", "budget"):
            raise
        raise _exhausted(block, saved, evidence, used + 1, failure, why=f"the repair failed: {err.message}") from err
    program = compile_source(saved.text, str(saved.path), decomposer.registry).program
    decomposer.remember(digest, saved, program)
    block.note(f"repaired: version {_version_of(decomposer, saved).version} of {saved.path.name}; running the "
               "block again from its inputs")
    return saved, program, asked


def repair(decomposer, block, evidence: Evidence, *, key: str | None = None, guidance: str = "",
           saved: SavedModule | None = None) -> SavedModule:
    """Have the author of `block`'s module revise it for `evidence`: the module, the evidence and the module's
    earlier examples go to it as a repair request; the revision (fixed, or split into nested blocks) is reviewed and
    simulated (the failing inputs a saved example it must now pass) and saved as the module's next version.

    `key` names this repair so that a resumed run records its version once (default: the block reach's next)."""
    spec = block.spec
    digest = spec_hash(spec)
    saved = saved or decomposer.store.find(digest)
    if saved is None:
        raise PipeRuntimeError(f"ambiguous block `{spec.name}` has no module to repair", kind="ambiguous",
                               catchable=False)
    if decomposer.author is None:
        raise PipeRuntimeError(f"ambiguous block `{spec.name}` cannot be repaired: no model is configured",
                               kind="ambiguous", catchable=False,
                               hint="configure a model with `--model NAME` or the PIPE_MODEL environment variable")
    current = _version_of(decomposer, saved)
    cases = [c for c in current.cases if c.source != "spec"]
    failing = evidence.case()
    if failing is not None and failing not in cases:
        cases.append(failing)
    shown = [Case(dict(e.inputs), dict(e.outputs), "spec", e.fails) for e in spec.examples] + cases
    author, reviewer = decomposer.metered(block, "repairing", "reviewing the repair of")
    request = RepairRequest(
        request_text(evidence, module_part(saved.body), current.version, shown, guidance), cases,
        key or f"{block.node}:repair-{decomposer.repairs.get(digest, 0) + 1}", evidence.summary(),
        current.body_hash,
        provenance={"repaired": f"version {current.version + 1} after {evidence.summary()}",
                    "repaired-from": current.body_hash})
    saved = write_module(decomposer, spec, block.inputs, digest, author, reviewer, block, [], repair=request)
    file_bugs(decomposer, block, tuple(request.blamed()), evidence, f"{request.key}:author")
    return saved


def checked_outputs(decomposer, block, saved: SavedModule, outputs: dict[str, Any]):
    """(evidence, error) when the outputs fail one of the block's expectations or their review rejects them, else
    (None, None). Which runs are reviewed: `[decompose] review_outputs` and `review_sample`."""
    spec, settings = block.spec, decomposer.settings
    failed = failed_expectation(spec, block.inputs, outputs, decomposer.registry, block.context,
                                decomposer.checks)
    evidence = error = None
    if failed is not None:
        evidence = Evidence("expectation", failed.message, dict(block.inputs), dict(outputs))
        error = failed
    mode = settings.review_outputs
    if decomposer.reviewer is None or mode == "off":
        return evidence, error
    wanted = mode == "all" or failed is not None
    if not wanted:
        with ModuleVersions(decomposer.workspace) as versions:
            wanted = versions.first_run(_version_of(decomposer, saved, versions), block.node)
    only_sampled = not wanted
    if only_sampled and not sampled(block.node, settings.review_sample):
        return evidence, error
    subject = outputs_subject(decomposer.parent_file, spec, spec_hash(spec))
    block.note("reviewing its outputs" + (" (sampled)" if only_sampled else ""))
    try:
        reviewer = decomposer.metered(block, review="reviewing the outputs of")[1]
        blocking = review_outputs(decomposer.agent(block, "output reviewer", reviewer), spec,
                                  block.inputs, outputs,
                                  spec_text=spec_with_contracts(f"The step `{spec.name}`:\n{spec.doc}", spec),
                                  workspace=decomposer.workspace, subject=subject, node=block.node)
    except PipeRuntimeError as err:
        if not only_sampled or err.kind != "model":
            raise
        # A spot check, not a gate: a reviewer that cannot be asked now leaves the outputs as they are.
        block.note(f"the sampled review of its outputs was skipped: {err.message}")
        return evidence, error
    if not blocking:
        block.note(f"version {_version_of(decomposer, saved).version} of {saved.path}: outputs accepted by their "
                   "review")
        return evidence, error
    what = f"a reviewer rejected its outputs for these inputs: {listing(blocking)}"
    if evidence is not None:
        return Evidence("expectation", f"{evidence.what}; {what}", evidence.inputs, evidence.outputs), error
    return Evidence("review", what, dict(block.inputs), dict(outputs)), rejection(spec, blocking, subject)


REFUSAL_REVIEWS = 3  # refusals of one module version reviewed per run (a loop of refused inputs asks no more)


def reviewed_refusal(decomposer, block, saved: SavedModule, err: PipeRuntimeError) -> Evidence | None:
    """Evidence when the module refused its inputs with `fail` and its output reviewer says the spec does not call
    for that (`[decompose] review_outputs` not "off"), else None: the refusal is the block's answer. The first
    REFUSAL_REVIEWS reaches that a version refuses in a run are reviewed, counted in the concern ledger (a resumed
    or replayed reach is reviewed again exactly when it was, its answer from the journal)."""
    message = refusal_of(err)
    if message is None or decomposer.author is None or decomposer.reviewer is None or \
            decomposer.settings.review_outputs == "off":
        return None
    from orgtree_lang.review.ledger import ConcernLedger

    spec = block.spec
    version = body_hash(saved.body).split(":")[-1][:12]
    subject = f"{outputs_subject(decomposer.parent_file, spec, spec_hash(spec))}:refusals:{version}"
    run = block.node.split("/", 1)[0]
    with ConcernLedger.for_workspace(decomposer.workspace) as ledger:
        reviewed = {r["author_conversation"] for r in ledger.rounds(subject)}
    if f"run:{block.node}" not in reviewed and \
            sum(node.startswith(f"run:{run}/") for node in reviewed) >= REFUSAL_REVIEWS:
        return None
    block.note(f"reviewing its refusal: {message[:120]}")
    reviewer = decomposer.metered(block, review="reviewing the refusal of")[1]
    blocking = review_outputs(decomposer.agent(block, "output reviewer", reviewer), spec, block.inputs, {},
                              spec_text=spec_with_contracts(f"The step `{spec.name}`:\n{spec.doc}", spec),
                              workspace=decomposer.workspace, subject=subject, node=block.node, refused=message)
    if not blocking:
        block.note("its refusal was accepted by its review")
        return None
    return Evidence("refusal", f"it refused these inputs with `fail` ({message}), and a reviewer says the spec does "
                               f"not: {listing(blocking)}", dict(block.inputs), location=_where_of(err, saved))


def _where_of(err: PipeRuntimeError, saved: SavedModule) -> str:
    inner = err
    while isinstance(inner.__cause__, PipeRuntimeError):
        inner = inner.__cause__
    return where(inner, saved)


def failed_expectation(spec, inputs: dict[str, Any], outputs: dict[str, Any], registry, context,
                       compiled: dict | None = None):
    """The error of the first of the block's `expect` lines its outputs do not meet (checked here, where a repair can
    follow, before the parent checks them again), or None. `compiled` keeps the checking program per spec."""
    if not spec.expects:
        return None
    import dataclasses

    from orgtree_lang.compile.api import compile_source
    from orgtree_lang.decompose.simulate import SIMULATION_BUDGET, simulation_registry
    from orgtree_lang.org.scheduler import Scheduler
    from orgtree_lang.syntax.diagnostics import CompileError
    from orgtree_lang.vm.machine import Machine
    from orgtree_lang.vm.services import Services

    values = {**inputs, **outputs}
    key = spec_hash(spec)
    if compiled is None or key not in compiled:
        lines = [f"pipeline main({', '.join(f'{name}: any' for name in values)}) -> bool:"]
        lines += [f"    assume {condition}, {json.dumps(why, ensure_ascii=False)}" for condition, why in spec.expects]
        lines.append("    return true")
        uses = sorted({use.split(".")[0] for use in spec.uses})
        source = (f"use {', '.join(uses)}\n\n" if uses else "") + "\n".join(lines) + "\n"
        sealed = simulation_registry(registry, [])
        try:
            found = (compile_source(source, f"{spec.name} expectations", sealed).program, sealed)
        except CompileError:
            found = None  # a condition only the parent can read (its records, say): the parent's own check decides
        if compiled is not None:
            compiled[key] = found
    else:
        found = compiled[key]
    if found is None:
        return None
    program, sealed = found
    machine = Machine(program, Services(registry=sealed, context=context, printer=lambda line: None, org=Scheduler,
                                        budget=dataclasses.replace(SIMULATION_BUDGET, max_seconds=None)))
    try:
        machine.start("main", values)
        machine.run()
    except PipeRuntimeError as err:
        if err.kind != "assumption":
            return None
        return PipeRuntimeError(f"ambiguous block `{spec.name}`: its outputs do not meet an expectation: "
                                f"{err.message.replace('assumption does not hold', 'expect')}", kind="expectation",
                                span=spec.span, hint="the module was repaired as far as [decompose] max_run_repairs "
                                                     "allows; fix it, or the `expect` if the promise is wrong")
    return None


def file_bugs(decomposer, block, blamed, evidence: Evidence, tag: str) -> list[int]:
    """File a bug report for each (skill, why) an agent blames, through the pool's own `skills.report_bug` (its
    bug review is by another agent, as for a person's report); once per block reach and tag, also on resume."""
    import dataclasses

    skill = decomposer.registry.get("skills.report_bug")
    if skill is None or not blamed or block.context is None:
        return []
    filed = []
    for number, (name, why) in enumerate(blamed, 1):
        if decomposer.registry.get(name) is None:
            continue
        row = _history_row(decomposer.workspace, name, block.node)
        context = dataclasses.replace(block.context, idempotency_key=f"{block.node}:bug:{tag}:{number}")
        try:
            filed.append(skill.func(ctx=context, skill=name,
                                    use_case=f"the generated module for block `{block.spec.name}` "
                                             f"({block.spec.doc.strip().splitlines()[0][:200]})",
                                    expected=f"`{name}` doing what its documentation says for these inputs",
                                    observed=why, notes=f"filed by a run-time agent of {block.node}: "
                                                        f"{evidence.summary()}" + (f"; the call: {row}" if row else "")))
        except Exception as err:  # a report that cannot be filed is a note, never the run's failure
            block.note(f"could not file a bug report about {name}: {err}")
            continue
        block.note(f"filed bug report #{filed[-1]} about {name}")
    return filed


def _history_row(workspace, name: str, node: str) -> str:
    """The newest failed call of skill `name` in this run, as the skill history shows it, or ""."""
    from orgtree_lang.runlog.store import TreeStore
    from orgtree_lang.runtime.state_db import state_db_path

    path = state_db_path(workspace)
    if not path.is_file():
        return ""
    try:
        with TreeStore(path) as store:
            calls = [c for c in store.calls(name=name, run_id=node.split("/", 1)[0], limit=20) if c.status == "error"]
    except Exception:
        return ""
    if not calls:
        return ""
    call = calls[0]
    return f"#{call.id} {call.name}({call.inputs or ''}) error: {call.error}"


def _person_says(decomposer, block, evidence: Evidence, used: int) -> str:
    """A person's guidance for one more repair, when the block is the program's own (no parent block's author is
    left to take the failure) and the run can ask one; "" when they say fail or none can be asked."""
    if decomposer.parent_author is not None:
        return ""
    ask = decomposer.human_for(block)
    if ask is None:
        return ""
    answer = ask(f"The generated module for block `{block.spec.name}` still fails on real data after {used} "
                 f"repair(s) ([decompose] max_run_repairs):\n{evidence.what}\nInputs: "
                 + ", ".join(f"{k} = {display_short(v, 300)}" for k, v in evidence.inputs.items())
                 + f"\n\nAnswer `{PERSON_RETRY}: GUIDANCE` to have its author repair it once more with your guidance, "
                   "or `fail` to stop with this error.")
    head, _, rest = (answer or "").strip().partition(":")
    return (rest.strip() or "try again") if head.strip().lower() == PERSON_RETRY else ""


def _exhausted(block, saved: SavedModule, evidence: Evidence, used: int, failure, why: str = "") -> RepairsExhausted:
    message = (f"the generated module for `{block.spec.name}` ({saved.path}) still fails after {used} repair(s): "
               f"{why or failure.message}")
    err = RepairsExhausted(message, kind=getattr(failure, "kind", "ambiguous"), span=getattr(failure, "span", None),
                           hint=f"`pipe modules show {saved.path.stem} --history` shows its versions; raise "
                                "[decompose] max_run_repairs, or fix the module", catchable=False, evidence=evidence)
    err.source = getattr(failure, "source", None)
    err.frames_below = list(getattr(failure, "frames_below", []))
    return err


def _version_of(decomposer, saved: SavedModule, versions: ModuleVersions | None = None) -> ModuleVersion:
    """The version row of the module as saved (a module saved before versions were kept becomes version 1, with
    the spec's examples)."""
    if versions is None:
        with ModuleVersions(decomposer.workspace) as own:
            return own.current(saved)
    return versions.current(saved)
