"""Time skills: read the run's clock (never the system clock directly) and return ISO-8601 text."""

from __future__ import annotations

from datetime import datetime, timezone

from orgtree_lang.runtime.skills import SkillContext, skill


@skill("time.now")
def now(ctx: SkillContext) -> str:
    """The current time in UTC as ISO-8601 text, e.g. `2024-05-01T12:30:00Z`.

    The time comes from the run's clock, so a replayed run sees the time the original run saw.

    Returns:
        The time to the second, with a `Z` suffix for UTC.
    """
    moment = datetime.fromtimestamp(ctx.clock(), tz=timezone.utc)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")
