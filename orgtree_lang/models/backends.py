"""The model backends a `PREFIX:ARGUMENT` spec names, and which of them answer without a network."""

from __future__ import annotations

from typing import NamedTuple


class Backend(NamedTuple):
    """Where a backend's `Model` class lives (imported only when a spec names it, so `pipe check` stays light)
    and whether it answers offline (no API key, no litellm model map, no live-model notice)."""

    module: str
    model_class: str
    offline: bool


# A new backend is a module whose Model class has `from_spec(argument, role=...)`, plus one row here.
# Every spec without one of these prefixes is a litellm model name.
BACKENDS: dict[str, Backend] = {
    "scripted": Backend("orgtree_lang.models.scripted", "ScriptedModel", offline=True),
    "replay": Backend("orgtree_lang.models.cassette", "CassetteModel", offline=True),
}


def backend_of(spec: str) -> tuple[Backend, str] | None:
    """The backend a spec names and the argument after its prefix, or None for a litellm model name."""
    prefix, colon, argument = spec.strip().partition(":")
    backend = BACKENDS.get(prefix) if colon else None
    return None if backend is None else (backend, argument)


def is_offline(spec: str) -> bool:
    """Whether the model a spec names answers without a network."""
    named = backend_of(spec)
    return named is not None and named[0].offline
