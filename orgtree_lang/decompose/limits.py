"""The limits every generated module runs within, whatever its parent's budget: steps, seconds and output size."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orgtree_lang.runtime.values import RecordValue

CHILD_MAX_STEPS = 1_000_000  # an endless loop stops in about a second (untraced), not at an outside timeout
CHILD_MAX_SECONDS = 300.0  # wall clock, model and skill calls included
CHILD_MAX_MEMORY = 512 * 1024 * 1024  # bytes one value may take (vm/memory.py): list doubling stops here
MAX_OUTPUT_CHARS = 1_000_000  # a block's outputs are values a program goes on with, not bulk data

# The [decompose] key that sets each limit, for errors and the module's header.
SETTING = {"steps": "child_max_steps", "seconds": "child_max_seconds", "memory": "child_max_memory",
           "output": "max_output_chars"}


@dataclass(frozen=True)
class ChildLimits:
    """What one generated module (with the modules it generates) may take, counted from its start."""

    steps: int | None = CHILD_MAX_STEPS
    seconds: float | None = CHILD_MAX_SECONDS
    output_chars: int | None = MAX_OUTPUT_CHARS
    memory: int | None = CHILD_MAX_MEMORY

    def budget(self):
        """The child's own limits as a vm Budget for BlockContext.run_child (the others stay the tree's)."""
        from orgtree_lang.vm.budget import Budget

        return Budget(max_steps=self.steps, max_seconds=self.seconds, max_memory=self.memory)

    def describe(self, limit: str) -> str:
        amount = {"steps": f"{self.steps:,} steps", "seconds": f"{self.seconds:g} s of wall-clock time",
                  "memory": f"{self.memory:,} bytes for one value",
                  "output": f"{self.output_chars:,} characters of output"}[limit]
        return f"{amount} ([decompose] {SETTING[limit]})"


def output_size(value: Any, stop: int | None = None) -> int:
    """About how many characters `value` takes written out: text by its length, other scalars by their
    spelling, containers by their parts plus one per part. Counting ends early once past `stop`."""
    size = 0
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            size += len(item)
        elif isinstance(item, RecordValue):
            pending.extend(item.fields.values())
            size += len(item.fields)
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
            size += len(item)
        elif isinstance(item, (list, tuple)):
            pending.extend(item)
            size += len(item)
        else:
            size += len(repr(item))
        if stop is not None and size > stop:
            break
    return size
