"""Completion candidates for a place in a .pipe document: the skills of a namespace after `ns.`, namespaces and
skills on a `use` line, else the language's keywords, built-ins, types, namespaces, pipelines and records."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from orgtree_lang.runtime.builtins import BUILTINS
from orgtree_lang.syntax import nodes as n
from orgtree_lang.syntax.types import PRIMITIVES

_QUALIFIED = re.compile(r"(?<![\w.])((?:[A-Za-z_]\w*\.)+)(\w*)$")
_USE_LINE = re.compile(r"^\s*use\s+(?:[\w.]+\s*,\s*)*([\w.]*)$")
# `label`, `goto` (a NAME NAME statement) and `route` (a NAME STRING declaration) are soft keywords: the grammar
# does not quote them.
_SOFT_KEYWORDS = ("label", "goto", "route")


@dataclass(frozen=True)
class Candidate:
    label: str
    kind: str  # keyword | builtin | type | namespace | skill | pipeline | record
    detail: str = ""
    documentation: str = ""


@cache
def keywords() -> tuple[str, ...]:
    """Every keyword of the language, read from the grammar itself so that a new one is offered at once."""
    from orgtree_lang.syntax.parser import grammar_text

    quoted = set(re.findall(r'"([a-z]+)"', grammar_text()))
    return tuple(sorted(quoted | set(_SOFT_KEYWORDS)))


def candidates(prefix: str, module: n.Module | None, registry) -> list[Candidate]:
    """What may be written at the end of `prefix` (the line up to the cursor)."""
    use = _USE_LINE.match(prefix)
    if use is not None:
        return _namespaces_and_skills(use.group(1), registry)
    qualified = _QUALIFIED.search(prefix)
    if qualified is not None:
        return _members(qualified.group(1).rstrip("."), registry)
    found = [Candidate(word, "keyword") for word in keywords()]
    found += [Candidate(b.name, "builtin", b.signature) for b in BUILTINS.values()]
    found += [Candidate(name, "type") for name in (*PRIMITIVES, "list", "dict") if name not in keywords()]
    found += [Candidate(ns, "namespace", f"{len(registry.in_namespace(ns))} skills")
              for ns in sorted(registry.namespaces()) if "." not in ns]
    if module is not None:
        found += [Candidate(p.name, "pipeline", f"pipeline {p.name}", p.doc or "") for p in module.pipelines]
        found += [Candidate(r.name, "record", f"record {r.name}", r.doc or "") for r in module.records]
    return found


def _members(namespace: str, registry) -> list[Candidate]:
    """The next segment after `namespace.`: its skills and the namespaces nested in it."""
    found: dict[str, Candidate] = {}
    depth = namespace.count(".") + 1
    for skill in registry.in_namespace(namespace):
        parts = skill.name.split(".")
        if len(parts) == depth + 1:
            found[parts[depth]] = Candidate(parts[depth], "skill", skill.signature(), skill.description)
        else:
            nested = ".".join(parts[:depth + 1])
            found.setdefault(parts[depth], Candidate(parts[depth], "namespace", f"namespace {nested}"))
    return sorted(found.values(), key=lambda c: c.label)


def _namespaces_and_skills(partial: str, registry) -> list[Candidate]:
    """On a `use` line: whole dotted names, namespaces first."""
    found = [Candidate(ns, "namespace", f"{len(registry.in_namespace(ns))} skills")
             for ns in sorted(registry.namespaces()) if ns.startswith(partial)]
    found += [Candidate(name, "skill", registry.get(name).signature(), registry.get(name).description)
              for name in registry.names() if name.startswith(partial)]
    return found
