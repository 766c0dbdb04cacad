"""Reuse of saved modules: any reuse must be the reviewed body and fit the current block; one made for another
block must also be accepted by a reviewer."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from orgtree_lang.check.capabilities import capability_allowed
from orgtree_lang.compile.code import AmbiguousSpec, Program
from orgtree_lang.decompose.inputs import MEMORY_READS
from orgtree_lang.decompose.prompt import spec_text
from orgtree_lang.decompose.store import ModuleStore, SavedModule
from orgtree_lang.decompose.validate import validate_module, within_capabilities
from orgtree_lang.runtime.errors import PipeError

# The least relevance of a saved module's spec to a block's for the reviewer to be asked whether it can be reused as it
# is: cosine similarity of the two specs' embeddings (memory/spec_search.py), or the share of the block's content
# words where the embedding model is not installed. Half of it makes a module a reference shown to the author, and a
# learned skill one offered to it.
SIMILARITY = 0.5
CANDIDATES = 2  # saved modules offered to the reviewer, most similar first
LEARNED = "learned"
LEARNED_OFFERED = 5  # learned skills offered to an author by relevance, at most


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


def block_spec_text(spec: AmbiguousSpec) -> str:
    """What a block is searched by: its name, docstring and the names of its inputs and outputs."""
    names = " ".join([*(name for name, _ in spec.inputs), *(name for name, _ in spec.outputs)])
    return f"{spec.name}: {' '.join(spec.doc.split())} ({names})"


def _search_mode(workspace: Path) -> str:
    from orgtree_lang.memory.settings import MemorySettings

    try:
        return "hybrid" if MemorySettings.for_workspace(workspace).vectors else "keyword"
    except PipeError:
        return "hybrid"  # a broken [memory] section is reported where the run reads it, not here


def _similar(workspace: Path, spec: AmbiguousSpec, kind: str, entries: dict[str, str], k: int):
    from orgtree_lang.memory.memory import Memory
    from orgtree_lang.memory.spec_search import similar_specs

    if not entries:
        return []
    with Memory(workspace, vectors=False) as memory:
        return similar_specs(memory, block_spec_text(spec), kind, entries, k=k, mode=_search_mode(workspace))


def similar_modules(store: ModuleStore, spec: AmbiguousSpec, registry,
                    threshold: float = SIMILARITY / 2) -> list[tuple[float, SavedModule]]:
    """Saved modules whose spec is like the block's (hybrid search over their specs in the workspace memory; relevance
    at least `threshold`: cosine similarity by meaning, or the share of the block's words where the embedding model is
    not installed) and that validate against its signature, most relevant first."""
    modules = {str(m.path): m for m in store.all() if not (m.changed_since_review or m.budget_failure)}
    # A module changed since its review or over its limits is offered to nobody, not even as a reference, until a
    # person accepts it.
    entries = {key: described(m) for key, m in modules.items()}
    found = []
    for match in _similar(store.workspace, spec, "module", entries, k=8):
        module = modules[match.key]
        if match.relevance >= threshold and validate_module(module.body, spec, registry, str(module.path)).ok:
            found.append((match.relevance, module))
    found.sort(key=lambda pair: (-pair[0], str(pair[1].path)))
    return found


def offered_skills(spec: AmbiguousSpec, registry, workspace: Path, threshold: float = SIMILARITY / 2,
                   limit: int = LEARNED_OFFERED) -> list:
    """The `learned.*` skills like the block (hybrid search over their specs) that it may call without a `use
    learned` in its parent: each one's own `use` lines are covered by the block's (decompose/validate.py), most
    relevant first; the skills already allowed by the block's `use` lines are not repeated."""
    allowed = tuple(spec.uses)
    skills = {name: registry.get(name) for name in registry.names() if name.startswith(f"{LEARNED}.")}
    candidates = {name: f"{name}: {skill.description.strip()} ({skill.signature()})" for name, skill in skills.items()
                  if getattr(skill, "uses", None) is not None and not capability_allowed(name, allowed)
                  and within_capabilities(name, (*allowed, *MEMORY_READS), registry)}
    return [skills[m.key] for m in _similar(workspace, spec, "learned", candidates, k=limit)
            if m.relevance >= threshold]


def ask_reuse(reviewer, spec: AmbiguousSpec, module: SavedModule, conversation: str) -> ReuseVerdict:
    """A fresh reviewer conversation judges whether `module` serves `spec` as it is."""
    from orgtree_lang.models.base import Message

    messages = [Message("system", REUSE_PROMPT),
                Message("user", f"The new step:\n{spec_text(spec)}\n\nThe saved module ({module.path.name}, made for "
                                f"{described(module).strip()}):\n```pipe\n{module.body.strip()}\n```")]
    return reviewer.complete(messages, schema=ReuseVerdict, conversation_id=conversation).parsed
