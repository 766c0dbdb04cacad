"""The VM's ambiguous-block hook: reuse a saved module, or have one written, repaired, reviewed and saved; run it."""

from __future__ import annotations

import re
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orgtree_lang.compile.code import AmbiguousSpec
from orgtree_lang.decompose.dataflow import ExampleFlow
from orgtree_lang.decompose.design import spec_with_contracts
from orgtree_lang.decompose.extract import ExtractError, extract_module
from orgtree_lang.decompose.goal import Goal, skill_docs
from orgtree_lang.decompose.inputs import MEMORY_THRESHOLD, described_inputs, remember_inputs
from orgtree_lang.decompose.size import MAX_STATEMENTS, SMALL_PIPELINES, size_problems
from orgtree_lang.decompose.limits import ChildLimits, output_size
from orgtree_lang.decompose.protocol import reserved, seated
from orgtree_lang.decompose.prompt import CONTEXT_SHARE, PromptTooLarge, build_request, spec_text
from orgtree_lang.decompose.research import INSTRUCTIONS as RESEARCH_INSTRUCTIONS
from orgtree_lang.decompose.research import needs_research, record_need
from orgtree_lang.decompose.reuse import (SIMILARITY, ReuseRefused, ask_reuse, checked_for_reuse,
                                         similar_modules)
from orgtree_lang.decompose.spec import OUTPUTS_RECORD, spec_hash
from orgtree_lang.decompose.store import ModuleStore, SavedModule
from orgtree_lang.decompose.validate import validate_module
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.values import RecordValue, display
from orgtree_lang.syntax.card import language_card

LANGUAGE_NOTES = language_card() + """

## Your task
Write one module for the step in the request, short and idiomatic: helper pipelines and recursion,
`for` loops, `is` tests. A step you cannot write yet may be an `ambiguous` block with a docstring.
""" + SMALL_PIPELINES + """
Answer with exactly one ```pipe block holding the whole module, and nothing else.
""" + RESEARCH_INSTRUCTIONS


@dataclass(frozen=True)
class DecomposeSettings:
    """Limits of the decomposer; `[decompose]` in orgtree.toml overrides them."""

    max_repairs: int = 3  # answers sent back with their problems, after the first, per writing
    max_review_rounds: int = 3
    max_depth: int = 3  # generated modules inside generated modules
    context_share: float = CONTEXT_SHARE  # of the author's context window, for the synthesis request
    similarity: float = SIMILARITY  # word overlap for a saved module of another block to be offered for reuse
    child_max_steps: int = ChildLimits.steps  # what each generated module may take, even when its parent has
    child_max_seconds: float = ChildLimits.seconds  # no limit (decompose/limits.py)
    max_output_chars: int = ChildLimits.output_chars
    child_max_memory: int = ChildLimits.memory
    max_statements: int = MAX_STATEMENTS  # in one pipeline of a generated module; more is sent back to be split
    memory_threshold: int = MEMORY_THRESHOLD  # characters: a bigger input goes to the workspace memory
    protocol: bool = True  # author and reviewer take turns on the scratchpad and read it and the insights
    ask_human: bool = True  # a review disagreement the parent's author does not settle goes to a person
    max_research: int = 1  # research children per writing, for "needs research" answers (0: fail at once)
    research_module: str = ""  # the research child's source; "" is the stdlib's research.pipe
    data_driven: bool = False  # design (examples, expectations) and its review before the code (decompose/dataflow.py)
    simulation_rounds: int = 2  # failed simulations sent back to the author before the code review
    review_outputs: bool = False  # a reviewer checks each block's outputs at run time (decompose/output_review.py)

    @property
    def limits(self) -> ChildLimits:
        return ChildLimits(self.child_max_steps, self.child_max_seconds, self.max_output_chars, self.child_max_memory)

    @classmethod
    def from_config(cls, path: Path | str = "orgtree.toml") -> DecomposeSettings:
        from orgtree_lang.runtime.config import ConfigError, config_section

        section = config_section("decompose", path, types={
            "max_repairs": int, "max_review_rounds": int, "max_depth": int, "context_share": (int, float),
            "similarity": (int, float), "child_max_steps": int, "child_max_seconds": (int, float),
            "max_output_chars": int, "child_max_memory": int, "max_statements": int,
            "memory_threshold": int, "protocol": bool, "ask_human": bool,
            "max_research": int, "research_module": str, "data_driven": bool, "simulation_rounds": int,
            "review_outputs": bool})
        if section.get("simulation_rounds", 0) < 0:
            raise ConfigError(f"{path}: [decompose] simulation_rounds must be 0 or more, got "
                              f"{section['simulation_rounds']!r}")
        for key in ("child_max_steps", "child_max_seconds", "max_output_chars", "child_max_memory", "max_statements",
                    "memory_threshold"):
            if key in section and section[key] <= 0:
                raise ConfigError(f"{path}: [decompose] {key} must be more than 0, got {section[key]!r} (a generated "
                                  "module's limits can be raised, not switched off)")
        return cls(**{k: v for k, v in section.items() if k in cls.__dataclass_fields__})


class Decomposer:
    """Resolves ambiguous blocks for one program; `depth` counts how many generated modules enclose it."""

    def __init__(self, *, author, reviewer, registry, workspace: Path, parent_file: str, parent_source: str,
                 settings: DecomposeSettings | None = None, depth: int = 0, max_repairs: int | None = None,
                 max_review_rounds: int | None = None, max_depth: int | None = None, goal=None,
                 parent_author: tuple[str, str] | None = None, human=None) -> None:
        """`parent_author` is (module path, conversation) of the author that wrote the module this program is, for
        a generated one; `human(question) -> answer` asks the human node. Both settle review disagreements."""
        settings = settings or DecomposeSettings()
        overrides = {k: v for k, v in (("max_repairs", max_repairs), ("max_review_rounds", max_review_rounds),
                                       ("max_depth", max_depth)) if v is not None}
        if overrides:
            import dataclasses

            settings = dataclasses.replace(settings, **overrides)
        self.settings = settings
        self.author = author
        self.reviewer = reviewer
        self.registry = registry
        self.workspace = Path(workspace)
        self.parent_file = parent_file
        self.parent_source = parent_source
        self.depth = depth
        # What encloses this program's blocks: a child inherits the root program's description and path.
        self.goal = goal if goal is not None else Goal.of_program(parent_file, parent_source)
        self.parent_author = parent_author
        # Spec hash -> (block node, set when done) while a block finds or writes the module for that spec.
        self._writing: dict[str, tuple[str, threading.Event]] = {}
        self.human = human
        self.store = ModuleStore(self.workspace)
        self._programs: dict[str, tuple[SavedModule, Any]] = {}  # spec hash -> module and program, this run

    @property
    def max_depth(self) -> int:
        return self.settings.max_depth

    def __call__(self, block) -> dict[str, Any]:
        """The outputs of `block` (a vm.blocks.BlockContext): from a module saved or written for it, run as a child."""
        spec, inputs = block.spec, block.inputs
        if self.depth >= self.max_depth:
            raise PipeRuntimeError(f"ambiguous block `{spec.name}` is {self.depth} generated modules deep, the "
                                   f"limit is {self.max_depth}", kind="ambiguous", catchable=False,
                                   hint="the blocks keep breaking down into more unknown steps; write this step "
                                        "yourself or raise the limit ([decompose] max_depth in orgtree.toml)")
        from orgtree_lang.decompose.store import StoreError
        from orgtree_lang.models.base import ModelError
        from orgtree_lang.review.errors import ReviewError

        digest = spec_hash(spec)
        self._await_writer(digest, block)
        if digest in self._programs:  # reached again in this run: no file is read, nothing is compiled again
            saved, program = self._programs[digest]
            block.note(f"reused {saved.path}")
            return self._run_child(program, block, saved, self._metered(block)[0])
        writing = threading.Event()
        self._writing[digest] = (block.node, writing)
        try:
            saved = self.store.find(digest)
            author, reviewer = self._metered(block)
            program = None
            if saved is not None:
                try:
                    program = checked_for_reuse(saved, spec, self.registry)
                except ReuseRefused as err:
                    raise PipeRuntimeError(f"ambiguous block `{spec.name}`: {err}", kind="ambiguous", catchable=False,
                                           hint=err.hint) from None
                block.note(f"reused {saved.path}")
            elif self.author is None:
                raise PipeRuntimeError(
                    f"ambiguous block `{spec.name}` cannot run: no module is saved for it and no model is configured "
                    "to write one", kind="ambiguous", catchable=False,
                    hint="configure a model for the decomposer with `--model NAME` or the PIPE_MODEL environment "
                         "variable (or replace the block with skill calls)")
            else:
                try:
                    # Saved modules that fit this block's signature: the most similar may be reused as they are; the
                    # author sees the rest, down to half the similarity, for reference.
                    similar = similar_modules(self.store, spec, self.registry, self.settings.similarity / 2)
                    if getattr(block, "counter", None) is not None:
                        # Resolved concurrently (vm/block_calls.py): whether a sibling block's module is saved yet
                        # depends on timing, and a resume must make the same choices as the run.
                        similar = [(score, m) for score, m in similar
                                   if not m.provenance.get("parent", "").startswith(f"{self.parent_file}:")]
                    saved = self._reuse_similar(spec, digest, reviewer, block,
                                                [m for score, m in similar if score >= self.settings.similarity])
                    if saved is None:
                        block.note("writing a module")
                        saved = self._write_module(spec, inputs, digest, author, reviewer, block,
                                                   [m for _, m in similar])
                        block.note(f"written to {saved.path} ({saved.provenance.get('review-rounds')} "
                                            "review round(s))")
                except (ModelError, ReviewError, StoreError) as err:
                    kind = "model" if isinstance(err, ModelError) else "ambiguous"
                    raise PipeRuntimeError(f"ambiguous block `{spec.name}`: {err}", kind=kind, catchable=False,
                                           hint=getattr(err, "hint", None) or "nothing was saved; fix the cause "
                                           "and run again") from err
            if program is None:
                from orgtree_lang.compile.api import compile_source

                program = compile_source(saved.text, str(saved.path), self.registry).program
            self._programs[digest] = (saved, program)
        finally:
            if self._writing.get(digest, (None, None))[1] is writing:
                del self._writing[digest]
            writing.set()
        return self._run_child(program, block, saved, author)

    def _await_writer(self, digest: str, block) -> None:
        """While another block of this run finds or writes the module for the same spec (blocks of parallel
        branches resolve concurrently, vm/block_calls.py), wait for it, so the module is written and saved once;
        never for a block this one runs inside."""
        while digest in self._writing:
            node, writing = self._writing[digest]
            if block.node.startswith(node + "/"):
                return
            block.spend.away(writing.wait)

    def _metered(self, block):
        """The author and reviewer, their calls counted against the run tree's budget and charged to the block."""
        from orgtree_lang.durable.model_steps import journaled_calls
        from orgtree_lang.models.metered import MeteredModel

        if self.author is None:
            return self.author, self.reviewer
        spec, spend, journal = block.spec, block.spend, journaled_calls(block)
        return (MeteredModel(self.author, spend=spend, what=f"writing block `{spec.name}`", journal=journal),
                MeteredModel(self.reviewer, spend=spend, what=f"reviewing block `{spec.name}`", journal=journal))

    # ---- reusing a module made for another block ----------------------------------

    def _reuse_similar(self, spec: AmbiguousSpec, digest: str, reviewer, block,
                       candidates: list[SavedModule]) -> SavedModule | None:
        """A saved module of a similar block that fits this one and that a reviewer accepts, saved for this block."""
        for module in candidates[:2]:
            block.note(f"asking a reviewer whether {module.path.name} can be reused")
            conversation = uuid.uuid4().hex
            verdict = ask_reuse(reviewer, spec, module, conversation)
            if not verdict.accept:
                continue
            provenance = {
                **self._provenance_base(spec, digest),
                "reused-from": str(module.path),
                "reuse-accepted-by": f"{reviewer.name} conversation {conversation}: {verdict.reasons}",
                "review-rounds": "0",
                "date": time.strftime("%Y-%m-%d %H:%M:%S"),
            }
            return self.store.save(self.parent_file, spec.name, module.body, provenance, self.registry)
        return None

    # ---- writing a module ------------------------------------------------------

    def _provenance_base(self, spec: AmbiguousSpec, digest: str) -> dict[str, str]:
        return {"block": spec.name, "description": spec.doc, "parent": f"{self.parent_file}:{spec.span.line}",
                "spec-hash": digest}

    def _write_module(self, spec: AmbiguousSpec, inputs: dict[str, Any], digest: str, author, reviewer, block,
                      similar: list[SavedModule]):
        from orgtree_lang.decompose.attempts import AttemptLog
        from orgtree_lang.models.base import Message
        from orgtree_lang.models.tokens import context_window, count_tokens
        from orgtree_lang.decompose.escalate import escalate, judges_for
        from orgtree_lang.decompose.journaled import review_subject
        from orgtree_lang.review.errors import ReviewError
        from orgtree_lang.review.ledger import ConcernLedger
        from orgtree_lang.review.reviewer import review_loop

        related = [(m.provenance.get("block", m.path.stem), m.body) for m in similar]
        window = context_window(author.name)
        budget = int(window * self.settings.context_share)
        if self.settings.protocol:
            author, reviewer = seated(author, reviewer, spec, block, self.workspace, budget)
            budget -= reserved(budget)  # the pad and the insights seed the prompt within the same budget
        described = described_inputs(spec, inputs, self.workspace, self.settings.memory_threshold, author.name,
                                     window, budget)
        try:
            request = build_request(spec, inputs, self.registry, self.parent_file, self.parent_source, related,
                                    count=lambda text: count_tokens(text, author.name), budget=budget,
                                    fixed=LANGUAGE_NOTES, share=self.settings.context_share,
                                    window=window, described=described)
        except PromptTooLarge as err:
            raise PipeRuntimeError(str(err), kind="ambiguous", catchable=False,
                                   hint="shorten the block's docstring, or use a model with a larger context "
                                        "window (or raise [decompose] context_share)") from None
        conversation = uuid.uuid4().hex

        def research(need) -> str:  # the author's next request after a "needs research" answer
            return self._researched(need, spec, block, reviewer)

        flow = ExampleFlow(self, spec, _generated_context(block.context))
        messages = [Message("system", LANGUAGE_NOTES), Message("user", flow.opening(request.text))]
        attempts = AttemptLog(self.workspace)

        def ask(text: str, phase: str) -> tuple[str, str]:
            messages.append(Message("user", text))
            answers: list[str] = []
            revised = self._valid_module(spec, digest, messages, conversation, author, attempts, phase,
                                         answers=answers, research=research)
            return revised, answers[-1] if answers else ""

        try:
            if flow.designs:
                flow.design_step(messages, conversation, author, reviewer, attempts, digest, block)
            body = flow.checked(self._valid_module(spec, digest, messages, conversation, author, attempts, "write",
                                                   research=research),
                                ask, block.note)

            def revise(artifact: str, concerns) -> tuple[str, dict[str, str]]:
                listing = "\n".join(f"- {c.id} ({c.severity}): {c.evidence} Suggested: {c.suggested_fix}"
                                    for c in concerns)
                revised, answer = ask(f"A reviewer raised these concerns about the module:\n{listing}\n"
                                      "Reply with the revised module in one ```pipe block, then one line "
                                      "per concern: `ID: resolved: why` or `ID: rejected: why`.", "revise")
                resolutions = _resolutions(answer, concerns)
                revised = flow.checked(revised, ask, block.note)
                flow.record(ledger, subject, conversation)
                return flow.artifact(revised), resolutions

            with ConcernLedger.for_workspace(self.workspace) as ledger:
                # Each writing of a module is reviewed afresh: concerns settled for an earlier module are not
                # inherited. The subject is numbered, not random, so prompts (and cassettes) repeat exactly.
                base = f"{Path(self.parent_file).name}:{spec.name}:{digest}"
                subject = review_subject(block, ledger, base)
                block.note(f"in review ({subject})")
                flow.record(ledger, subject, conversation)
                goal = self.goal.describe(spec, self.parent_file, self.parent_source)

                def context(artifact: str) -> str:
                    return "\n\n".join(part for part in (goal, skill_docs(artifact, self.registry)) if part)

                def review(artifact: str, rounds: int):
                    return review_loop(subject, flow.spec_text(spec_text(spec)), artifact, language=language_card(),
                                       author=author, reviewer=reviewer, revise=revise, ledger=ledger,
                                       max_rounds=rounds, author_conversation=conversation, context=context)

                trail: list[str] = []
                try:
                    outcome = review(flow.artifact(body), self.settings.max_review_rounds)
                except ReviewError as failed:
                    judges = judges_for(author, self.parent_author, self._human(block))
                    if not failed.open_concerns or failed.outcome is None or not judges:
                        raise
                    outcome, trail = escalate(failed, judges, subject=subject, ledger=ledger,
                                              spec_text=flow.spec_text(spec_text(spec)), goal=goal, revise=revise,
                                              review_again=lambda artifact: review(artifact, 1), note=block.note)
        finally:
            attempts.close()
        provenance = {
            **self._provenance_base(spec, digest),
            "review-subject": subject,
            "author-model": author.name,
            "reviewer-model": reviewer.name,
            "author-conversation": outcome.author_conversation,
            "reviewer-conversations": ",".join(outcome.reviewer_conversations),
            "review-rounds": str(outcome.rounds),
            "concerns": ", ".join(f"{k} {v}" for k, v in outcome.counts.items()),
            "prompt-tokens": f"{request.tokens} of {request.budget} allowed (+ {request.fixed_tokens} of language card)",
            **({"escalated": "; ".join(trail)} if trail else {}),
            **flow.provenance(),
            "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        }
        return self.store.save(self.parent_file, spec.name, flow.saved(outcome.artifact), provenance, self.registry)

    def _researched(self, need, spec: AmbiguousSpec, block, reviewer) -> str:
        """Run the research child on the author's questions, have its findings reviewed as insights, and return
        the author's next request with the accepted ones."""
        from orgtree_lang.compile.api import compile_source
        from orgtree_lang.decompose.research import propose_findings, research_source, web_allowed

        module = self.settings.research_module
        file, source = research_source(str(self.workspace / module) if module else "")
        program = compile_source(source, file, self.registry).program
        web = web_allowed(self.workspace / "orgtree.toml")
        block.note(f"researching ({'web and ' if web else ''}workspace memory): {' | '.join(need.questions)}")
        result = block.run_child(program, None, context=_generated_context(block.context),
                                 limits=self.settings.limits.budget(), name="research",
                                 inputs={"questions": need.questions or need.reasons, "web": web})
        findings = propose_findings(self.workspace, result, spec.name, reviewer)
        block.note(f"research: {len(findings.accepted)} finding(s) accepted, {len(findings.rejected)} rejected")
        return findings.message(need)

    def _human(self, block):
        """How to ask the human node for `block`: the given seam, else the run's inbox (a durable run only)."""
        if self.human is not None or not self.settings.ask_human:
            return self.human
        return block.ask_human if block.effects is not None else None

    def _valid_module(self, spec: AmbiguousSpec, digest: str, messages: list, conversation: str, author,
                      attempts, phase: str, answers: list[str] | None = None, research=None) -> str:
        """Ask the author until a module validates, sending the problems back (at most max_repairs repairs).

        Every answer is recorded in the attempt log with its problems."""
        from orgtree_lang.models.base import Message

        problems: list[str] = []
        tries, attempt, researched = self.settings.max_repairs + 1, 0, 0
        while attempt < tries:
            attempt += 1
            answer = author.complete(messages, conversation_id=conversation).text
            messages.append(Message("assistant", answer))
            if answers is not None:
                answers.append(answer)
            need = needs_research(answer)
            if need is not None:
                attempts.record(spec.name, digest, attempt, phase, author.name, conversation, answer,
                                ["needs research"])
                record_need(self.workspace, spec.name, digest, f"{self.parent_file}:{spec.span.line}", need,
                            author.name, conversation)
                if research is not None and researched < self.settings.max_research:
                    researched, tries = researched + 1, tries + 1  # a researched answer is not a repair
                    messages.append(Message("user", research(need)))
                    continue
                raise PipeRuntimeError(
                    f"ambiguous block `{spec.name}` needs research before it can be written: "
                    f"{'; '.join(need.reasons)}", kind="ambiguous", catchable=False,
                    hint="answer these questions in the block's docstring and run again: "
                         f"{' | '.join(need.questions) or '(none given)'}")
            try:
                body = extract_module(answer)
            except ExtractError as err:
                problems = [str(err)]
            else:
                result = validate_module(body, spec, self.registry, f"{spec.name}.pipe")
                problems = [] if result.ok else result.problems
                if not problems:
                    problems = size_problems(body, f"{spec.name}.pipe", self.settings.max_statements)
            attempts.record(spec.name, digest, attempt, phase, author.name, conversation, answer, problems)
            if not problems:
                return body
            messages.append(Message("user", "The module is not accepted yet:\n" + "\n\n".join(problems) +
                                    "\nReply with the corrected module in one ```pipe block."))
        raise PipeRuntimeError(
            f"no valid module for ambiguous block `{spec.name}` after {tries} attempts; the last "
            f"problems: {' | '.join(p.splitlines()[0] for p in problems)}", kind="ambiguous", catchable=False,
            hint="make the block's docstring more precise, or write this step yourself")

    # ---- running it ------------------------------------------------------------

    def _run_child(self, program, block, saved: SavedModule, author):
        from orgtree_lang.decompose.coerce import fit_outputs, model_reshaper
        from orgtree_lang.vm.blocks import ChildOverLimit

        spec, path = block.spec, saved.path
        if any(use == "ctx" or use.startswith("ctx.") for use in program.uses):
            # The module reads its inputs from the workspace memory: this run's values, under their tags, whatever
            # their size (a module written for a big input may be reused for a small one).
            remember_inputs(spec, block.inputs, self.workspace, 0)
        child_decomposer = Decomposer(
            author=self.author, reviewer=self.reviewer, registry=self.registry, workspace=self.workspace,
            parent_file=str(path), parent_source=saved.text, settings=self.settings, depth=self.depth + 1,
            goal=self.goal.inside(self.parent_file, spec), human=self.human,
            parent_author=(str(path), saved.provenance.get("author-conversation") or f"module:{path}"))
        limits = self.settings.limits
        try:
            # Every child runs within a generated module's limits, even when the parent has none, and its
            # workspace keeps program sources read-only whatever the settings say.
            result = block.run_child(program, child_decomposer, context=_generated_context(block.context),
                                     limits=limits.budget())
        except ChildOverLimit as err:
            raise self._over_limits(spec, saved, limits.describe(err.limit), err) from err
        except PipeRuntimeError as err:
            # Point at the child's line, with the child's text to show it, and keep its frames on the stack.
            inside = err.span is not None and Path(err.span.file) == path
            wrapped = PipeRuntimeError(f"the generated module for `{spec.name}` ({path}) failed: {err.message}",
                                       kind=err.kind, span=err.span, hint=err.hint or f"read or fix it: {path}",
                                       catchable=err.catchable,
                                       source=err.source or (path.read_text(encoding="utf-8") if inside else None))
            wrapped.frames_below = list(err.stack)
            raise wrapped from err
        if len(spec.outputs) == 1:
            outputs = {spec.outputs[0][0]: result}
        elif isinstance(result, RecordValue) and result.record_name == OUTPUTS_RECORD:
            outputs = dict(result.fields)
        else:
            raise PipeRuntimeError(f"the generated module for `{spec.name}` returned {display(result, True)}, not "
                                   f"an {OUTPUTS_RECORD} record", kind="ambiguous")
        if limits.output_chars is not None and output_size(outputs, limits.output_chars) > limits.output_chars:
            raise self._over_limits(spec, saved, limits.describe("output"), None)
        reshaper = model_reshaper(author, block.records, uuid.uuid4().hex) if author is not None else None
        outputs = fit_outputs(outputs, spec, block.records, reshaper)
        if self.settings.review_outputs and self.reviewer is not None:
            from orgtree_lang.decompose.output_review import outputs_subject, review_outputs

            block.note("reviewing its outputs")
            review_outputs(self._metered(block)[1], spec, block.inputs, outputs,
                           spec_text=spec_with_contracts(f"The step `{spec.name}`:\n{spec.doc}", spec),
                           workspace=self.workspace,
                           subject=outputs_subject(self.parent_file, spec, spec_hash(spec)), node=block.node)
        return outputs

    def _over_limits(self, spec: AmbiguousSpec, saved: SavedModule, limit: str, err: PipeRuntimeError | None):
        """The error for a child that went over a generated module's limit, after marking its module so that later
        runs refuse it rather than run it again with no model."""
        from orgtree_lang.decompose.reuse import accept_name

        self.store.mark_budget_failure(saved, f"went over {limit}")
        self._programs.pop(spec_hash(spec), None)
        where = f"; stopped at {err.span}" if err is not None and err.span else ""
        return PipeRuntimeError(
            f"the generated module for `{spec.name}` ({saved.path}) went over the {limit} a generated module may "
            f"take{where}", kind="budget", span=err.span if err is not None else None, catchable=False,
            hint=f"later runs refuse it until a person acts: fix it and approve it with `pipe modules accept "
                 f"{accept_name(saved)}`, raise the limit in orgtree.toml and approve it, or delete the file and a "
                 "model writes a new one")


def _generated_context(context):
    """The parent's skill context as a generated module gets it: the workspace with program sources read-only."""
    import dataclasses

    workspace = getattr(context, "workspace", None)
    if workspace is None or not dataclasses.is_dataclass(context):
        return context
    return dataclasses.replace(context, workspace=workspace.for_generated_module())


_RESOLUTION = re.compile(r"^\s*[-*]?\s*`?([A-Za-z0-9_.-]+)`?\s*:\s*(resolved|rejected)\s*:\s*(.+)$", re.I | re.M)


def _resolutions(answer: str, concerns) -> dict[str, str]:
    """The author's `ID: resolved|rejected: why` lines; a concern it did not mention counts as resolved."""
    found = {m.group(1): f"{m.group(2).lower()}: {m.group(3).strip()}" for m in _RESOLUTION.finditer(answer)}
    return {c.id: found.get(c.id, "resolved: the revised module addresses it") for c in concerns}
