"""Reuse of a saved module made for another block: it must fit this block's signature and a reviewer must accept it."""

from __future__ import annotations

from pydantic import BaseModel, Field

from orgtree_lang.compile.code import AmbiguousSpec
from orgtree_lang.decompose.prompt import spec_text, spec_words, words
from orgtree_lang.decompose.store import ModuleStore, SavedModule
from orgtree_lang.decompose.validate import validate_module

SIMILARITY = 0.3  # the least word overlap (Jaccard) between two blocks' descriptions for a module to be offered
CANDIDATES = 2  # saved modules offered to the reviewer, most similar first


class ReuseVerdict(BaseModel):
    """The reviewer's answer on reusing a saved module for a new block."""

    accept: bool = Field(description="true only if the module does everything the new spec asks, as it is")
    reasons: str = Field(description="why, citing the spec")


REUSE_PROMPT = """\
You review whether an existing .pipe module can be reused, unchanged, for a new step. You did not write it.
Accept it only if running it does exactly what the new step's description asks, for every input the step may
get. Answer with one JSON object: {"accept": true or false, "reasons": "..."}."""


def described(module: SavedModule) -> str:
    """What a saved module was made for: its block name and description from the provenance header."""
    p = module.provenance
    return f"{p.get('block', module.path.stem)} {p.get('description', '')}"


def similar_modules(store: ModuleStore, spec: AmbiguousSpec, registry,
                    threshold: float = SIMILARITY) -> list[tuple[float, SavedModule]]:
    """Saved modules whose description is like the spec's and that validate against its signature, best first."""
    wanted = spec_words(spec)
    found = []
    for module in store.all():
        theirs = words(described(module))
        if not wanted or not theirs:
            continue
        score = len(wanted & theirs) / len(wanted | theirs)
        if score >= threshold and validate_module(module.body, spec, registry, str(module.path)).ok:
            found.append((score, module))
    found.sort(key=lambda pair: (-pair[0], str(pair[1].path)))
    return found


def ask_reuse(reviewer, spec: AmbiguousSpec, module: SavedModule, conversation: str) -> ReuseVerdict:
    """A fresh reviewer conversation judges whether `module` serves `spec` as it is."""
    from orgtree_lang.models.base import Message

    messages = [Message("system", REUSE_PROMPT),
                Message("user", f"The new step:\n{spec_text(spec)}\n\nThe saved module ({module.path.name}, made for "
                                f"{described(module).strip()}):\n```pipe\n{module.body.strip()}\n```")]
    return reviewer.complete(messages, schema=ReuseVerdict, conversation_id=conversation).parsed
