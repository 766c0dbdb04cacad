"""The agents of a block take their turns (memory/turn.py) with the block's services: a model, the agent's name and a
BlockContext in, an AgentModel out whose reads and notes are journaled steps of the block, whose summaries are the
run's model's (metered), and whose insights the block's reviewer reviews.

A run-time agent of a block takes its turn in one line:

    decider = take_turns(model, block, agent=f"message decider of {spec.name}", task=..., workspace=workspace,
                         reviewer=reviewer)
"""

from __future__ import annotations

import re
from pathlib import Path

from orgtree_lang.memory.turn import SEED_SHARE, AgentModel, agent_turns

# What an agent is about to do, from the request it is about to answer (the first pattern that matches): the plan
# stored for a model that wrote no note of its own (an offline, scripted one). Reviews and rulings quote the spec
# ("Write a module for the step ..."), so they are looked for first.
_STEPS = (
    (re.compile(r"Review round (\d+) of (\S+?)\.?$", re.M), "review round {0} of {1}"),
    (re.compile(r"still disagree after the last review round"), "rule on the open concerns: {ids}"),
    (re.compile(r"The module is not accepted yet:\s*\n?(.*)"), "repair the module: {0}"),
    (re.compile(r"A reviewer raised these concerns"), "revise the module for the reviewer's concerns: {ids}"),
    (re.compile(r"Write a module for the step `([^`]+)`"), "write a module for block `{0}`"),
)
_IDS = re.compile(r'^- (\S+) \((?:blocking|minor)\)|"id": "([^"]+)"', re.M)
GUIDE_TOKENS = 400  # the guide to the note (memory/turn.py NOTE_GUIDE) and the agent's own last note, at most


def plan_of(request: str) -> str:
    """The plan an agent writes before answering `request`, when its model writes none: what the step is, in a line."""
    ids = ", ".join(dict.fromkeys(a or b for a, b in _IDS.findall(request))) or "none listed"
    for pattern, plan in _STEPS:
        match = pattern.search(request)
        if match:
            groups = [" ".join(g.split())[:160] for g in match.groups()]
            return plan.format(*groups, ids=ids)
    first = next((line.strip() for line in request.splitlines() if line.strip()), "(empty request)")
    return f"answer: {first[:160]}"


def seed_tokens(window: int) -> int:
    """The tokens of a window the seed may take next to the request: the pad's 15%, the insights' 10%, the guide."""
    return int(window * SEED_SHARE) + GUIDE_TOKENS


def block_journal(block):
    """How an agent's turns of `block` become journaled steps (kind `pad`), or None when the run is not durable.

    Keyed by the agent and what the step is: a resumed block whose later prompts differ (a new review subject) reuses
    the turns it already took up to the first model step that differs, from which the journal asks live."""
    if block.effects is None:
        return None
    return lambda name, execute: block.effects.perform(block.effect_step("pad", name, [], {}), execute)


def _raw(model):
    """The model under the block's metering and journal (decompose.decomposer._metered), for calls made inside one of
    the block's journaled steps, which must not be journaled again."""
    return getattr(model, "inner", model)


def _settings(block, workspace: Path):
    """`[memory]` from the run's snapshot of orgtree.toml (the skill context's, read once per run), else the file."""
    from orgtree_lang.memory.settings import MemorySettings

    config = getattr(block.context, "config", None)
    return MemorySettings.from_config(config) if config is not None else MemorySettings.for_workspace(workspace)


def pad_summarizer(block, model, workspace: Path):
    """The summarizer of the scratchpad's older notes for a block's agents: the run's model (metered, not journaled:
    it runs inside the turn's journaled read) unless `[memory] summarizer = "extractive"` or there is none."""
    models = getattr(block.context, "models", None)
    settings = _settings(block, workspace)
    source = models if settings.summary_model and models is not None else _raw(model)
    return settings.summarizer_for(source, spend=block.spend, what="summaries of the scratchpad")


def input_summarizer(block, model, workspace: Path):
    """The summarizer of a block's big inputs (decompose/inputs.py): the run's model, each round of the context tree
    one journaled step (a resume asks no summary twice), metered, written side by side on the run's executor."""
    if model is None:
        return None
    models = getattr(block.context, "models", None)
    settings = _settings(block, workspace)
    source = models if settings.summary_model and models is not None else _raw(model)
    journal = None
    if block.effects is not None:
        def journal(digests, ask):
            name = f"summaries by {getattr(source, 'name', '') or settings.summary_model or model.name}"
            return block.effects.perform(block.effect_step("model", name, digests, {}), lambda _key: ask())
    executor = getattr(block, "executor", None)
    return settings.summarizer_for(source, spend=block.spend, what=f"summaries of the inputs of `{block.spec.name}`",
                                   submit=executor.submit if executor is not None else None, journal=journal)


def take_turns(model, block, *, agent: str, task: str, workspace: Path, reviewer=None, fallback=plan_of,
               summarizer=None) -> AgentModel:
    """`model` as `agent` of `block`: each answer after its turn on the scratchpad (see memory/turn.py), the turns
    journaled steps of the block, its insights reviewed by `reviewer` (the block's, in a fresh conversation), the
    older notes summarized by `summarizer` (default: `pad_summarizer` on `model`)."""
    summarizer = summarizer if summarizer is not None else pad_summarizer(block, model, workspace)
    return agent_turns(model, agent, task, workspace, reviewer=reviewer, journal=block_journal(block),
                       summarizer=summarizer, fallback=fallback, settings=_settings(block, workspace))


def task_of(spec) -> str:
    """The words an agent of a block searches the pad and the insights with: its name and docstring."""
    return " ".join(re.findall(r"\w+", f"{spec.name} {spec.doc}"))


def insight_reviewer(proposer, author, reviewer):
    """Who reviews the insights `proposer` offers: the other of the block's two models when they are different
    models (the author's insights go to the reviewer, the reviewer's to the author), else the reviewer, in a fresh
    conversation either way (memory/insights.py never reviews in the proposer's)."""
    def name(model) -> str:
        return str(getattr(model, "name", "") or "")

    if reviewer is not None and author is not None and name(proposer) == name(reviewer) != name(author):
        return author
    return reviewer


def seated(author, reviewer, spec, block, workspace: Path):
    """The author and the reviewer of `spec` (resolved through `block`, a vm.blocks.BlockContext), each taking its
    turn before every step; what one proposes as an insight the other (plain) model reviews afresh. Both read the
    older notes as the author's model summarized them (one cached summary tree, not one per model)."""
    task, summarizer = task_of(spec), pad_summarizer(block, author, workspace)
    return (take_turns(author, block, agent=f"author of {spec.name}", task=task, workspace=workspace,
                       reviewer=insight_reviewer(author, author, reviewer), summarizer=summarizer),
            take_turns(reviewer, block, agent=f"reviewer of {spec.name}", task=task, workspace=workspace,
                       reviewer=insight_reviewer(reviewer, author, reviewer), summarizer=summarizer))
