"""Output review: after a block's module ran, an independent reviewer red-teams its outputs (inputs, outputs and
spec, never the code) for these inputs; `[decompose] review_outputs` and `review_sample` say which runs get one, and
a rejection is evidence for a repair (decompose/repair.py)."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path
from typing import Any

from orgtree_lang.compile.code import AmbiguousSpec
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.values import display_short

# Each value is shown up to this many characters: the reviewer judges outputs, not a whole input file.
SHOWN_CHARS = 2000

SYSTEM = """You are an independent reviewer. A step of a program has just run. You did not write it and you do not \
see its code: you see its spec, the inputs it got and the outputs it gave. Red-team the outputs: find where they \
do not meet the spec for these inputs.

Rules:
- The spec is fixed. Every concern must rest on a part of the spec: quote or name it in `spec_basis`; with \
`spec_basis` "" it is recorded as out of scope and not acted on.
- `blocking` means the outputs are wrong for these inputs; `minor` means worth noting only.
- Answer with one JSON object and nothing else, matching this JSON schema:

{schema}
"""


MODES = ("off", "first", "all")


def review_mode(value: object) -> str:
    """`review_outputs` as one of MODES (true and false, as older files say it, are "all" and "off")."""
    if value is True:
        return "all"
    if value is False:
        return "off"
    return str(value)


def sampled(node: str, share: float) -> bool:
    """Whether the block reach `node` (its id names the run) is in the `share` of later runs that are reviewed: the
    same answer every time the run reaches it, so a resumed or replayed run asks for the same reviews."""
    if share <= 0:
        return False
    draw = int(hashlib.sha256(node.encode("utf-8")).hexdigest()[:8], 16) / 0x100000000
    return draw < share


REFUSED = """## It gave no outputs
It refused these inputs with `fail`, the message: {message}
Is refusing them what the spec says for these inputs? If the spec says such inputs give outputs, that is a blocking concern (quote the part of the spec)."""


def review_outputs(reviewer, spec: AmbiguousSpec, inputs: dict[str, Any], outputs: dict[str, Any], *,
                   spec_text: str, workspace: Path, subject: str, node: str, refused: str | None = None) -> list:
    """Ask `reviewer` (journaled and metered by the caller) about `outputs` (or, with `refused`, about the run's
    refusing its inputs with that `fail` message); record its concerns under `subject`; the blocking ones (with a
    spec basis), empty when the outputs (or the refusal) are accepted."""
    from orgtree_lang.models.base import Message
    from orgtree_lang.review.concerns import VERDICT_SCHEMA, Verdict
    from orgtree_lang.review.ledger import ConcernLedger

    shown_inputs = "\n".join(f"- {k} = {display_short(v, SHOWN_CHARS)}" for k, v in inputs.items()) or "(none)"
    shown_outputs = "## Outputs\n" + "\n".join(f"- {k} = {display_short(v, SHOWN_CHARS)}" for k, v in outputs.items())
    if refused is not None:
        shown_outputs = REFUSED.format(message=refused[:SHOWN_CHARS])
    messages = [Message("system", SYSTEM.format(schema=VERDICT_SCHEMA)),
                Message("user", f"Output review of {subject}.\n\n## Spec\n{spec_text.strip()}\n\n## Inputs\n"
                                f"{shown_inputs}\n\n{shown_outputs}\n\nAnswer with one JSON object "
                                "matching the schema in your instructions.")]
    from orgtree_lang.models.base import ModelError

    conversation = uuid.uuid4().hex
    try:
        verdict: Verdict = reviewer.complete(messages, schema=Verdict, conversation_id=conversation).parsed
    except ModelError as err:
        raise PipeRuntimeError(f"ambiguous block `{spec.name}`: reviewing its outputs: {err}", kind="model",
                               catchable=False, hint=getattr(err, "hint", None)) from err
    with ConcernLedger.for_workspace(workspace) as ledger:
        round_ = ledger.last_round(subject) + 1
        ledger.record_round(subject, round_, f"run:{node}", conversation, reviewer_model=reviewer.name,
                            concerns=len(verdict.concerns), summary=verdict.summary)
        for concern in verdict.concerns:
            ledger.raise_concern(subject, round_, concern, f"run:{node}", conversation)
    return [c for c in verdict.concerns if c.severity == "blocking" and c.spec_basis]


def rejection(spec: AmbiguousSpec, blocking: list, subject: str) -> PipeRuntimeError:
    """The catchable error a rejection of a block's outputs is, when no repair is made for it."""
    return PipeRuntimeError(
        f"ambiguous block `{spec.name}`: a reviewer rejected its outputs for these inputs: {listing(blocking)}",
        kind="ambiguous", hint=f"the concerns are in the ledger under {subject} (`pipe modules show NAME "
                               "--review` lists a module's review); fix the module, or catch this error")


def listing(blocking: list) -> str:
    return "; ".join(f"{c.id} ({c.spec_basis}): {c.evidence}" for c in blocking)


def outputs_subject(parent_file: str, spec: AmbiguousSpec, digest: str) -> str:
    return f"{Path(parent_file).name}:{spec.name}:{digest}:outputs"
