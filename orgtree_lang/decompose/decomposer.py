"""The VM's ambiguous-block hook: reuse a saved module, or have one written, repaired, reviewed and saved; run it."""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path
from typing import Any

from orgtree_lang.compile.code import AmbiguousSpec
from orgtree_lang.decompose.extract import ExtractError, extract_module
from orgtree_lang.decompose.spec import OUTPUTS_RECORD, required_signature, spec_hash
from orgtree_lang.decompose.store import ModuleStore
from orgtree_lang.decompose.validate import validate_module
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.values import RecordValue, display

SUMMARY_CHARS = 300  # how much of each input value the author sees
CONTEXT_LINES = 8  # source lines shown around the block

LANGUAGE_NOTES = """\
You write modules in .pipe, a small indentation-based language like Python:
- `use NAMESPACE` lines first; then `record` types; then `pipeline name(param: type, ...) -> type:` blocks.
- Statements: assignment (`a, b = xs`), `if/elif/else`, `while`, `for x in xs`, `break`, `continue`,
  `label NAME` / `goto NAME`, `try:` / `except err:` (err.message), `fail "message"`, `return value`.
- Literals: 1, 2.5, "text", f"{x}", true, false, none, [1, 2], {"k": v}. Values are immutable:
  no `xs[0] = 1`; use skills that return new values (lists.append(xs, x)).
- Built-ins: len range str int float bool list dict min max sum abs round sorted reversed enumerate zip print.
- Skills are called with their namespace (text.split(s, ",")) and only if `use`d.
Answer with exactly one ```pipe code block holding the whole module, and nothing else."""


class Decomposer:
    """Resolves ambiguous blocks for one program; `depth` counts how many generated modules enclose it."""

    def __init__(self, *, author, reviewer, registry, workspace: Path, parent_file: str, parent_source: str,
                 max_repairs: int = 3, max_review_rounds: int = 3, depth: int = 0, max_depth: int = 3) -> None:
        self.author = author
        self.reviewer = reviewer
        self.registry = registry
        self.workspace = Path(workspace)
        self.parent_file = parent_file
        self.parent_source = parent_source
        self.max_repairs = max_repairs
        self.max_review_rounds = max_review_rounds
        self.depth = depth
        self.max_depth = max_depth
        self.store = ModuleStore(self.workspace)

    def __call__(self, spec: AmbiguousSpec, inputs: dict[str, Any], machine) -> dict[str, Any]:
        if self.depth >= self.max_depth:
            raise PipeRuntimeError(f"ambiguous block `{spec.name}` is {self.depth} generated modules deep, the "
                                   f"limit is {self.max_depth}", kind="ambiguous", catchable=False,
                                   hint="the blocks keep breaking down into more unknown steps; write this step "
                                        "yourself or raise the limit")
        from orgtree_lang.decompose.store import StoreError
        from orgtree_lang.models.base import ModelError
        from orgtree_lang.review.errors import ReviewError

        digest = spec_hash(spec)
        saved = self.store.find(digest)
        node = getattr(machine, "block_node", None)
        recorder = getattr(machine, "recorder", None)
        if saved is None:
            if recorder is not None and node is not None:
                recorder.annotate(node, detail="writing a module")
            author, reviewer = self._metered(machine, spec, node)
            try:
                saved = self._write_module(spec, inputs, digest, author, reviewer)
            except (ModelError, ReviewError, StoreError) as err:
                kind = "model" if isinstance(err, ModelError) else "ambiguous"
                raise PipeRuntimeError(f"ambiguous block `{spec.name}`: {err}", kind=kind, catchable=False,
                                       hint=getattr(err, "hint", None) or "nothing was saved; fix the cause "
                                       "and run again") from err
        elif recorder is not None and node is not None:
            recorder.annotate(node, detail=f"reused {saved.path}")
        from orgtree_lang.compile.api import compile_source

        program = compile_source(saved.path.read_text(encoding="utf-8"), str(saved.path), self.registry).program
        return self._run_child(program, spec, inputs, machine, saved.path, saved.body)

    # ---- writing a module ------------------------------------------------------

    def _metered(self, machine, spec: AmbiguousSpec, node: str | None):
        """The author and reviewer, their calls counted against the run tree's budget and charged to `node`."""
        from orgtree_lang.models.metered import MeteredModel

        meter, budget = getattr(machine, "meter", None), getattr(machine, "budget", None)
        if meter is None or budget is None:
            return self.author, self.reviewer
        recorder = getattr(machine, "recorder", None)
        return (MeteredModel(self.author, meter=meter, budget=budget, recorder=recorder, node=node,
                             what=f"writing block `{spec.name}`"),
                MeteredModel(self.reviewer, meter=meter, budget=budget, recorder=recorder, node=node,
                             what=f"reviewing block `{spec.name}`"))

    def _write_module(self, spec: AmbiguousSpec, inputs: dict[str, Any], digest: str, author, reviewer):
        from orgtree_lang.models.base import Message
        from orgtree_lang.review.ledger import ConcernLedger
        from orgtree_lang.review.reviewer import review_loop

        conversation = uuid.uuid4().hex
        messages = [Message("system", LANGUAGE_NOTES), Message("user", self._request(spec, inputs))]
        body = self._valid_module(spec, messages, conversation, author)

        def revise(artifact: str, concerns) -> tuple[str, dict[str, str]]:
            listing = "\n".join(f"- {c.id} ({c.severity}): {c.evidence} Suggested: {c.suggested_fix}"
                                for c in concerns)
            messages.append(Message("user", f"A reviewer raised these concerns about the module:\n{listing}\n"
                                            "Reply with the revised module in one ```pipe block, then one line per "
                                            "concern: `ID: resolved: why` or `ID: rejected: why`."))
            answer_holder: list[str] = []
            revised = self._valid_module(spec, messages, conversation, author, answers=answer_holder)
            return revised, _resolutions(answer_holder[-1] if answer_holder else "", concerns)

        ledger = ConcernLedger.for_workspace(self.workspace)
        # Each writing of a module is reviewed afresh: concerns settled for an earlier module are not inherited.
        # The subject is numbered, not random, so the prompts (and recorded cassettes) are the same every time.
        base = f"{Path(self.parent_file).name}:{spec.name}:{digest}"
        subject = f"{base}:{len(ledger.subjects(base + ':')) + 1}"
        outcome = review_loop(subject, self._spec_text(spec), body,
                              author=author, reviewer=reviewer, revise=revise, ledger=ledger,
                              max_rounds=self.max_review_rounds, author_conversation=conversation)
        provenance = {
            "block": spec.name,
            "parent": f"{self.parent_file}:{spec.span.line}",
            "spec-hash": digest,
            "review-subject": subject,
            "author-model": self.author.name,
            "reviewer-model": self.reviewer.name,
            "author-conversation": outcome.author_conversation,
            "reviewer-conversations": ",".join(outcome.reviewer_conversations),
            "review-rounds": str(outcome.rounds),
            "concerns": ", ".join(f"{k} {v}" for k, v in outcome.counts.items()),
            "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        }
        return self.store.save(self.parent_file, spec.name, outcome.artifact, provenance, self.registry)

    def _valid_module(self, spec: AmbiguousSpec, messages: list, conversation: str, author,
                      answers: list[str] | None = None) -> str:
        """Ask the author until a module validates, sending the problems back (at most max_repairs repairs)."""
        from orgtree_lang.models.base import Message

        problems: list[str] = []
        for _attempt in range(self.max_repairs + 1):
            answer = author.complete(messages, conversation_id=conversation).text
            messages.append(Message("assistant", answer))
            if answers is not None:
                answers.append(answer)
            try:
                body = extract_module(answer)
            except ExtractError as err:
                problems = [str(err)]
            else:
                result = validate_module(body, spec, self.registry, f"{spec.name}.pipe")
                if result.ok:
                    return body
                problems = result.problems
            messages.append(Message("user", "The module is not accepted yet:\n" + "\n\n".join(problems) +
                                    "\nReply with the corrected module in one ```pipe block."))
        raise PipeRuntimeError(
            f"no valid module for ambiguous block `{spec.name}` after {self.max_repairs + 1} attempts; the last "
            f"problems: {' | '.join(p.splitlines()[0] for p in problems)}", kind="ambiguous", catchable=False,
            hint="make the block's docstring more precise, or write this step yourself")

    def _request(self, spec: AmbiguousSpec, inputs: dict[str, Any]) -> str:
        values = "\n".join(f"- {name} ({ptype}): {_summary(inputs.get(name))}" for name, ptype in spec.inputs)
        skills = []
        for name in self.registry.names():
            if any(name == u or name.startswith(u + ".") for u in spec.uses):
                skills.append(f"- {self.registry.get(name).signature()}")
        return (f"{self._spec_text(spec)}\n\nThe input values this time:\n{values or '(none)'}\n\n"
                f"Skills the module may use (`use` them):\n{chr(10).join(skills) or '(none: built-ins only)'}\n\n"
                f"Where the block sits in {self.parent_file}:\n{self._surroundings(spec)}")

    def _spec_text(self, spec: AmbiguousSpec) -> str:
        return (f"Write a module for the step `{spec.name}`:\n{spec.doc}\n\nIt must declare exactly:\n"
                f"{required_signature(spec)}")

    def _surroundings(self, spec: AmbiguousSpec) -> str:
        lines = self.parent_source.splitlines()
        start = max(spec.span.line - 1 - CONTEXT_LINES, 0)
        end = min(spec.span.end_line + CONTEXT_LINES, len(lines))
        return "\n".join(f"{n + 1:>4} | {lines[n]}" for n in range(start, end))

    # ---- running it ------------------------------------------------------------

    def _run_child(self, program, spec: AmbiguousSpec, inputs: dict[str, Any], machine, path: Path, body: str):
        from orgtree_lang.vm.machine import Machine

        child_decomposer = Decomposer(
            author=self.author, reviewer=self.reviewer, registry=self.registry, workspace=self.workspace,
            parent_file=str(path), parent_source=path.read_text(encoding="utf-8"), max_repairs=self.max_repairs,
            max_review_rounds=self.max_review_rounds, depth=self.depth + 1, max_depth=self.max_depth)
        # The child's steps go to a trace of their own: the parent's trace holds only what a replay of the
        # parent reproduces (a replay takes the block's outputs from the journal and runs no child).
        # The child run is named after its org tree node, so a block reached twice makes two children.
        node = getattr(machine, "block_node", None) or f"{machine.state.run_id}/{spec.name}"
        tracer = None
        if machine.tracer is not None:
            from orgtree_lang.vm.trace import Tracer

            parent_trace = machine.tracer.path
            suffix = node[len(machine.state.run_id) + 1:].replace("/", ".")
            tracer = Tracer(parent_trace.with_name(f"{parent_trace.stem}.{suffix}.jsonl"), node,
                            steps=machine.tracer.steps)
        child = Machine(program, registry=machine.registry, context=machine.context,
                        budget=_remaining(machine), decomposer=child_decomposer, tracer=tracer,
                        printer=machine.printer, recorder=machine.recorder, meter=machine.meter, parent_node=node,
                        ancestors=(machine.ancestors[0] + machine.state.steps,
                                   machine.ancestors[1] + machine.state.skill_calls))
        child.start("main", dict(inputs), run_id=node)
        try:
            child.run()
        except PipeRuntimeError as err:
            raise PipeRuntimeError(f"the generated module for `{spec.name}` ({path}) failed: {err.message}",
                                   kind=err.kind, hint=err.hint or f"read or fix it: {path}",
                                   catchable=err.catchable) from err
        finally:
            if tracer is not None:
                tracer.close()
            # The child's own counters join the tree's (its children's are in the meter already).
            machine.meter.add({"steps": child.state.steps, "skill_calls": child.state.skill_calls})
        result = child.state.result
        if len(spec.outputs) == 1:
            return {spec.outputs[0][0]: result}
        if isinstance(result, RecordValue) and result.record_name == OUTPUTS_RECORD:
            return dict(result.fields)
        raise PipeRuntimeError(f"the generated module for `{spec.name}` returned {display(result, True)}, not an "
                               f"{OUTPUTS_RECORD} record", kind="ambiguous")


def _remaining(machine):
    """The parent's budget with its wall-clock limit reduced by the time it has run so far."""
    import dataclasses

    budget = machine.budget
    if budget.max_seconds is None:
        return budget
    used = machine.seconds_used()
    return dataclasses.replace(budget, max_seconds=max(budget.max_seconds - used, 0.001))


def _summary(value: Any) -> str:
    text = display(value, True)
    return text if len(text) <= SUMMARY_CHARS else text[:SUMMARY_CHARS] + f"... ({len(text)} characters in all)"


_RESOLUTION = re.compile(r"^\s*[-*]?\s*`?([A-Za-z0-9_.-]+)`?\s*:\s*(resolved|rejected)\s*:\s*(.+)$", re.I | re.M)


def _resolutions(answer: str, concerns) -> dict[str, str]:
    """The author's `ID: resolved|rejected: why` lines; a concern it did not mention counts as resolved."""
    found = {m.group(1): f"{m.group(2).lower()}: {m.group(3).strip()}" for m in _RESOLUTION.finditer(answer)}
    return {c.id: found.get(c.id, "resolved: the revised module addresses it") for c in concerns}
