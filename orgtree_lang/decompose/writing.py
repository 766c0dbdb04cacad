"""One writing of a module for an ambiguous block: the request within its budget, the author's conversation (design,
code, simulation, repairs, research), the review and its escalation, and the save with its provenance."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

from orgtree_lang.compile.code import AmbiguousSpec
from orgtree_lang.decompose.answers import AuthorTurns, resolutions
from orgtree_lang.decompose.dataflow import ExampleFlow
from orgtree_lang.decompose.extract import ExtractError, extract_module
from orgtree_lang.decompose.goal import skill_docs
from orgtree_lang.decompose.inputs import described_inputs
from orgtree_lang.decompose.prompt import PromptTooLarge, build_request, spec_text
from orgtree_lang.decompose.protocol import input_summarizer, seated, seed_tokens
from orgtree_lang.decompose.research import INSTRUCTIONS as RESEARCH_INSTRUCTIONS
from orgtree_lang.decompose.reuse import offered_skills
from orgtree_lang.decompose.size import SMALL_PIPELINES, size_problems
from orgtree_lang.decompose.store import SavedModule
from orgtree_lang.decompose.validate import validate_module
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.syntax.card import language_card

LANGUAGE_NOTES = language_card() + """

## Your task
Write one module for the step in the request, short and idiomatic: helper pipelines and recursion,
`for` loops, `is` tests. A step you cannot write yet may be an `ambiguous` block with a docstring.
""" + SMALL_PIPELINES + """
Answer with exactly one ```pipe block holding the whole module, and nothing else.
""" + RESEARCH_INSTRUCTIONS

MODULE_HINT = "make the block's docstring more precise, or write this step yourself"


def write_module(decomposer, spec: AmbiguousSpec, inputs: dict[str, Any], digest: str, author, reviewer, block,
                 similar: list[SavedModule], evidence: str = "", repair=None) -> SavedModule:
    """Have the author write a module for `block` (with its design and simulation when the flow is data-driven),
    repaired until valid, reviewed (escalating a disagreement), and save it as the module's next version; the saved
    module. `evidence` (why an earlier module must be revised: a re-plan, docs/org.md "Decisions") ends the first
    request. `repair` (decompose/evidence.py RepairRequest) makes it a revision of the module after it failed on
    real data: its request follows the usual one, and its cases are simulated with the spec's."""
    from orgtree_lang.decompose.versions import ModuleVersions
    from orgtree_lang.decompose.attempts import AttemptLog
    from orgtree_lang.decompose.escalate import escalate, judges_for
    from orgtree_lang.decompose.journaled import review_subject
    from orgtree_lang.models.base import Message
    from orgtree_lang.models.tokens import context_window, count_tokens
    from orgtree_lang.review.errors import ReviewError
    from orgtree_lang.review.ledger import ConcernLedger
    from orgtree_lang.review.reviewer import review_loop

    settings, registry = decomposer.settings, decomposer.registry
    parent_file, parent_source = decomposer.parent_file, decomposer.parent_source
    related = [(m.provenance.get("block", m.path.stem), m.body) for m in similar]
    window = context_window(author)
    budget = int(window * settings.context_share)
    # The big inputs' views are summarized by the run's model (before the author is seated: not as its turn).
    summarizer = input_summarizer(block, author, decomposer.workspace)
    seed, unseated = 0, author
    if settings.protocol:
        # The pad and the insights take shares of the window of their own (15% and 10%), next to the request's.
        author, reviewer = seated(author, reviewer, spec, block, decomposer.workspace)
        seed = seed_tokens(window)
    flow = ExampleFlow(decomposer, spec, generated_context(block.context),
                       carried=repair.cases if repair is not None else None)
    # The examples the program states and the design step are part of the first request: within its budget too.
    additions = flow.additions()
    extra = count_tokens("\n\n" + additions, author.name) if additions else 0
    described = described_inputs(spec, inputs, decomposer.workspace, settings.memory_threshold, author.name,
                                 window, budget - extra, summarizer)
    try:
        request = build_request(spec, inputs, registry, parent_file, parent_source, related,
                                count=lambda text: count_tokens(text, author.name), budget=budget - extra,
                                fixed=LANGUAGE_NOTES, share=settings.context_share, window=window,
                                described=described, seed=seed,
                                offered=offered_skills(spec, registry, decomposer.workspace, settings.similarity / 2))
    except PromptTooLarge as err:
        raise PipeRuntimeError(str(err) + (f" (after the {extra:,} tokens of the examples and design request)"
                                           if extra else ""), kind="ambiguous", catchable=False,
                               hint="shorten the block's docstring, or use a model with a larger context window "
                                    "(or raise [decompose] context_share)") from None
    conversation = uuid.uuid4().hex
    attempts = AttemptLog(decomposer.workspace)
    turns = AuthorTurns(author, conversation, attempts, spec.name, digest, f"{parent_file}:{spec.span.line}",
                        decomposer.workspace, settings.max_repairs + 1, settings.max_research,
                        research=lambda need, what: researched(decomposer, need, what, spec, block, reviewer),
                        messages=[Message("system", LANGUAGE_NOTES),
                                  Message("user", flow.opening(request.text + (f"\n\n{evidence}" if evidence else ""))
                                          + ("\n\n" + repair.text if repair is not None else ""))])

    def valid_module(phase: str, answers: list[str] | None = None) -> str:
        return turns.until_valid("module", phase, lambda answer: module_problems(decomposer, spec, answer),
                                 MODULE_HINT, answers)

    def ask(text: str, phase: str) -> tuple[str, str]:
        turns.messages.append(Message("user", text))
        answers: list[str] = []
        revised = valid_module(phase, answers)
        return revised, answers[-1] if answers else ""

    try:
        if flow.designs:
            flow.design_step(turns, reviewer, block)
        body = flow.checked(valid_module("write"), ask, block.note)

        def revise(artifact: str, concerns) -> tuple[str, dict[str, str]]:
            listing = "\n".join([f"- {c.id} ({c.severity}): {c.evidence} Suggested: {c.suggested_fix}"
                                 for c in concerns] + flow.take_refused())
            revised, answer = ask(f"A reviewer raised these concerns about the module:\n{listing}\n"
                                  "Reply with the revised module in one ```pipe block, then one line "
                                  "per concern: `ID: resolved: why` or `ID: rejected: why`.", "revise")
            answered = resolutions(answer, concerns)
            flow.answered(answered)  # a failing case's concern is settled by the next simulation, not by this
            revised = flow.checked(revised, ask, block.note)
            flow.record(ledger, subject, conversation)
            return flow.artifact(revised), answered

        with ConcernLedger.for_workspace(decomposer.workspace) as ledger:
            # Each writing of a module is reviewed afresh: concerns settled for an earlier module are not
            # inherited. The subject is numbered, not random, so prompts (and cassettes) repeat exactly.
            subject = review_subject(block, ledger, f"{Path(parent_file).name}:{spec.name}:{digest}")
            block.note(f"in review ({subject})")
            flow.record(ledger, subject, conversation)
            goal = decomposer.goal.describe(spec, parent_file, parent_source)

            def context(artifact: str) -> str:
                return "\n\n".join(part for part in (goal, skill_docs(artifact, registry)) if part)

            def review(artifact: str, rounds: int):
                return review_loop(subject, flow.spec_text(spec_text(spec)), artifact, language=language_card(),
                                   author=author, reviewer=reviewer, revise=revise, ledger=ledger,
                                   max_rounds=rounds, author_conversation=conversation, context=context,
                                   held=flow.held)

            trail: list[str] = []
            try:
                outcome = review(flow.artifact(body), settings.max_review_rounds)
            except ReviewError as failed:
                # The parent's author rules as an agent of its own (its turn on the pad), not as this block's author.
                judge = decomposer.agent(block, "escalation judge", unseated)
                judges = judges_for(judge, decomposer.parent_author, decomposer.human_for(block))
                if not failed.open_concerns or failed.outcome is None or not judges:
                    raise
                outcome, trail = escalate(failed, judges, subject=subject, ledger=ledger,
                                          spec_text=flow.spec_text(spec_text(spec)), goal=goal, revise=revise,
                                          review_again=lambda artifact: review(artifact, 1), note=block.note,
                                          binding=flow.binding)
    finally:
        attempts.close()
        if repair is not None:
            repair.answers[:] = [m.content for m in turns.messages if m.role == "assistant"]
    flow.refuse_failing()
    provenance = {
        **decomposer.provenance_base(spec, digest),
        "review-subject": subject,
        "author-model": author.name,
        "reviewer-model": reviewer.name,
        "author-conversation": outcome.author_conversation,
        "reviewer-conversations": ",".join(outcome.reviewer_conversations),
        "review-rounds": str(outcome.rounds),
        "concerns": ", ".join(f"{k} {v}" for k, v in outcome.counts.items()),
        "prompt-tokens": f"{request.tokens + extra} of {request.budget + extra} allowed (+ {request.fixed_tokens} of "
                         "language card)",
        **({"escalated": "; ".join(trail)} if trail else {}),
        **flow.provenance(),
        **(repair.provenance if repair is not None else {}),
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    saved = decomposer.store.save(parent_file, spec.name, flow.saved(outcome.artifact), provenance, registry)
    run_id = block.node.split("/", 1)[0]
    with ModuleVersions(decomposer.workspace) as versions:
        if repair is None:
            versions.record(f"written:{saved.provenance['body-hash']}", saved, "re-planned" if evidence else "written",
                            flow.cases, run_id)
        else:
            versions.record(repair.key, saved, repair.reason, flow.cases, run_id, previous=repair.previous)
    return saved


def module_problems(decomposer, spec: AmbiguousSpec, answer: str) -> tuple[str, list[str]]:
    """The module an answer holds and why it is not accepted yet: extraction, validation, then size."""
    try:
        body = extract_module(answer)
    except ExtractError as err:
        return "", [str(err)]
    result = validate_module(body, spec, decomposer.registry, f"{spec.name}.pipe")
    if not result.ok:
        return body, result.problems
    return body, size_problems(body, f"{spec.name}.pipe", decomposer.settings.max_statements)


def researched(decomposer, need, what: str, spec: AmbiguousSpec, block, reviewer) -> str:
    """Run the research child on the author's questions, have its findings reviewed as insights, and return the
    author's next request (for the `what` it was asked for) with the accepted ones."""
    from orgtree_lang.compile.api import compile_source
    from orgtree_lang.decompose.research import propose_findings, research_source, web_allowed

    module = decomposer.settings.research_module
    file, source = research_source(str(decomposer.workspace / module) if module else "")
    program = compile_source(source, file, decomposer.registry).program
    web = web_allowed(decomposer.config)
    block.note(f"researching ({'web and ' if web else ''}workspace memory): {' | '.join(need.questions)}")
    result = block.run_child(program, None, context=generated_context(block.context),
                             limits=decomposer.settings.limits.budget(), name="research",
                             inputs={"questions": need.questions or need.reasons, "web": web})
    findings = propose_findings(decomposer.workspace, result, spec.name, reviewer)
    block.note(f"research: {len(findings.accepted)} finding(s) accepted, {len(findings.rejected)} rejected")
    return findings.message(need, what)


def generated_context(context):
    """The parent's skill context as a generated module gets it: the workspace with program sources read-only."""
    import dataclasses

    workspace = getattr(context, "workspace", None)
    if workspace is None or not dataclasses.is_dataclass(context):
        return context
    return dataclasses.replace(context, workspace=workspace.for_generated_module())
