"""Hover text (Markdown) and definition places for a Reference: skills with their docs and the pool's usage notes,
pipelines, records, built-ins, labels, and the saved child modules of ambiguous blocks."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orgtree_lang.lsp.analysis import binding_of, find_label, name_span_after, workspace_root
from orgtree_lang.lsp.references import Reference
from orgtree_lang.runtime.builtins import BUILTINS
from orgtree_lang.syntax import nodes as n
from orgtree_lang.syntax.spans import Span


@dataclass(frozen=True)
class Place:
    """Where a definition is: a span of the document itself, or the start of another file."""

    span: Span | None = None
    path: Path | None = None


def hover_text(ref: Reference, module: n.Module, registry, file: Path) -> str | None:
    """Markdown for the reference, or None when there is nothing to say (a variable, an unknown name)."""
    if ref.kind == "skill":
        return skill_markdown(registry.get(ref.name))
    if ref.kind == "namespace":
        skills = registry.in_namespace(ref.name)
        listing = "\n".join(f"- `{s.name}`: {_first_line(s.description)}" for s in skills[:40])
        more = f"\n- … and {len(skills) - 40} more" if len(skills) > 40 else ""
        return f"```pipe\nuse {ref.name}\n```\nnamespace of {len(skills)} skill(s):\n\n{listing}{more}"
    if ref.kind == "pipeline":
        decl = next(p for p in module.pipelines if p.name == ref.name)
        return _code(pipeline_signature(decl)) + _doc(decl.doc)
    if ref.kind == "record":
        decl = next(r for r in module.records if r.name == ref.name)
        return _code(record_text(decl)) + _doc(decl.doc)
    if ref.kind == "builtin":
        return _code(BUILTINS[ref.name].signature) + "\n\nbuilt-in: pure, always available, not journaled"
    if ref.kind == "block":
        return _code(block_signature(ref.node)) + _doc(ref.node.doc) + _saved_note(ref.node, file)
    if ref.kind == "label" and ref.pipeline is not None and find_label(ref.pipeline, ref.name) is not None:
        return f"```pipe\nlabel {ref.name}\n```\n`goto {ref.name}` jumps here (within pipeline `{ref.pipeline.name}`)"
    return None


def definition(ref: Reference, module: n.Module, lines: list[str], registry, file: Path) -> Place | None:
    """Where the reference is declared, or None (a built-in, a skill written in Python, an unsaved block)."""
    if ref.kind == "pipeline":
        return Place(next(p for p in module.pipelines if p.name == ref.name).name_span)
    if ref.kind == "record":
        decl = next(r for r in module.records if r.name == ref.name)
        return Place(name_span_after(lines, decl.span, "record", decl.name))
    if ref.kind == "label" and ref.pipeline is not None:
        label = find_label(ref.pipeline, ref.name)
        return Place(name_span_after(lines, label.span, "label", label.name)) if label is not None else None
    if ref.kind == "variable" and ref.pipeline is not None:
        span = binding_of(ref.pipeline, ref.name)
        return Place(span) if span is not None else None
    if ref.kind == "block":
        path = saved_module(ref.node, file)
        return Place(path=path) if path is not None else None
    if ref.kind == "skill" and ref.name.startswith("learned."):
        from orgtree_lang.pool.learned import LearnedStore

        path = LearnedStore(workspace_root(file)).path_for(ref.name.removeprefix("learned."))
        return Place(path=path) if path.is_file() else None
    return None


def saved_module(block: n.Ambiguous, file: Path) -> Path | None:
    """The module the decomposer saved for this block in the workspace's module store, if there is one."""
    from orgtree_lang.decompose.store import ModuleStore

    path = ModuleStore(workspace_root(file)).path_for(str(file), block.name)
    return path if path.is_file() else None


def skill_markdown(skill) -> str:
    """A skill's signature, its description (usage notes from the pool included), its parameters and result."""
    parts = [_code(skill.signature()), skill.description.strip()]
    documented = [p for p in skill.params if p.doc]
    if documented:
        parts.append("**Parameters**\n\n" + "\n".join(f"- `{p.name}`: {p.doc}" for p in documented))
    if skill.returns_doc:
        parts.append(f"**Returns** {skill.returns_doc}")
    traits = [word for word, on in (("pure", skill.pure), ("slow", skill.slow)) if on]
    parts.append(f"*{skill.origin}*" + (f" · {', '.join(traits)}" if traits else ""))
    return "\n\n".join(part for part in parts if part)


def pipeline_signature(decl: n.Pipeline) -> str:
    from orgtree_lang.syntax.unparse import expression_text

    params = ", ".join(f"{p.name}: {p.type}" + (f" = {expression_text(p.default)}" if p.default is not None else "")
                       for p in decl.params)
    returns = f" -> {decl.returns}" if decl.returns is not None else ""
    return f"pipeline {decl.name}({params}){returns}"


def block_signature(block: n.Ambiguous) -> str:
    from orgtree_lang.syntax.unparse import expression_text

    inputs = ", ".join(f"{i.name}: {i.type}" + (f" = {expression_text(i.default)}" if i.default is not None else "")
                       for i in block.inputs)
    outputs = ", ".join(f"{o.name}: {o.type}" for o in block.outputs)
    return f"ambiguous {block.name}({inputs}) -> {outputs}"


def record_text(decl: n.RecordDecl) -> str:
    from orgtree_lang.syntax.unparse import expression_text

    fields = "".join(f"\n    {f.name}: {f.type}" + (f" = {expression_text(f.default)}" if f.default is not None else "")
                     for f in decl.fields)
    return f"record {decl.name}:{fields}"


def _saved_note(block: n.Ambiguous, file: Path) -> str:
    path = saved_module(block, file)
    if path is None:
        return "\n\nno module saved for this block yet: the decomposer writes one on the first run that reaches it"
    return f"\n\nsaved module: `{path}` (go to definition opens it)"


def _code(text: str) -> str:
    return f"```pipe\n{text}\n```"


def _doc(doc: str | None) -> str:
    return f"\n\n{doc.strip()}" if doc else ""


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""
