"""The error the scratchpad and the insight pool report (they open state.db through runtime.state_db)."""

from __future__ import annotations

from orgtree_lang.runtime.errors import PipeError


class StateError(PipeError):
    """A request the scratchpad or insight pool refuses; the message says what was wrong, the hint how to fix it."""
