"""The agent of a block's node decides what a message means: an org.block_node.MessageView in, one validated decision
out ({"kind", "note", "answer", "child"}), each answer a journaled model call of the block, metered to a `decision`
node of its own under the block's node (docs/org.md, "Decisions"), one repair for an invalid answer, then an error.
"""

from __future__ import annotations

import functools
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orgtree_lang.decompose.evidence import Evidence
from orgtree_lang.decompose.repair import repair
from orgtree_lang.decompose.spec import spec_hash
from orgtree_lang.org.block_node import KINDS, BlockNode, MessageView
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.vm import events

SYSTEM = """You are the node of the step `{block}` of a running program: an agent responsible for that step. A \
generated module carries the step out; its nodes are your children. One of them sent you the message below. \
Decide what it means for your step, and answer with exactly one of these decisions:

- "ignore": it needs nothing from you; say why in `note` (the note goes on the shared scratchpad).
- "answer": reply to the sender; `answer` is the text it receives as a message.
- "forward": it is above your step's scope: pass it to {above}.
- "route": it concerns one of your children more than you: pass it to that child, named in `child` (one of the \
names listed under "Your children").
- "replan": it shows the module cannot do the step as it is written: the module is revised with the message as \
evidence, and the step starts again from its inputs.

The step's spec:
{spec}

Answer with one JSON object and nothing else:
{{"kind": "ignore" | "answer" | "forward" | "route" | "replan", "note": "why, in a sentence", "answer": "the reply, \
for answer", "child": "the child's name, for route"}}"""

REPAIR = ("Your decision cannot be carried out: {problem}\nAnswer again with one JSON object as your instructions "
          "say, and nothing else.")


@functools.cache
def decision_schema() -> type:
    """The pydantic model of one decision (the JSON the agent answers); pydantic is imported when one is read."""
    from typing import Literal

    import pydantic

    class Decision(pydantic.BaseModel):
        kind: Literal[KINDS]  # type: ignore[valid-type]
        note: str = ""
        answer: str = ""
        child: str = ""

    return Decision


class MessageReader:
    """The agent of one block's node (org.block_node.Decide): `model` (the block's author model, or `[org]
    message_agent`), metered to each decision's node and journaled as a step of the block."""

    def __init__(self, model, block, workspace: Path, *, protocol: bool = True, reviewer=None) -> None:
        self.model, self.block, self.workspace = model, block, Path(workspace)
        self.protocol, self.reviewer = protocol, reviewer

    def __call__(self, view: MessageView) -> dict[str, Any]:
        from orgtree_lang.durable.model_steps import journaled_calls
        from orgtree_lang.models.base import Message, ModelError
        from orgtree_lang.models.metered import MeteredModel
        from orgtree_lang.vm.budget import NodeSpend

        block = self.block
        spec = block.spec
        node_id = f"{block.node}/decision#{view.number + 1}"
        if events.DecisionStarted in block.observer.hears:
            block.observer.on(events.DecisionStarted(run_id=block.node, node_id=node_id, parent_id=block.node,
                                                     name=f"message from {view.sender}"))
        spend = NodeSpend(block.spend.meter, block.budget, block.observer, node_id, block.spend.lock)
        model = MeteredModel(self.model, spend=spend, what=f"deciding on a message to block `{spec.name}`",
                             journal=journaled_calls(block))
        agent = f"message reader of {spec.name}"
        if self.protocol:
            from orgtree_lang.decompose.protocol import take_turns, task_of

            model = take_turns(model, block, agent=agent, task=task_of(spec), workspace=self.workspace,
                               reviewer=self.reviewer)
        messages = [Message("system", SYSTEM.format(block=spec.name, above=view.above, spec=spec.doc.strip())),
                    Message("user", _request(view))]
        conversation = uuid.uuid4().hex
        try:
            decision = None
            for attempt in range(2):
                text = model.complete(messages, conversation_id=conversation).text
                decision, problem = checked_decision(text, view, getattr(model, "name", "the model"))
                if problem is None:
                    break
                if attempt == 1:
                    raise PipeRuntimeError(
                        f"the node of block `{spec.name}` could not decide what the message from {view.sender} "
                        f"means: {problem} (after one repair)", kind="decision", catchable=False,
                        hint="the agent's answers are in the run's journal (`pipe show RUN`); configure a more "
                             "capable model for it with `[org] message_agent` in orgtree.toml, or give the "
                             "pipeline the block is in an `on message` handler")
                messages += [Message("assistant", text), Message("user", REPAIR.format(problem=problem))]
        except ModelError as err:
            error = PipeRuntimeError(f"the node of block `{spec.name}` could not decide what the message from "
                                     f"{view.sender} means: {err}", kind="model", catchable=False,
                                     hint=getattr(err, "hint", None))
            if events.DecisionEnded in block.observer.hears:
                block.observer.on(events.DecisionEnded(node_id=node_id, detail="", error=error))
            raise error from err
        except PipeRuntimeError as err:
            if events.DecisionEnded in block.observer.hears:
                block.observer.on(events.DecisionEnded(node_id=node_id, detail="", error=err))
            raise
        if decision["kind"] == "ignore":
            self._note(agent, view, decision["note"])
        if events.DecisionEnded in block.observer.hears:
            block.observer.on(events.DecisionEnded(node_id=node_id, detail=described(decision), error=None))
        return decision

    def _note(self, agent: str, view: MessageView, note: str) -> None:
        """The note of an ignored message, on the scratchpad (a journaled step: a resume does not write it twice)."""
        from orgtree_lang.decompose.protocol import block_journal
        from orgtree_lang.memory.scratchpad import Scratchpad

        text = f"ignored a message from {view.sender} ({view.topic}): {note or 'nothing to do'}"

        def write(key: str | None) -> dict[str, Any]:
            with Scratchpad.for_workspace(self.workspace) as pad:
                done = pad.notes_by_key(key) if key else []
                if done:
                    return {"note": done[0].seq}
                with pad.turn(agent) as turn:
                    turn.key = key
                    return {"note": turn.plan(text).seq}

        journal = block_journal(self.block)
        journal(f"{agent}: ignored", write) if journal is not None else write(None)


def _request(view: MessageView) -> str:
    children = "\n".join(f"- {name}: {doc}" for name, doc in view.children) or "- (none running)"
    return (f"A message reached the node of step `{view.block}`.\n\n## The message\nfrom: {view.sender}\n"
            f"topic: {view.topic}\nbody: {view.body}\n\n## Your children\n{children}\n\n## Where the step is\n"
            f"{view.state}\n\nDecide what the message means: one JSON object, as your instructions say.")


def checked_decision(text: str, view: MessageView, model: str,
                     kinds: tuple[str, ...] = KINDS) -> tuple[dict[str, Any] | None, str | None]:
    """The decision an answer holds, or why it cannot be carried out (`kinds`: those this node may take)."""
    from orgtree_lang.models.base import ModelError, parse_structured

    try:
        decision = parse_structured(text, decision_schema(), model)
    except ModelError as err:
        return None, str(err)
    if decision.kind not in kinds:
        return None, f"`{decision.kind}` is not a decision this node can take (it can: {', '.join(kinds)})"
    if decision.kind == "answer" and not decision.answer.strip():
        return None, "an `answer` decision needs the reply's text in `answer`"
    names = [name for name, _ in view.children]
    if decision.kind == "route" and decision.child not in names:
        listed = ", ".join(names) or "none"
        return None, f"`child` must name one of your children ({listed}), got {decision.child!r}"
    return decision.model_dump(), None


def described(decision: dict[str, Any]) -> str:
    kind = decision["kind"]
    detail = {"answer": decision["answer"], "route": f"to {decision['child']}"}.get(kind, decision["note"])
    return f"{kind}: {detail}"[:200] if detail else kind


# ---- the decomposer's side: each block's node, its agent, and re-planning ----------------------------------------

AGENTS_OFF = ("note: run-time agents are off (no model configured): a message to the node of an ambiguous block goes "
              "to the mailbox of the pipeline the block is in")


@dataclass(frozen=True)
class MessageSettings:
    """`[org]` keys for the agents of block nodes: `message_agent` (a model spec; "" is the block's author model) and
    `max_replans` (re-plans of one block in one run, each a revision of its module)."""

    message_agent: str = ""
    max_replans: int = 2

    @classmethod
    def from_config(cls, config) -> MessageSettings:
        from orgtree_lang.runtime.config import ConfigError, config_section

        section = config_section("org", config, types={"message_agent": str, "max_replans": int})
        if section.get("max_replans", 0) < 0:
            raise ConfigError(f"{config}: [org] max_replans must be 0 or more, got {section['max_replans']!r}")
        return cls(section.get("message_agent", "").strip(), section.get("max_replans", cls.max_replans))


def block_node(decomposer, block) -> BlockNode:
    """The node of `block` for its generated child: read by an agent when a model is configured."""
    settings = message_settings(decomposer)
    model = _message_model(decomposer, settings)

    def off() -> None:
        if AGENTS_OFF not in decomposer.notices:
            decomposer.notices.add(AGENTS_OFF)
            print(AGENTS_OFF, file=sys.stderr)

    if model is None:
        return BlockNode(block, None, off)
    reviewer = decomposer.reviewer
    if reviewer is not None:
        from orgtree_lang.models.metered import MeteredModel

        reviewer = MeteredModel(reviewer, spend=block.spend, what=f"reviewing insights of block `{block.spec.name}`")
    reader = MessageReader(model, block, decomposer.workspace, protocol=decomposer.settings.protocol,
                           reviewer=reviewer)
    return BlockNode(block, reader, off)


def message_settings(decomposer) -> MessageSettings:
    if decomposer._messages is None:
        decomposer._messages = MessageSettings.from_config(decomposer.config)
    return decomposer._messages


def _message_model(decomposer, settings: MessageSettings):
    """The model of the blocks' agents: `[org] message_agent`, else the author's; None when no model is configured."""
    if decomposer.author is None and not settings.message_agent:
        return None
    if not settings.message_agent:
        return decomposer.author
    key = f"model:{settings.message_agent}"
    cached = getattr(decomposer, "_message_agent", None)
    if cached is None or cached[0] != key:
        from orgtree_lang.models.select import model_from_spec

        decomposer._message_agent = (key, model_from_spec(settings.message_agent))
    return decomposer._message_agent[1]


def replanned(decomposer, block, saved, replan, count: int):
    """Re-plan: the module for `block` revised with the message as evidence, through the same path as a repair on
    real data (decompose/repair.py): its versions kept, the block's inputs a binding case, the revision reviewed and
    simulated; compiled, and run by later reaches of the block. (saved module, program). Bounded by `[org]
    max_replans`; the writing's own `[decompose] max_repairs` bounds its invalid answers."""
    from orgtree_lang.compile.api import compile_source
    from orgtree_lang.models.base import ModelError
    from orgtree_lang.review.errors import ReviewError

    spec = block.spec
    limit = message_settings(decomposer).max_replans
    if count > limit or decomposer.author is None:
        why = f"it re-planned {limit} time(s) already ([org] max_replans)" if decomposer.author is not None else \
            "no model is configured to revise the module"
        raise PipeRuntimeError(f"the node of block `{spec.name}` decided to re-plan on {replan.evidence}, but {why}",
                               kind="decision", catchable=False,
                               hint=f"read the module ({saved.path}) and the message; fix the module, or raise "
                                    "[org] max_replans in orgtree.toml")
    block.note(f"re-planning ({count} of {limit}): {replan.why or replan.evidence}"[:200])
    what = f"the step's node decided to re-plan on {replan.evidence}" + (f"\nIts reason: {replan.why}" if replan.why
                                                                          else "")
    try:
        revised = repair(decomposer, block, Evidence("message", what, dict(block.inputs)),
                         key=f"{block.node}:replan-{count}", saved=saved)
    except (ModelError, ReviewError) as err:
        raise PipeRuntimeError(f"ambiguous block `{spec.name}`: re-planning: {err}", kind="ambiguous",
                               catchable=False, hint=getattr(err, "hint", None)) from err
    except PipeRuntimeError as err:
        if err.kind in ("model", "budget", "decision"):
            raise
        raise PipeRuntimeError(f"ambiguous block `{spec.name}`: re-planning on {replan.evidence}: {err.message}",
                               kind="ambiguous", catchable=False, hint=err.hint) from err
    program = compile_source(revised.text, str(revised.path), decomposer.registry).program
    decomposer.remember(spec_hash(spec), revised, program)
    block.note(f"re-planned: {revised.path}")
    return revised, program
