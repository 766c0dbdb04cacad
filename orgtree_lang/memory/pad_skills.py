"""Scratchpad skills: take an agent's plan (or how it changed) and write it in a lock turn; read the pad back in budget."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.runtime.skills import SkillContext, skill


def _pad(ctx: SkillContext):
    from orgtree_lang.memory.scratchpad import Scratchpad

    return Scratchpad.for_workspace(ctx.workspace.root)


@contextmanager
def _pad_and_memory(ctx: SkillContext):
    from orgtree_lang.memory import Memory

    # The pad and the insights are searched on their own (memory/hybrid.py): the workspace's vector index stays shut.
    with _pad(ctx) as pad, Memory(ctx.workspace.root, vectors=False) as memory:
        yield pad, memory


def _as_skill_error(name: str, err: Exception) -> SkillError:
    return SkillError(f"{name}: {err}", hint=getattr(err, "hint", None))


@skill("pad.note")
def note(ctx: SkillContext, agent: str, plan: str, before: str = "", why: str = "") -> dict[str, Any]:
    """Write the agent's plan on the shared scratchpad, in one turn of its lock.

    The turn waits for the lock, reads what other agents wrote since this agent's last note, writes, and
    releases. Read those notes (returned as `unseen`) before acting: if they change your plan, write the next
    note with `before` and `why`.

    Args:
        agent: Who writes, e.g. the run node or role (`planner`).
        plan: What the agent is about to do; with `before` and `why`, how it goes on instead.
        before: Only for a changed plan: what the agent meant to do before.
        why: Only for a changed plan: what it read that changed the plan.

    Returns:
        The note (`seq`, `turn`, `agent`, `kind`, `text`) and `unseen`: the other agents' notes written since
        this agent's previous note, each as `[#seq agent] text`.
    """
    from orgtree_lang.memory.scratchpad import PadProtocolError
    from orgtree_lang.memory.lock import PadLockTimeout

    with _pad(ctx) as pad:
        try:
            written, unseen = pad.note(agent, plan, before=before, why=why, key=ctx.idempotency_key)
        except (PadProtocolError, PadLockTimeout) as err:
            raise _as_skill_error("pad.note", err) from None
    return {"seq": written.seq, "turn": written.turn, "agent": written.agent, "kind": written.kind,
            "text": written.text, "unseen": [n.render() for n in unseen]}


def _read(ctx: SkillContext, name: str, make_view) -> str:
    from orgtree_lang.memory import BudgetError, MemoryInputError

    try:
        with _pad_and_memory(ctx) as (pad, memory):
            return make_view(pad, memory).text
    except (BudgetError, MemoryInputError) as err:
        raise SkillError(f"{name}: {err}", hint="give the model's window as NAME:TOKENS, e.g. gpt-4o:128000") \
            from None


@skill("pad.context")
def context(ctx: SkillContext, agent: str, model: str) -> str:
    """The scratchpad as `agent` should read it before its next step, sized for `model`.

    The newest notes verbatim in 5% of the model's context window, and everything older summarized (through
    the context recursion, cached) in at most 10% more. Summaries carry `[#id]` labels; `ctx.expand` opens them.

    Args:
        agent: Who reads.
        model: The reading model's name (`gpt-4o`), or NAME:TOKENS to give its window (`local:32000`).

    Returns:
        The text to put in the agent's prompt (empty when the scratchpad has no notes).
    """
    from orgtree_lang.memory.padview import pad_context

    return _read(ctx, "pad.context", lambda pad, memory: pad_context(pad, memory, agent, model))


@skill("pad.focus")
def focus(ctx: SkillContext, agent: str, query: str, model: str) -> str:
    """The scratchpad notes most relevant to `query`, instead of the newest ones, sized for `model`.

    Use it when an older note may change the plan but is no longer among the newest: it fills the same 15%
    of the window that `pad.context` uses with whole notes found by keyword and by meaning, in written order.

    Args:
        agent: Who reads.
        query: What the agent is working on or looking for.
        model: The reading model's name (`gpt-4o`), or NAME:TOKENS to give its window (`local:32000`).

    Returns:
        The text to put in the agent's prompt (empty when the scratchpad has no notes).
    """
    from orgtree_lang.memory.padview import pad_focus

    return _read(ctx, "pad.focus", lambda pad, memory: pad_focus(pad, memory, agent, query, model))
