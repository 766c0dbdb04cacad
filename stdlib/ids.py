"""Id skills: make new unique ids (random UUIDs as hex text) that resume and replay see unchanged."""

from __future__ import annotations

import uuid

from orgtree_lang.runtime.skills import skill


@skill("ids.new", unobserved=True)
def new() -> str:
    """A new unique id: a random UUID (version 4) as 32 lowercase hex digits, e.g. `9f1c...e07a`.

    Example: `ids.new()`

    Not pure: a durable run journals each id, so resume and replay of the run see the same ids.

    Returns:
        32 characters from `0-9a-f`.
    """
    return uuid.uuid4().hex
