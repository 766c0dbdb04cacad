"""Reuse of saved modules: any reuse must be the reviewed body and fit the current block; one made for another
block must also be accepted by a reviewer."""

from __future__ import annotations

from pydantic import BaseModel, Field

from orgtree_lang.compile.code import AmbiguousSpec, Program
from orgtree_lang.decompose.prompt import spec_text, spec_words, words
from orgtree_lang.decompose.store import ModuleStore, SavedModule
from orgtree_lang.decompose.validate import validate_module
from orgtree_lang.runtime.errors import PipeError

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


class ReuseRefused(PipeError):
    """A saved module that may not run for a block as it stands: edited since review, over its limits, or unfit."""


def accept_name(module: SavedModule) -> str:
    """How `pipe modules accept` names the module: PARENT/BLOCK."""
    return f"{module.path.parent.name}/{module.path.stem}"


def checked_for_reuse(module: SavedModule, spec: AmbiguousSpec, registry) -> Program:
    """The compiled module, if the saved file may run for `spec` as it stands now; ReuseRefused saying why not.

    Checked on every reuse, the exact spec hash's too: the body must be the reviewed (or person-accepted) one,
    no run of it may have gone over a generated module's limits, and it must fit the block's signature and the
    capabilities of the *current* parent."""
    accept = f"`pipe modules accept {accept_name(module)}`"
    if module.changed_since_review:
        recorded = "was changed since it was reviewed" if module.provenance.get("body-hash") else \
            "has no record of the body its review accepted (a `body-hash` line in its header)"
        raise ReuseRefused(f"the saved module {module.path} {recorded}; it is not run unreviewed",
                           f"read it; if it is right, approve it with {accept}; otherwise delete the file and a "
                           "model writes a new one")
    if module.budget_failure:
        raise ReuseRefused(f"the saved module {module.path} went over the limits of a generated module in an "
                           f"earlier run ({module.budget_failure}); it is not run again unasked",
                           f"fix it and approve it with {accept}, raise the limits in [decompose] of orgtree.toml "
                           "and approve it, or delete the file and a model writes a new one")
    result = validate_module(module.text or module.path.read_text(encoding="utf-8"), spec, registry,
                             str(module.path))
    if not result.ok:
        raise ReuseRefused(f"the saved module {module.path} does not fit block `{spec.name}` as its parent "
                           f"declares it now: {' | '.join(p.splitlines()[0] for p in result.problems)}",
                           "a module never runs with more than its parent allows; fix the module or delete it "
                           "(a model then writes a new one)")
    return result.program


def spec_in_parent(module: SavedModule, root, registry) -> AmbiguousSpec | None:
    """The block a saved module was written for, found by spec hash in its parent program as it is now; None if
    the parent cannot be read or compiled, or no longer has that block."""
    from pathlib import Path

    from orgtree_lang.compile.api import compile_source
    from orgtree_lang.decompose.spec import spec_hash
    from orgtree_lang.syntax.diagnostics import CompileError

    parent = module.provenance.get("parent", "").rsplit(":", 1)[0]
    for candidate in (Path(parent), Path(root) / parent, Path(root) / Path(parent).name):
        if not parent or not candidate.is_file():
            continue
        try:
            program = compile_source(candidate.read_text(encoding="utf-8"), str(candidate), registry).program
        except (CompileError, OSError, UnicodeDecodeError):
            return None
        for code in program.pipelines.values():
            for spec in code.ambiguous:
                if spec_hash(spec) == module.spec_hash:
                    return spec
    return None


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
        if module.changed_since_review or module.budget_failure:
            continue  # offered to nobody, not even as a reference, until a person accepts it
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
