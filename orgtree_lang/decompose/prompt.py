"""The synthesis request for a block: spec, input summaries, ranked skills, surroundings, related modules — in budget."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from orgtree_lang.compile.code import AmbiguousSpec
from orgtree_lang.decompose.spec import required_signature
from orgtree_lang.runtime.errors import PipeError
from orgtree_lang.runtime.values import display

# The share of the author model's context window the problem may take (the seed's 25% per level): the spec, input
# summaries, skills, surroundings and related modules. The language card is the fixed instruction, not part of the
# problem: it is counted on its own, and the two must fit in the window together.
CONTEXT_SHARE = 0.25
FULL_SKILLS = 25  # with more allowed skills than this, only the most relevant get their full signature

# From the most to the least generous; the first that fits the budget is used.
_LEVELS = (
    {"summary": 300, "lines": 8, "related": 2, "full_skills": FULL_SKILLS},
    {"summary": 300, "lines": 8, "related": 1, "full_skills": FULL_SKILLS},
    {"summary": 160, "lines": 4, "related": 0, "full_skills": 12},
    {"summary": 80, "lines": 2, "related": 0, "full_skills": 6},
    {"summary": 40, "lines": 0, "related": 0, "full_skills": 0},
)

_WORD = re.compile(r"[a-z0-9]+")


class PromptTooLarge(PipeError):
    """Even the smallest form of the request does not fit the model's share of its context window."""


@dataclass
class Request:
    text: str
    tokens: int  # of `text`, the part the budget limits
    budget: int
    level: int  # index into _LEVELS: 0 is everything, higher means parts were cut to fit
    fixed_tokens: int = 0  # of the system prompt (the language card) sent with it


def words(text: str) -> set[str]:
    """Lower-case words of `text`, with snake_case and dotted names split into their parts."""
    return set(_WORD.findall(text.lower().replace("_", " ").replace(".", " ")))


def spec_words(spec: AmbiguousSpec) -> set[str]:
    return words(" ".join([spec.name, spec.doc, *(name for name, _ in spec.inputs),
                           *(name for name, _ in spec.outputs)]))


def spec_text(spec: AmbiguousSpec) -> str:
    return (f"Write a module for the step `{spec.name}`:\n{spec.doc}\n\nIt must declare exactly:\n"
            f"{required_signature(spec)}")


def allowed_skills(spec: AmbiguousSpec, registry) -> list:
    """The skills the block may use (its `use` set), most relevant to the spec first."""
    for namespace in getattr(registry, "lazy_namespaces", list)():
        # An MCP server the block may use is listed too, though the parent has not called it yet.
        if any(namespace == u or namespace.startswith(u + ".") or u.startswith(namespace + ".") for u in spec.uses):
            try:
                registry.load_lazy(namespace)
            except PipeError:
                pass  # not listed; the check of the module written for the block says why, if it calls it
    skills = [registry.get(name) for name in registry.names()
              if any(name == u or name.startswith(u + ".") for u in spec.uses)]
    wanted = spec_words(spec)

    def relevance(skill) -> tuple[int, str]:
        return (-len(wanted & words(f"{skill.name} {skill.description}")), skill.name)

    return sorted(skills, key=relevance)


def build_request(spec: AmbiguousSpec, inputs: dict[str, Any], registry, parent_file: str, parent_source: str,
                  related: list[tuple[str, str]], *, count, budget: int, fixed: str = "",
                  share: float = CONTEXT_SHARE, window: int | None = None,
                  described: dict[str, tuple[str, str]] | None = None, seed: int = 0,
                  offered: list | tuple = ()) -> Request:
    """The longest form of the request that fits in `budget` tokens, sent with `fixed` (the system prompt).

    `related` is (label, module source) pairs of saved modules for similar blocks; `count(text)` counts tokens.
    `described` gives inputs that went to the workspace memory as (full, short) descriptions to show instead of
    their values (decompose/inputs.py): the full one (with a view) in the longer forms, the short one after.
    `offered` is learned skills like the block that it may call though its `use` lines do not name them
    (decompose/reuse.offered_skills), most relevant first. The budget limits the request alone; with `window`, the system prompt, the budget and `seed` (the tokens the
    agents' shared memory may add, decompose/protocol.py) must fit in it together.
    Raises PromptTooLarge when even the shortest form does not fit, or the system prompt leaves no room."""
    skills = allowed_skills(spec, registry)
    fixed_tokens = count(fixed) if fixed else 0
    if window is not None and fixed_tokens + budget + seed > window:
        memory = f", the shared memory's shares ({seed:,} tokens)" if seed else ""
        raise PromptTooLarge(f"the language card ({fixed_tokens:,} tokens){memory} and the request's share "
                             f"({budget:,} tokens) do not fit in the model's {window:,}-token context window")
    smallest = None
    for index, level in enumerate(_LEVELS):
        text = _render(spec, inputs, skills, parent_file, parent_source, related, level, described or {}, offered)
        tokens = count(text)
        smallest = tokens
        if tokens <= budget:
            return Request(text, tokens, budget, index, fixed_tokens)
    raise PromptTooLarge(f"the request for block `{spec.name}` needs {smallest:,} tokens even in its shortest "
                         f"form, more than the {budget:,} tokens allowed ({share:.0%} of the model's "
                         "context window)")


def _render(spec: AmbiguousSpec, inputs: dict[str, Any], skills: list, parent_file: str, parent_source: str,
            related: list[tuple[str, str]], level: dict[str, int], described: dict[str, tuple[str, str]],
            offered: list | tuple = ()) -> str:
    def value(name: str) -> str:
        if name in described:
            return described[name][0 if level["summary"] >= _LEVELS[2]["summary"] else 1]
        return _summary(inputs.get(name), level["summary"])

    values = "\n".join(f"- {name} ({ptype}): {value(name)}" for name, ptype in spec.inputs)
    full = [skill_entry(skill) for skill in skills[: level["full_skills"]]]
    rest = [skill.name for skill in skills[level["full_skills"]:]]
    if rest:
        full.append(f"- also allowed (by name; `pipe skills NAME` shows one): {', '.join(rest)}")
    parts = [spec_text(spec), f"The input values this time:\n{values or '(none)'}",
             f"Skills the module may use (`use` them):\n{chr(10).join(full) or '(none: built-ins only)'}"]
    if offered:
        listed = [skill_entry(skill) if level["full_skills"] else f"- {skill.name}" for skill in offered]
        parts.append("Learned skills of this workspace like this step (each uses only what the block may use; call "
                     f"one with `use {offered[0].name}` in the module):\n" + "\n".join(listed))
    if level["lines"]:
        parts.append(f"Where the block sits in {parent_file}:\n{_surroundings(spec, parent_source, level['lines'])}")
    for label, source in related[: level["related"]]:
        parts.append(f"A saved module for a similar block ({label}), for reference:\n```pipe\n{source.strip()}\n```")
    return "\n\n".join(parts)


_EXAMPLE = re.compile(r"^Example:\s*`(.+)`\s*$", re.M)


def example_call(skill) -> str | None:
    """The example call written in the skill's docstring (`Example: `...``), if it has one."""
    match = _EXAMPLE.search(skill.description)
    return match.group(1) if match else None


def skill_entry(skill) -> str:
    """A skill as the author reads it: signature, what it does in one line, and an example call."""
    summary = skill.description.strip().split("\n", 1)[0]
    entry = f"- {skill.signature()}: {summary}" if summary else f"- {skill.signature()}"
    example = example_call(skill)
    return entry + (f"\n  e.g. {example}" if example else "")


def _surroundings(spec: AmbiguousSpec, source: str, context_lines: int) -> str:
    lines = source.splitlines()
    start = max(spec.span.line - 1 - context_lines, 0)
    end = min(spec.span.end_line + context_lines, len(lines))
    return "\n".join(f"{n + 1:>4} | {lines[n]}" for n in range(start, end))


def _summary(value: Any, limit: int) -> str:
    text = display(value, True)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters in all)"
