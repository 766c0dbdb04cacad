"""Time skills: read the run's clock (never the system clock directly) as ISO-8601 text, and wait."""

from __future__ import annotations

import time as _time
from datetime import datetime, timezone

from orgtree_lang.runtime.errors import SkillError

from orgtree_lang.runtime.skills import SkillContext, skill


@skill("time.now", unobserved=True)
def now(ctx: SkillContext) -> str:
    """The current time in UTC as ISO-8601 text, e.g. `2024-05-01T12:30:00Z`.

    Example: `time.now()  # "2024-05-01T12:30:00Z"`

    The time comes from the run's clock, so a replayed run sees the time the original run saw.

    Returns:
        The time to the second, with a `Z` suffix for UTC.
    """
    moment = datetime.fromtimestamp(ctx.clock(), tz=timezone.utc)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


MAX_SLEEP_SECONDS = 3600


@skill("time.sleep", slow=True, remote=True, cpu=0.05)
def sleep(seconds: float) -> None:
    """Wait for a number of seconds.

    Example: `time.sleep(1.5)`

    Journaled like every skill with an effect: a resumed or replayed run does not wait again.

    Args:
        seconds: How long, from 0 to 3600.
    """
    if not 0 <= seconds <= MAX_SLEEP_SECONDS:
        raise SkillError(f"time.sleep: seconds must be between 0 and {MAX_SLEEP_SECONDS}, got {seconds}")
    _time.sleep(seconds)
