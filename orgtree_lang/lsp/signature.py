"""Signature help: the line up to the cursor in, the call it is inside (a skill, pipeline, record or built-in) out,
with the signature's parameters and the one being written."""

from __future__ import annotations

import re
from dataclasses import dataclass

from orgtree_lang.runtime.builtins import BUILTINS
from orgtree_lang.syntax import nodes as n

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"?|\'(?:[^\'\\]|\\.)*\'?')
_CALLEE = re.compile(r"([A-Za-z_][\w.]*)\s*$")
_KEYWORD = re.compile(r"^\s*([A-Za-z_]\w*)\s*=(?!=)")


@dataclass(frozen=True)
class Signature:
    label: str  # the whole signature, e.g. `text.split(text: str, sep: str? = none) -> list[str]`
    parameters: tuple[tuple[int, int], ...]  # each parameter's [start, end) within the label
    active: int | None  # the parameter being written, if it is known
    documentation: str = ""


def signature_at(prefix: str, module: n.Module | None, registry) -> Signature | None:
    """The signature of the innermost call still open at the end of `prefix`, or None outside a call."""
    text = _STRING.sub('""', prefix)  # commas and brackets inside strings do not count
    depth, commas, start = 0, 0, len(text)
    for index in range(len(text) - 1, -1, -1):
        char = text[index]
        if char in ")]}":
            depth += 1
        elif char in "([{":
            if depth == 0:
                if char != "(":
                    return None
                start = index
                break
            depth -= 1
        elif char == "," and depth == 0:
            commas += 1
    else:
        return None
    callee = _CALLEE.search(text[:start])
    if callee is None:
        return None
    arguments = _top_level(text[start + 1:])
    keyword = _KEYWORD.match(arguments[-1])
    # After a keyword argument the position no longer says which parameter comes next.
    position = None if any(_KEYWORD.match(a) for a in arguments[:-1]) else commas
    return _signature(callee.group(1), position, keyword.group(1) if keyword else None, module, registry)


def _top_level(text: str) -> list[str]:
    """The arguments written so far: `text` cut at its commas outside brackets."""
    parts, depth, begin = [], 0, 0
    for index, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[begin:index])
            begin = index + 1
    return parts + [text[begin:]]


def _signature(name: str, position: int | None, keyword: str | None, module: n.Module | None, registry) -> Signature | None:
    from orgtree_lang.lsp.navigate import skill_markdown

    skill = registry.get(name)
    if skill is not None:
        names = [p.name for p in skill.params]
        return _labelled(skill.signature(), name, names, position, keyword, skill_markdown(skill))
    if module is not None:
        from orgtree_lang.lsp.navigate import pipeline_signature, record_text

        for decl in module.pipelines:
            if decl.name == name:
                label = pipeline_signature(decl).removeprefix("pipeline ")
                return _labelled(label, name, [p.name for p in decl.params], position, keyword, decl.doc or "")
        for decl in module.records:
            if decl.name == name:
                fields = ", ".join(line.strip() for line in record_text(decl).splitlines()[1:])
                return _labelled(f"{name}({fields}) -> {name}", name, [f.name for f in decl.fields], position,
                                 keyword, decl.doc or "")
    if name in BUILTINS:
        return Signature(BUILTINS[name].signature, (), None)
    return None


def _labelled(label: str, name: str, params: list[str], position: int | None, keyword: str | None,
              documentation: str) -> Signature:
    """Each parameter's span in the label: from its `name: ` to the `, ` before the next one, or to the `)`."""
    starts, at = [], len(name) + 1
    for param in params:
        at = label.index(f"{param}: ", at)
        starts.append(at)
    close = label.rfind(") -> ") if ") -> " in label else label.rfind(")")
    ends = [start - 2 for start in starts[1:]] + [close]
    if keyword in params:
        active = params.index(keyword)
    else:
        active = position if position is not None and position < len(params) else None
    return Signature(label, tuple(zip(starts, ends)), active, documentation)
