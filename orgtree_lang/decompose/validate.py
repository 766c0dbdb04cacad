"""Check a generated module against its block: it compiles, has the block's signature, stays within its capabilities."""

from __future__ import annotations

from dataclasses import dataclass, field

from orgtree_lang.check.capabilities import capability_allowed
from orgtree_lang.compile.code import AmbiguousSpec, Program
from orgtree_lang.decompose.inputs import MEMORY_READS
from orgtree_lang.decompose.spec import OUTPUTS_RECORD, required_signature


@dataclass
class Validation:
    """The compiled program when the module is acceptable, else the problems to send back to its author."""

    program: Program | None
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.program is not None and not self.problems


def validate_module(source: str, spec: AmbiguousSpec, registry, file: str) -> Validation:
    from orgtree_lang.compile.api import compile_source
    from orgtree_lang.syntax.diagnostics import CompileError

    try:
        program = compile_source(source, file, registry).program
    except CompileError as err:
        return Validation(None, [err.render()])
    problems: list[str] = []
    allowed = ", ".join(f"`{u}`" for u in spec.uses) or "no skills"
    for use in program.uses:
        if not within_capabilities(use, (*spec.uses, *MEMORY_READS), registry):
            problems.append(f"`use {use}` is not allowed: this block may use only {allowed}"
                            + _module_skill_uses(use, registry))
    problems.extend(_signature_problems(program, spec))
    for code in program.pipelines.values():
        for inner in code.ambiguous:
            if _same_block(inner, spec):
                problems.append(f"the module contains `ambiguous {spec.name}` itself (line {inner.span.line}), "
                                "so running it would ask for the same module forever; write the steps instead")
    return Validation(None if problems else program, problems)


def within_capabilities(use: str, allowed: tuple[str, ...], registry, _seen: frozenset[str] = frozenset()) -> bool:
    """Whether a generated module may `use` one skill or namespace: a `use` line of its block covers it, or it is one
    skill that runs a module (a `learned.*` skill) whose own `use` lines the block covers, so calling it exercises no
    capability the block lacks. No `use learned` is needed in the parent for a learned skill offered by relevance."""
    if capability_allowed(use, allowed):
        return True
    uses = getattr(registry.get(use), "uses", None)
    if uses is None or use in _seen:
        return False
    return all(within_capabilities(u, allowed, registry, _seen | {use}) for u in uses)


def _module_skill_uses(use: str, registry) -> str:
    uses = getattr(registry.get(use), "uses", None)
    return f" (`{use}` runs a module that uses {', '.join(uses)})" if uses else ""


def _signature_problems(program: Program, spec: AmbiguousSpec) -> list[str]:
    wanted = required_signature(spec)
    main = program.pipelines.get("main")
    if main is None:
        return [f"the module must declare its entry pipeline as:\n{wanted}"]
    problems = []
    got = [(p.name, str(p.type)) for p in main.params]
    expected = [(name, str(ptype)) for name, ptype in spec.inputs]
    if got != expected:
        problems.append(f"`main` must take exactly ({', '.join(f'{n}: {t}' for n, t in expected) or 'nothing'}), "
                        f"got ({', '.join(f'{n}: {t}' for n, t in got) or 'nothing'})")
    if len(spec.outputs) == 1:
        if str(main.returns) != str(spec.outputs[0][1]):
            problems.append(f"`main` must return {spec.outputs[0][1]} (the block's output "
                            f"`{spec.outputs[0][0]}`), got -> {main.returns}")
    else:
        record = program.records.get(OUTPUTS_RECORD)
        fields = [(name, str(ptype)) for name, ptype in record.fields] if record else None
        wanted_fields = [(name, str(ptype)) for name, ptype in spec.outputs]
        if str(main.returns) != OUTPUTS_RECORD or fields != wanted_fields:
            problems.append(f"the block has several outputs, so the module must return a record:\n{wanted}")
    return problems


def _same_block(inner: AmbiguousSpec, spec: AmbiguousSpec) -> bool:
    return (inner.name, inner.doc.strip(), [(n, str(t)) for n, t in inner.inputs],
            [(n, str(t)) for n, t in inner.outputs]) == (
        spec.name, spec.doc.strip(), [(n, str(t)) for n, t in spec.inputs], [(n, str(t)) for n, t in spec.outputs])
