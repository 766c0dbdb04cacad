"""Scratchpad skills: take an agent's plan (or how it changed) and write it in a lock turn; read the pad back in budget."""

from __future__ import annotations

from typing import Any

from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.runtime.skills import SkillContext, skill


def _pad(ctx: SkillContext):
    from orgtree_lang.memory.scratchpad import Scratchpad

    return Scratchpad.for_workspace(ctx.workspace.root)


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
