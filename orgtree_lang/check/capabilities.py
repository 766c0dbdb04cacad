"""The capability rule: whether a `use` line is covered by the `use` lines of the module or block above it."""

from __future__ import annotations


def capability_allowed(use: str, parent_uses: tuple[str, ...] | list[str]) -> bool:
    """A block or child module may `use` a namespace or skill only if one of its parent's `use` lines covers it."""
    return any(use == allowed or use.startswith(allowed + ".") for allowed in parent_uses)
