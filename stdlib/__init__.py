"""The seed skill pool: register(registry) adds the text, json, math, lists, dicts, fs, time, kv, random, ids, code,
http, web, ctx, pad, insight, llm and research skills."""

from __future__ import annotations

from typing import TYPE_CHECKING

import orgtree_lang.memory.insight_skills as insight_skills
import orgtree_lang.memory.pad_skills as pad_skills
import orgtree_lang.memory.skills as memory_skills
import orgtree_lang.net.research_skills as research_skills
import orgtree_lang.net.skills as web_skills
from orgtree_lang.stdlib import clock, dicts, fs, fs_bytes, ids, json_skills, kv, lists, math_skills, random_skills, text
from orgtree_lang.stdlib import code_skills, text_bytes
from orgtree_lang.stdlib import llm

if TYPE_CHECKING:
    from orgtree_lang.runtime.skills import SkillRegistry

MODULES = (text, text_bytes, json_skills, math_skills, lists, dicts, fs, fs_bytes, clock, kv, random_skills, ids, code_skills, web_skills,
           memory_skills, pad_skills, insight_skills, llm, research_skills)


def register(registry: SkillRegistry) -> None:
    """The same hook a plugin package exposes: add every stdlib skill to `registry` with origin "stdlib"."""
    for module in MODULES:
        registry.register_module(module, origin="stdlib")
    # research.ask runs stdlib/research.pipe, whose skills it looks up in the registry it is registered in.
    registry.register(research_skills.ask_skill(registry), origin="stdlib")
