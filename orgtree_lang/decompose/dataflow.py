"""The data-driven writing of a module: design and its review, then simulation whose failures go back to the
author as concerns with evidence, then review of the code with the execution evidence, then save with the tests."""

from __future__ import annotations

import uuid
from typing import Callable

from orgtree_lang.compile.code import AmbiguousSpec
from orgtree_lang.decompose.design import (CODE_REQUEST, DESIGN_REQUEST, Design, parse_design, review_artifact,
                                           spec_with_contracts)
from orgtree_lang.decompose.simulate import (Case, CaseResult, evidence_text, module_part, simulate, with_tests,
                                             without_evidence)

# ask(message, phase) -> (the validated module, the author's whole answer): one more turn of the author's conversation.
Ask = Callable[[str, str], tuple[str, str]]

SIMULATION_FAILED = """Running the module on its examples (side effects sealed) failed:
{listing}
Reply with the corrected module in one ```pipe block, then one line per concern: `ID: resolved: why`, or
`ID: rejected: why` if the example itself contradicts the spec (not for an example the program states: the
program is the spec, and only a module that passes it settles it)."""
NOT_REJECTED = "{id}: your rejection does not count: the program states this example, so the module must pass it."
# Where a case that binds the module came from: the program's examples, and the real inputs a run failed on.
BINDING = ("spec", "run")


class ExampleFlow:
    """One writing of a module, seen through its examples. Inert (every method a pass-through) when the block has
    no examples and `[decompose] data_driven` is off, so the classic flow is unchanged."""

    def __init__(self, decomposer, spec: AmbiguousSpec, context, carried: list[Case] | None = None) -> None:
        """`carried`, for a repair (decompose/repair.py): the cases of the module's earlier versions besides the
        program's own (the design's, the reviewers', and the run-time failures), which the revision must pass too."""
        self.spec = spec
        self.repairing = carried is not None
        self.carried = [c for c in carried or () if c.source != "spec"]
        self.registry = decomposer.registry
        self.settings = decomposer.settings
        self.workspace = decomposer.workspace
        self.parent_file = decomposer.parent_file
        self.parent_source = decomposer.parent_source
        self.context = context
        self.design = Design.of_spec(spec)
        self.results: list[CaseResult] = []
        # Every concern a failing case raised (by id, its latest evidence). Only evidence settles one: a passing
        # simulation of its case; the author may reject one only for an example the design or a reviewer added.
        self.raised: dict[str, object] = {}
        self.rejected: dict[str, str] = {}  # concern id -> the author's reason
        self.said: dict[str, str] = {}  # concern id -> why the author says it is fixed (kept with the evidence)
        self.refused: list[str] = []  # rejections of examples the program states, to tell the author
        self.design_subject = ""
        self.simulations = 0
        self.caught = 0  # failing cases found by simulation, before any code review

    @property
    def designs(self) -> bool:
        return bool(self.settings.data_driven) and not self.repairing  # a repair keeps the design it had

    @property
    def cases(self) -> list[Case]:
        return [Case(dict(e.inputs), dict(e.outputs), source, e.fails)
                for e, source in zip(self.design.examples, self.design.sources)] + self.carried

    @property
    def checked_spec(self) -> AmbiguousSpec:
        """The block's spec with every expectation the tests check: the program's and the design's."""
        import dataclasses

        return dataclasses.replace(self.spec, expects=tuple(self.design.expects))

    def spec_text(self, text: str) -> str:
        return spec_with_contracts(text, self.spec)

    # ---- design --------------------------------------------------------------------------------

    def additions(self) -> str:
        """What the author's first message holds besides the request: the examples the program states, and the
        design step's request."""
        parts = []
        if self.design.examples or self.design.expects:
            parts.append("The program states these examples and expectations in the block; the module is run on "
                         f"them before review:\n```pipe\n{self.design.text(self.spec)}\n```")
        if self.designs:
            parts.append(DESIGN_REQUEST)
        return "\n\n".join(parts)

    def opening(self, request_text: str) -> str:
        """The author's first message: the request, then the additions."""
        return "\n\n".join(part for part in (request_text, self.additions()) if part)

    def design_step(self, turns, reviewer, block) -> None:
        """Have the author state the design (through `turns`, decompose/answers.py), have it reviewed against the
        spec, and ask for the code."""
        from orgtree_lang.decompose.answers import resolutions
        from orgtree_lang.decompose.journaled import review_subject
        from orgtree_lang.models.base import Message
        from orgtree_lang.review.ledger import ConcernLedger
        from orgtree_lang.review.reviewer import review_loop
        from orgtree_lang.decompose.prompt import spec_text
        from orgtree_lang.syntax.card import language_card

        note = block.note
        note("designing examples and expectations")
        first = self._valid_design(turns, "design")
        latest = [first]

        def revise(artifact: str, concerns) -> tuple[str, dict[str, str]]:
            listing = "\n".join(f"- {c.id} ({c.severity}): {c.evidence} Suggested: {c.suggested_fix}" for c in concerns)
            turns.messages.append(Message("user", f"A reviewer raised these concerns about the design:\n{listing}\n"
                                                  "Reply with the revised design (the `examples:` and `expect` "
                                                  "lines) in one ```pipe block, then one line per concern: `ID: "
                                                  "resolved: why` or `ID: rejected: why`."))
            answers: list[str] = []
            latest.append(self._valid_design(turns, "design-revise", answers))
            return review_artifact(self.spec, latest[-1]), resolutions(answers[-1] if answers else "", concerns)

        with ConcernLedger.for_workspace(self.workspace) as ledger:
            from pathlib import Path

            base = f"{Path(self.parent_file).name}:{self.spec.name}:{turns.digest}:design"
            # Numbered like the code review's subject, and journaled: a resumed run reviews under the same one.
            self.design_subject = review_subject(block, ledger, base)
            note(f"design in review ({self.design_subject})")
            review_loop(self.design_subject, self.spec_text(spec_text(self.spec)), review_artifact(self.spec, first),
                        language=language_card(), author=turns.author, reviewer=reviewer, revise=revise,
                        ledger=ledger, max_rounds=self.settings.max_review_rounds,
                        author_conversation=turns.conversation)
        self.design = Design.settled(self.spec, first, latest[-1])
        turns.messages.append(Message("user", CODE_REQUEST.format(design=self.design.text(self.spec))))

    def _valid_design(self, turns, phase: str, answers: list[str] | None = None) -> Design:
        return turns.until_valid("design", phase,
                                 lambda answer: parse_design(answer, self.spec, self.registry, self.parent_source),
                                 "make the block's docstring more precise, or turn [decompose] data_driven off",
                                 answers)

    # ---- simulation ----------------------------------------------------------------------------

    def checked(self, body: str, ask: Ask, note=lambda text: None) -> str:
        """Run `body` on the cases; send failures back through `ask` while simulation rounds remain."""
        if not self.cases:
            return body
        from orgtree_lang.decompose.answers import resolutions

        for round_ in range(self.settings.simulation_rounds + 1):
            note(f"simulating {len(self.cases)} example(s)")
            self.simulations += 1
            spec = self.checked_spec
            self.results = simulate(with_tests(body, spec, self.cases), f"{spec.name}.pipe", spec, self.cases,
                                    self.registry, self.context)
            failed = [r for r in self.results if r.outcome == "failed"]
            self.caught += len(failed)
            concerns = [self._concern(r) for r in failed]
            self.raised.update((c.id, c) for c in concerns)
            fresh = [c for c in concerns if c.id not in self.rejected]
            if not fresh or round_ == self.settings.simulation_rounds:
                return body
            listing = "\n".join([f"- {c.id}: {c.evidence}" for c in fresh] + self.take_refused())
            body, answer = ask(SIMULATION_FAILED.format(listing=listing), "simulate")
            self.answered(resolutions(answer, fresh))
        return body

    def answered(self, answers: dict[str, str]) -> None:
        """Keep the author's answers (`ID: resolved|rejected: why`) to failing cases' concerns: a claimed fix is
        kept for the record (the next simulation decides), a rejection counts unless the program states the
        example (then the author is told so in its next request)."""
        for concern_id, answer in answers.items():
            if concern_id not in self.raised:
                continue
            action, _, why = answer.partition(": ")
            if action == "resolved":
                self.said[concern_id] = why
            elif self.binding(concern_id):
                self.refused.append(NOT_REJECTED.format(id=concern_id))
            else:
                self.rejected[concern_id] = why or action

    def take_refused(self) -> list[str]:
        refused, self.refused = self.refused, []
        return refused

    def held(self, concern_id: str) -> bool:
        """Whether only evidence settles the concern (a failing case's): not the reviewer's silence, nor the
        author's word that it is fixed (review/reviewer.py asks)."""
        return concern_id in self.raised

    def binding(self, concern_id: str) -> bool:
        """Whether the concern is a failing example the program states: the spec itself, which neither the author
        nor a judge may reject (decompose/escalate.py asks)."""
        result = self._result(concern_id)
        return result is not None and result.case.source in BINDING

    def _result(self, concern_id: str) -> CaseResult | None:
        return next((r for r in self.results if f"example-{r.number}" == concern_id), None)

    def refuse_failing(self) -> None:
        """Raise when the module as it will be saved fails an example the program states (the last simulation
        ran it): a guard at the save, whatever settled the review."""
        from orgtree_lang.runtime.errors import PipeRuntimeError

        failing = [r for r in self.results if r.outcome == "failed" and r.case.source in BINDING]
        if failing:
            raise PipeRuntimeError(
                f"ambiguous block `{self.spec.name}`: the module fails example(s) the program states, so it is not "
                "saved: " + "; ".join(f"example {r.number}: {r.evidence(self.spec)}" for r in failing),
                kind="ambiguous", catchable=False,
                hint="check that the example is right; if it is, make the docstring say what the example needs")

    def _concern(self, result: CaseResult):
        from orgtree_lang.review.concerns import Concern

        return Concern(id=f"example-{result.number}", severity="blocking",
                       spec_basis=f"example {result.number} ({result.case.source}) of the block's examples",
                       evidence=result.evidence(self.spec),
                       suggested_fix="make the module give the expected outputs for this input")

    def record(self, ledger, subject: str, conversation: str) -> None:
        """Bring the code review's ledger up to the last simulation: a failing case's concern is open (raised,
        or reopened with its new evidence) unless the author rejected it; a case that passes now resolves its
        concern with that evidence. A case that could not be simulated (a sealed skill) settles nothing."""
        round_ = ledger.last_round(subject)
        source = f"simulation-{uuid.uuid4().hex[:12]}"
        status = {row["concern_id"]: row["status"] for row in ledger.history(subject)}
        for concern_id, concern in self.raised.items():
            result = self._result(concern_id)
            outcome = result.outcome if result is not None else "inconclusive"
            if outcome == "failed":
                concern = self._concern(result)
            if status.get(concern_id) is None or (outcome == "failed" and concern_id not in self.rejected):
                ledger.raise_concern(subject, round_, concern.model_copy(update={"still_present": True}),
                                     conversation, source)
            if _status(ledger, subject, concern_id) != "open":
                continue
            if outcome == "passed":
                said = f"; the author: {self.said[concern_id]}" if concern_id in self.said else ""
                ledger.resolve(subject, concern_id, f"example {result.number} passed when simulated (run "
                                                    f"{self.simulations}): {result.evidence(self.spec)}{said}",
                               round=round_, conversation=source)
            elif outcome == "failed" and concern_id in self.rejected:
                ledger.reject(subject, concern_id, self.rejected[concern_id], round=round_, conversation=conversation)

    # ---- review and save -----------------------------------------------------------------------

    def artifact(self, body: str) -> str:
        """What the code reviewer reads: the module, its examples as tests, and what running them gave."""
        if not self.cases:
            return body
        return with_tests(body, self.checked_spec, self.cases) + "\n" + evidence_text(self.spec, self.results)

    def saved(self, artifact: str) -> str:
        """The module as saved: with its tests, without the evidence."""
        if not self.cases:
            return artifact
        return with_tests(module_part(without_evidence(artifact)), self.checked_spec, self.cases)

    def provenance(self) -> dict[str, str]:
        if not self.cases:
            return {}
        sources = [c.source for c in self.cases]
        counts = {k: sum(r.outcome == k for r in self.results) for k in ("passed", "failed", "inconclusive")}
        found = {"examples": f"{len(sources)} ({sources.count('spec')} from the program, {sources.count('design')} "
                             f"from the design, {sources.count('reviewer')} from the reviewer"
                             + (f", {sources.count('run')} from runs" if "run" in sources else "") + ")",
                 "simulation": f"{self.simulations} run(s); last: " + ", ".join(f"{k} {v}" for k, v in counts.items())
                               + f"; failures caught before code review: {self.caught}"}
        if self.design_subject:
            found["design-review-subject"] = self.design_subject
        return found


def _status(ledger, subject: str, concern_id: str) -> str | None:
    return next((row["status"] for row in ledger.history(subject) if row["concern_id"] == concern_id), None)
