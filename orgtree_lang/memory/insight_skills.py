"""Insight skills: take an insight (or a reason to drop one) and have an independent reviewer decide on it."""

from __future__ import annotations

from typing import Any

from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.runtime.skills import SkillContext, skill


def _reviewer(ctx: SkillContext, name: str):
    """The run's reviewer model (from --review-model, PIPE_REVIEW_MODEL, orgtree.toml, else the author's)."""
    from orgtree_lang.models.base import ModelError
    from orgtree_lang.models.roles import RunModels

    models = ctx.models if ctx.models is not None else RunModels.from_config(config_path=ctx.config)
    try:
        reviewer = models.reviewer()
    except ModelError as err:
        raise SkillError(f"{name}: an insight needs an independent reviewer, but {err}", hint=err.hint) from None
    # Inside a run, the review's calls count against the run tree's --max-tokens / --max-cost.
    if ctx.spend is None:
        return reviewer
    from orgtree_lang.models.metered import MeteredModel

    return MeteredModel(reviewer, spend=ctx.spend, what=f"{name}'s review")


def _decide(ctx: SkillContext, name: str, propose) -> dict[str, Any]:
    from orgtree_lang.memory.insights import InsightError, InsightPool
    from orgtree_lang.review import SelfReviewError

    reviewer = _reviewer(ctx, name)
    with InsightPool.for_workspace(ctx.workspace.root) as pool:
        try:
            proposal = propose(pool, reviewer)
        except (InsightError, SelfReviewError) as err:
            raise SkillError(f"{name}: {err}", hint=getattr(err, "hint", None)) from None
        insight = pool.get(proposal.insight_id)
    return {"proposal": proposal.id, "insight": insight.id, "action": proposal.action, "status": proposal.status,
            "decision": proposal.decision, "insight_status": insight.status}


def _author(ctx: SkillContext, author: str) -> tuple[str, str]:
    # The run is the author: its conversation id is the run's, so a reviewer in that conversation is refused.
    return author or f"run {ctx.run_id}", f"run:{ctx.run_id}"


@skill("insight.propose")
def propose(ctx: SkillContext, text: str, evidence: str, tags: list[str] | None = None,
            author: str = "") -> dict[str, Any]:
    """Propose a new insight for the shared pool; an independent reviewer accepts or rejects it at once.

    Propose only what is non-obvious: something non-trivial, or a correction of a critical misunderstanding.
    The reviewer checks that the evidence supports the text and that it matters to the team's work. A rejected
    proposal is kept with the reviewer's reason; it is not an error.

    Args:
        text: The insight, readable on its own.
        evidence: What shows it is true (a measurement, a failing test, a quote with its source).
        tags: Words to find it by.
        author: Who proposes it; default the run.

    Returns:
        `proposal` and `insight` ids, `status` (accepted or rejected), `decision` (the reviewer's summary or
        reason), and `insight_status` (active when accepted).
    """
    name, conversation = _author(ctx, author)
    return _decide(ctx, "insight.propose", lambda pool, reviewer: pool.add(
        text, evidence, author=name, tags=tags or [], reviewer=reviewer, author_conversation=conversation,
        key=ctx.idempotency_key))


@skill("insight.remove")
def remove(ctx: SkillContext, insight: int, reason: str, author: str = "") -> dict[str, Any]:
    """Propose removing an insight from the shared pool; an independent reviewer decides at once.

    The reviewer sees the insight, its evidence and your reason; the insight leaves the pool only if the
    reviewer agrees that it is wrong, obsolete, duplicated or irrelevant. A refused removal is kept with the
    reviewer's reason; it is not an error.

    Args:
        insight: The insight's id (`pipe insights list` shows them).
        reason: Why it should go.
        author: Who proposes the removal; default the run.

    Returns:
        `proposal` and `insight` ids, `status` (accepted or rejected), `decision`, and `insight_status`
        (removed when accepted, else active).
    """
    name, conversation = _author(ctx, author)
    return _decide(ctx, "insight.remove", lambda pool, reviewer: pool.remove(
        insight, reason, author=name, reviewer=reviewer, author_conversation=conversation,
        key=ctx.idempotency_key))


@skill("insight.relevant")
def relevant(ctx: SkillContext, task: str, model: str, limit: int = 10) -> str:
    """The insights in the pool most relevant to `task`, to read before starting it, sized for `model`.

    At most 10% of the model's context window: the insights whole when they fit, else summarized through the
    context recursion (`[#id]` labels lead back to each insight). Found by keyword and by meaning.

    Args:
        task: What the agent is about to do.
        model: The reading model's name (`gpt-4o`), or NAME:TOKENS to give its window (`local:32000`).
        limit: At most this many insights.

    Returns:
        The text to put in the agent's prompt (empty when no insight is active).
    """
    from orgtree_lang.memory import BudgetError, Memory, MemoryInputError
    from orgtree_lang.memory.insight_view import relevant_insights
    from orgtree_lang.memory.insights import InsightPool

    if limit < 1:
        raise SkillError(f"insight.relevant: limit must be at least 1, got {limit}")
    try:
        with InsightPool.for_workspace(ctx.workspace.root) as pool, Memory(ctx.workspace.root, vectors=False) as memory:
            return relevant_insights(pool, memory, task, model, limit=limit).text
    except (BudgetError, MemoryInputError) as err:
        raise SkillError(f"insight.relevant: {err}",
                         hint="give the model's window as NAME:TOKENS, e.g. gpt-4o:128000") from None
