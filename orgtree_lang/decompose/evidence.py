"""What a generated module did wrong on real data, as evidence for its author: from the error a run of it raised, a
failed expectation or a rejection of its outputs, to the repair request's text."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from orgtree_lang.decompose.simulate import Case, pipe_literal
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.values import display_short

# Errors that say nothing wrong about the module: the run's budgets, models, people, cancellation, the machinery,
# a block node's agent that could not decide; and `fail`, the module's own deliberate answer (an input its spec
# says to refuse).
NOT_REPAIRED = frozenset({"budget", "model", "human", "cancel", "cancelled", "deadlock", "executor", "config",
                          "timeout", "replay", "decision", "disk", "fail"})
SHOWN_CHARS = 2000  # of each value in a repair request
SAVED_CASE_CHARS = 4000  # a failing case whose inputs are longer as literals is evidence only, not a saved example
_CRASH = re.compile(r"skill (\S+) crashed: (.*)", re.S)
_BLAME = re.compile(r"^\s*[-*]?\s*blame\s*:\s*`?([A-Za-z_][\w.]*)`?\s*:\s*(.+)$", re.I | re.M)


@dataclass(frozen=True)
class Evidence:
    """Why a block's module needs a repair: the failing inputs and what happened on them."""

    kind: str  # error | expectation | assumption | review | nested (a nested block ran out of repairs) | message
    #            | refusal (a `fail` its reviewer says the spec does not call for)
    what: str  # the error's message, the failed condition, the reviewer's concerns, the message
    inputs: dict[str, Any]
    outputs: dict[str, Any] | None = None  # what the module gave, when it gave something
    location: str = ""  # file:line in the module, when known
    blamed: tuple[tuple[str, str], ...] = ()  # (skill, why) this evidence blames (a crash)

    def summary(self) -> str:
        """One line, for the module's version history and notes."""
        return f"{self.kind}: {' '.join(self.what.split())[:300]}" + (f" (at {self.location})" if self.location
                                                                      else "")

    def case(self) -> Case | None:
        """The failing inputs as an example every later version must run on without error, or None when they are
        too big or not writable as literals (then they are evidence only)."""
        try:
            size = sum(len(pipe_literal(v)) for v in self.inputs.values())
        except ValueError:
            return None
        # Inputs it wrongly refused must give outputs now ("refused"); other failing inputs may be refused (`fail`).
        source = "refused" if self.kind == "refusal" else "run"
        return Case(dict(self.inputs), {}, source) if size <= SAVED_CASE_CHARS else None


@dataclasses.dataclass
class RepairsExhausted(PipeRuntimeError):
    """A module still failing when its repairs ran out: the parent block's author gets it as evidence next."""

    evidence: Evidence | None = None


@dataclass
class RepairRequest:
    """One revision asked of a module's author (decompose/writing.py write_module(repair=...))."""

    text: str  # follows the usual synthesis request in the author's first message
    cases: list[Case]  # every case the revision is simulated on besides the spec's examples
    key: str  # the version's key (`<block node>:repair-<n>`): a resumed repair records it once
    reason: str  # the evidence in a line
    previous: str  # the body hash of the version it revises
    provenance: dict[str, str] = field(default_factory=dict)
    answers: list[str] = field(default_factory=list)  # the author's answers, filled in by write_module

    def blamed(self) -> list[tuple[str, str]]:
        """The skills the author blamed (`blame: SKILL: why` lines in its answers)."""
        return [(m.group(1), m.group(2).strip()) for answer in self.answers for m in _BLAME.finditer(answer)]


def evidence_of(err: PipeRuntimeError, block, saved) -> Evidence | None:
    """The evidence a failed run of `saved` (a decompose.store.SavedModule) gives its author, or None when the
    error is not the module's to fix (a budget, a model, a person, a cancellation)."""
    chain = _chain(err)
    for link in chain:
        if isinstance(link, RepairsExhausted) and link.evidence is not None:
            return Evidence("nested", link.message, dict(block.inputs), location=where(link, saved))
    if err.kind in NOT_REPAIRED or any(getattr(link, "kind", "") in NOT_REPAIRED for link in chain):
        return None
    if err.kind == "ambiguous" and not err.catchable:
        return None  # a nested block that could not be written: not something a repair of this module changes
    inner = chain[-1] if isinstance(chain[-1], PipeRuntimeError) else err
    message = inner.message
    kind = {"assumption": "assumption", "expectation": "expectation", "example": "expectation"}.get(inner.kind,
                                                                                                    "error")
    crash = _CRASH.search(message)
    blamed = ((crash.group(1), crash.group(2).strip()),) if crash else ()
    return Evidence(kind, message, dict(block.inputs), location=where(inner, saved), blamed=blamed)


def refusal_of(err: PipeRuntimeError) -> str | None:
    """The message of the `fail` with which a run of the module refused its inputs, or None when it failed otherwise
    (a nested block that ran out of repairs is not a refusal)."""
    chain = _chain(err)
    if err.kind != "fail" or any(isinstance(link, RepairsExhausted) for link in chain):
        return None
    inner = chain[-1] if isinstance(chain[-1], PipeRuntimeError) else err
    return inner.message if inner.kind == "fail" else None


def _chain(err: BaseException) -> list[BaseException]:
    chain, seen = [err], {id(err)}
    while chain[-1].__cause__ is not None and id(chain[-1].__cause__) not in seen:
        chain.append(chain[-1].__cause__)
        seen.add(id(chain[-1]))
    return chain


def where(err, saved) -> str:
    """Where the error stopped: a line of the module as its author reads it (without the provenance header), or
    another file's `file:line`."""
    from pathlib import Path

    from orgtree_lang.decompose.store import HEADER

    span = getattr(err, "span", None)
    if span is None:
        return ""
    if span.file and Path(span.file) == Path(saved.path):
        header = sum(1 for line in saved.text.splitlines() if line.startswith(HEADER)) + 1
        return f"line {span.line - header} of the module"
    return f"{span.file}:{span.line}"


REQUEST = """{intro} Version {version} of the module:

```pipe
{module}
```

### {heading}
{what}

### The inputs it {ran}
{inputs}
{outputs}
### Its examples so far (they must still pass)
{examples}

Fix the module, or split the part that fails into nested `ambiguous` blocks (each with a docstring precise
enough to be written on its own). {saved} Reply with the whole revised module in one ```pipe block.
If a skill misbehaved (its result contradicts its documentation), add after the block one line per skill:
`blame: SKILL: what it did wrong` (it is filed as a bug report for the skill pool's review)."""


# The opening of a repair request, and the heading of its evidence: a failure on real data, or a re-plan on a message.
INTRO = {"message": ("## New evidence from a run: this is a repair asked for by a message\nThe module below was written "
                     "for this step and passed its review and simulation; while it ran on real inputs, the step's node "
                     "received a message and decided that the module must be revised (run-time evidence, not a "
                     "simulation).", "The message", "was running on"),
         "": ("## This is a repair: the module failed on real data\nThe module below was written for this step and "
              "passed its review and simulation, but a run on real inputs went wrong (run-time evidence, not a "
              "simulation).", "What went wrong", "failed on")}


def request_text(evidence: Evidence, module: str, version: int, cases: list[Case], guidance: str = "") -> str:
    """The repair request that follows the usual synthesis request in the author's first message."""
    inputs = "\n".join(f"- {k} = {display_short(v, SHOWN_CHARS)}" for k, v in evidence.inputs.items()) or "(none)"
    outputs = ""
    if evidence.outputs:
        outputs = ("\n### What it gave\n" + "\n".join(f"- {k} = {display_short(v, SHOWN_CHARS)}"
                                                       for k, v in evidence.outputs.items()) + "\n")
    examples = "\n".join(f"- {_case_line(c)}" for c in cases) or "(none)"
    saved = ("These inputs become an example the revised module must run on without an error and meet every "
             "expectation." if evidence.case() is not None else "")
    what = evidence.what + (f" (at {evidence.location})" if evidence.location else "")
    intro, heading, ran = INTRO.get(evidence.kind, INTRO[""])
    text = REQUEST.format(intro=intro, heading=heading, ran=ran, version=version, module=module.rstrip(), what=what,
                          inputs=inputs, outputs=outputs, examples=examples, saved=saved)
    if guidance:
        text += f"\n\nA person who read this failure adds: {guidance}"
    return text


def _case_line(case: Case) -> str:
    inputs = ", ".join(f"{k} = {display_short(v, 160)}" for k, v in case.inputs.items()) or "(no inputs)"
    if case.fails is not None:
        return f"{inputs} -> fails with {display_short(case.fails, 160)} ({case.source})"
    if not case.outputs and case.source == "refused":
        return f"{inputs} -> gives outputs (not `fail`) and meets every expectation (refused wrongly before)"
    if not case.outputs:
        return f"{inputs} -> runs without an error and meets every expectation ({case.source})"
    outputs = ", ".join(f"{k} = {display_short(v, 160)}" for k, v in case.outputs.items())
    return f"{inputs} -> {outputs} ({case.source})"
