"""Build skill registries: the stdlib plus installed plugins, and one workspace's view of them with its pool applied."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from orgtree_lang.runtime.config import CONFIG_NAME, read_config
from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.runtime.skills import SkillRegistry
from orgtree_lang.runtime.workspace_skills import add_workspace_skills


def plugins_disabled_by_env() -> bool:
    value = os.environ.get("PIPE_NO_PLUGINS", "")
    return value not in ("", "0")


def default_registry(*, plugins: bool | None = None) -> SkillRegistry:
    """A fresh registry with the stdlib and, unless switched off, every installed skill plugin."""
    from orgtree_lang import stdlib  # the stdlib registers through the same public hook as a plugin

    registry = SkillRegistry()
    stdlib.register(registry)
    if plugins is None:
        plugins = not plugins_disabled_by_env()
    if plugins:
        registry.load_plugins()
    return registry


def workspace_registry(root: Path | str, base=None, *, plugins: bool | None = None, replay: bool = False,
                       config=None, skill_problems: list | None = None):
    """`base` (default: stdlib + plugins) and the workspace's own Python skills (`skills/`, `[skills] paths`) with
    this workspace's pool applied: `skills.report_bug`, every promoted
    module as `learned.<name>`, usage notes from `modify` decisions added to descriptions, removed skills left out;
    and the MCP servers of its orgtree.toml as lazy namespaces `mcp.NAME` (started only when a tool is asked for;
    with `replay`, not at all when the tools they listed at their last start are saved).

    Reads nothing (and creates nothing) when the workspace has no pool state yet. `config` is the run's
    orgtree.toml snapshot (RunSettings.file); None reads the file. A workspace skill module that cannot load is a
    SkillError, or, given a `skill_problems` list, an entry of it while the rest load (the language server)."""
    from orgtree_lang.pool.learned import LearnedStore, learned_skill
    from orgtree_lang.pool.store import PoolStore, state_db

    base = base if base is not None else default_registry(plugins=plugins)
    notes: dict[str, list[str]] = {}
    removed: set[str] = set()
    if state_db(root).is_file():
        store = PoolStore.for_workspace(root)
        try:
            notes, removed = store.notes(), set(store.removals())
        finally:
            store.close()
    registry = SkillRegistry()
    own = SkillRegistry()  # the workspace's own Python skills (skills/, [skills] paths), after the installed ones
    add_workspace_skills(own, Path(root), read_config(config if config is not None else Path(root) / CONFIG_NAME),
                         skill_problems)
    for skill in [*base, *own]:
        if skill.name in removed:
            continue
        if skill.name in registry:  # only a workspace skill can meet an installed one here
            clash = SkillError(f"workspace skill {skill.name} from {skill.origin} has the name of one from "
                               f"{registry.get(skill.name).origin}",
                               hint='rename the function, or give it a name of its own: @skill("ns.name")')
            if skill_problems is None:
                raise clash
            skill_problems.append(clash)
            continue
        if skill.name in notes:
            extra = "".join(f"\n\nUsage note: {note}" for note in notes[skill.name])
            skill = dataclasses.replace(skill, description=skill.description + extra)
        registry.register(skill, origin=skill.origin)
    if "skills.report_bug" not in registry and "skills.report_bug" not in removed:
        from orgtree_lang.pool import report_skill

        registry.register_module(report_skill, origin="orgtree_lang.pool")
    pending = [m for m in LearnedStore(root).all() if m.skill_name not in removed]
    # A learned module may call another one: register in rounds until nothing more compiles.
    problems: dict[str, str] = {}
    while pending:
        left = []
        for module in pending:
            try:
                registry.register(learned_skill(module, registry, notes.get(module.skill_name, [])),
                                  origin=f"learned ({module.path.name})")
            except (SkillError, ValueError) as err:
                problems[module.skill_name] = str(err)
                left.append(module)
            except Exception as err:  # CompileError: the module calls a skill that is not (yet) registered
                problems[module.skill_name] = getattr(err, "render", lambda: str(err))()
                left.append(module)
        if len(left) == len(pending):
            break
        pending = left
    registry.learned_problems = {m.skill_name: problems[m.skill_name] for m in pending}
    from orgtree_lang.mcp_client.skills import add_servers

    add_servers(registry, root, offline=replay, config=config)
    return registry
