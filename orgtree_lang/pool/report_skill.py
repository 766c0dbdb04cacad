"""`skills.report_bug`: a program files a bug report about a skill that did not work as expected."""

from __future__ import annotations

from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.runtime.skills import SkillContext, skill


@skill("skills.report_bug")
def report_bug(ctx: SkillContext, skill: str, use_case: str, expected: str, observed: str, notes: str = "") -> int:
    """File a bug report about a skill; another agent reviews it against the skill's call history.

    The report is stored in the workspace's state.db with this run as its reporter. A reviewer that is not
    the reporter later decides to fix the skill, clarify its usage, or remove it (`pipe skills review`).
    Filing is applied once per call, also when a resumed run repeats it.

    Args:
        skill: The skill's full name, e.g. `text.split` or `learned.rank_files`.
        use_case: What the program was trying to do with it.
        expected: The outcome that was expected.
        observed: The outcome that happened instead.
        notes: Anything else that helps the reviewer (inputs, how often, workarounds).

    Returns:
        The report's number.
    """
    from orgtree_lang.pool.store import PoolError, PoolStore

    models = getattr(ctx, "models", None)
    store = PoolStore.for_workspace(ctx.workspace.root)
    try:
        return store.file_bug(skill, use_case, expected, observed, notes, reporter=f"run {ctx.run_id}",
                              reporter_conversation=f"run:{ctx.run_id}",
                              reporter_model=getattr(models, "author_spec", None) or "",
                              idempotency_key=ctx.idempotency_key)
    except PoolError as err:
        raise SkillError(f"skills.report_bug: {err.message}", hint=err.hint) from None
    finally:
        store.close()
