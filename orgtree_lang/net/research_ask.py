"""The research agent inside a skill call (research.ask): questions and a skill registry in; out, the findings of
stdlib/research.pipe's `ask` (or `[decompose] research_module`), run in a child machine whose model calls the calling
run meters."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from orgtree_lang.compile.api import compile_source
from orgtree_lang.org.scheduler import Scheduler
from orgtree_lang.runtime.config import ConfigError, config_section
from orgtree_lang.runtime.errors import PipeRuntimeError, SkillError
from orgtree_lang.runtime.skills import SkillContext
from orgtree_lang.runtime.values import to_plain
from orgtree_lang.vm.machine import Machine
from orgtree_lang.vm.services import Services

RESEARCH_MODULE = "research.pipe"


def research_source(ctx: SkillContext) -> tuple[str, str]:
    """(file, source) of the research module: `[decompose] research_module` of the workspace, else the stdlib's."""
    try:
        chosen = config_section("decompose", ctx.config, types={"research_module": str}).get("research_module", "")
    except ConfigError as err:
        raise SkillError(f"research.ask: {err}", hint=getattr(err, "hint", None)) from None
    if chosen:
        path = Path(chosen) if Path(chosen).is_absolute() else ctx.workspace.root / chosen
        try:
            return str(path), path.read_text(encoding="utf-8")
        except OSError as err:
            raise SkillError(f"research.ask: cannot read [decompose] research_module {path}: {err.strerror}",
                             hint="fix the path in orgtree.toml, or remove the key to use stdlib/research.pipe") \
                from None
    from importlib import resources

    return RESEARCH_MODULE, resources.files("orgtree_lang.stdlib").joinpath(RESEARCH_MODULE).read_text(
        encoding="utf-8")


def run_research(ctx: SkillContext, registry, questions: list[str], web: bool, max_reads: int) -> dict[str, Any]:
    """The research module's `ask` on `questions`, compiled with `registry`'s skills, run as a child of the calling
    run: its result as plain values (see research.ask in net/research_skills.py)."""
    questions = [q for q in questions if q.strip()]
    if not questions:
        raise SkillError("research.ask: no question given", hint='research.ask(["What port does X listen on?"])')
    file, source = research_source(ctx)
    try:
        program = compile_source(source, file, registry).program
    except Exception as err:  # noqa: BLE001 (a research_module that does not compile is the caller's to fix)
        raise SkillError(f"research.ask: the research module {file} does not compile: {err}",
                         hint="fix it, or remove [decompose] research_module to use stdlib/research.pipe") from None
    if "ask" not in program.pipelines:
        raise SkillError(f"research.ask: the research module {file} has no pipeline `ask`",
                         hint="give it `pipeline ask(questions: list[str], web: bool, max_reads: int)`, as "
                              "stdlib/research.pipe has")
    # The agent's steps inside the call have no keys of their own (the call is the journaled step), and their model
    # calls are charged to the calling run's meter, against its budget, for the node of this call.
    inner = dataclasses.replace(ctx, idempotency_key=None, run_id=f"{ctx.run_id}/research.ask")
    child = Machine(program, Services(registry=registry, context=inner, org=Scheduler))
    if ctx.spend is not None:
        child.context = dataclasses.replace(child.context, spend=ctx.spend)
        child.spend = ctx.spend
    try:
        child.start("ask", {"questions": questions, "web": web, "max_reads": max_reads}, run_id=inner.run_id)
        child.run()
    except PipeRuntimeError as err:
        if err.kind == "budget":
            raise  # the run's own limit: not the research's failure to report, and not catchable by the caller
        raise SkillError(f"research.ask failed: {err.message}" + (f" (at {err.span})" if err.span else ""),
                         hint=err.hint) from err
    return to_plain(child.state.result)
