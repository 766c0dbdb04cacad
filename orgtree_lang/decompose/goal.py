"""The goal a block serves, for its reviewer: the program's description, the parent pipeline's docstring, the
path of blocks from the root, and the documentation of the skills a module calls."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orgtree_lang.compile.code import AmbiguousSpec

GOAL_HEADING = "## The goal this step serves (context for judging the spec; not part of it)"
SKILLS_HEADING = "## Skills the artifact calls (their documentation)"


@dataclass(frozen=True)
class Goal:
    """What encloses a block: the root program's description and the blocks from the root down to its parent.

    `path` holds one label per enclosing ambiguous block, outermost first (`triage.pipe: main > classify`)."""

    program: str
    path: tuple[str, ...] = ()

    @classmethod
    def of_program(cls, file: str, source: str) -> Goal:
        return cls(program_description(source, file))

    def inside(self, file: str, spec: AmbiguousSpec) -> Goal:
        """The goal of blocks inside the module written for `spec` (a block of `file`)."""
        return Goal(self.program, (*self.path, block_label(file, spec)))

    def describe(self, spec: AmbiguousSpec, file: str, source: str) -> str:
        """The goal section of a request about `spec`, a block of `file` (whose text is `source`)."""
        lines = [GOAL_HEADING, f"The program: {self.program or '(no description)'}"]
        path = " -> ".join((*self.path, block_label(file, spec)))
        lines.append(f"The path of blocks from the program's root to this step: {path}")
        doc = pipeline_doc(source, file, spec.pipeline)
        lines.append(f"The pipeline `{spec.pipeline}` that contains the step: {doc or '(no docstring)'}")
        return "\n".join(lines)


def block_label(file: str, spec: AmbiguousSpec) -> str:
    return f"{Path(file).name}: {spec.pipeline} > {spec.name}"


def program_description(source: str, file: str) -> str:
    """What a program says it is for: its leading comment block, else its `main` pipeline's docstring.

    (.pipe has no module docstring; the comment block at the top is where programs describe themselves.)"""
    lines = []
    for line in source.splitlines():
        stripped = line.strip()
        if not stripped.startswith("#"):
            break
        text = stripped.lstrip("#").strip()
        if not text.startswith("orgtree:"):  # a saved module's provenance header is not a description
            lines.append(text)
    described = " ".join(line for line in lines if line).strip()
    return described or pipeline_doc(source, file, "main")


def pipeline_doc(source: str, file: str, name: str) -> str:
    """The docstring of pipeline `name` in `source`, or "" (also for a source that does not parse)."""
    from orgtree_lang.syntax.diagnostics import CompileError
    from orgtree_lang.syntax.parser import parse

    try:
        module = parse(source, file)
    except CompileError:
        return ""
    for pipeline in module.pipelines:
        if pipeline.name == name:
            return " ".join((pipeline.doc or "").split())
    return ""


def skill_docs(source: str, registry, file: str = "<module>") -> str:
    """The skills section for a module: each skill it calls, with its signature and whole docstring."""
    from orgtree_lang.compile.api import compile_source
    from orgtree_lang.syntax.diagnostics import CompileError

    try:
        program = compile_source(source, file, registry).program
    except CompileError:
        return ""
    called = sorted({site.name for code in program.pipelines.values() for site in code.calls
                     if site.kind == "skill"})
    if not called:
        return ""
    entries = []
    for name in called:
        skill = registry.get(name)
        entries.append(f"- {skill.signature()}\n" + _indent(skill.description.strip() or "(no documentation)"))
    return SKILLS_HEADING + "\n" + "\n".join(entries)


def _indent(text: str) -> str:
    return "\n".join("    " + line if line else "" for line in text.splitlines())
