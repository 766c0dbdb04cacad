"""Promoted modules: `.orgtree/skills/<name>.pipe` in the workspace, each callable from any pipeline as `learned.<name>`."""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orgtree_lang.runtime.errors import PipeRuntimeError, SkillError, UsageError
from orgtree_lang.runtime.files import write_atomic

NAMESPACE = "learned"
HEADER = "# orgtree-skill: "
_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")


@dataclass
class LearnedModule:
    """One promoted module: its skill name, its spec (docstring, inputs, outputs, uses), source and provenance."""

    path: Path
    name: str
    doc: str
    provenance: dict[str, str]
    body: str  # the module without its header

    @property
    def skill_name(self) -> str:
        return f"{NAMESPACE}.{self.name}"


def skills_dir(root: Path | str) -> Path:
    from orgtree_lang.runtime.workspace import STATE_DIR_NAME

    return Path(root) / STATE_DIR_NAME / "skills"


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise UsageError(f"`{name}` cannot name a learned skill: use lower-case letters, digits and `_`",
                         hint="e.g. rank_files; pick one with --name")
    return name


class LearnedStore:
    """Reads and writes the promoted modules of one workspace; every write is atomic and compiles first."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        self.folder = skills_dir(root)

    def path_for(self, name: str) -> Path:
        return self.folder / f"{check_name(name)}.pipe"

    def all(self) -> list[LearnedModule]:
        if not self.folder.is_dir():
            return []
        return [self.read(p) for p in sorted(self.folder.glob("*.pipe"))]

    def get(self, name: str) -> LearnedModule | None:
        path = self.folder / f"{name}.pipe"
        return self.read(path) if path.is_file() else None

    def read(self, path: Path) -> LearnedModule:
        from orgtree_lang.decompose.store import split_header

        provenance, body = split_header(Path(path).read_text(encoding="utf-8"), HEADER)
        return LearnedModule(Path(path), Path(path).stem, json.loads(provenance.get("doc", '""')), provenance, body)

    def save(self, name: str, body: str, doc: str, provenance: dict[str, str], registry) -> LearnedModule:
        """Write `<name>.pipe` (after checking that it compiles as saved); an older version goes to history/."""
        from orgtree_lang.decompose.store import StoreError, checked_module_text

        path = self.path_for(name)
        try:
            text = checked_module_text(path, {"name": name, "doc": json.dumps(doc), **provenance}, body, registry,
                                       HEADER)
        except StoreError as err:
            diagnostics = str(err).split("\n", 1)[1]
            raise SkillError(f"refusing to save learned skill `{name}`: it does not compile:\n{diagnostics}") from None
        self.folder.mkdir(parents=True, exist_ok=True)
        if path.is_file():
            history = self.folder / "history"
            history.mkdir(exist_ok=True)
            os.replace(path, history / f"{name}.{time.strftime('%Y%m%d-%H%M%S')}.{os.getpid()}.pipe")
        write_atomic(path, text)
        return self.read(path)

    def export(self, target: Path | str) -> list[Path]:
        """Copy every promoted module (header included) into `target`; returns the written files."""
        target = Path(target)
        target.mkdir(parents=True, exist_ok=True)
        written = []
        for module in self.all():
            out = target / module.path.name
            write_atomic(out, module.path.read_text(encoding="utf-8"))
            written.append(out)
        return written


def learned_skill(module: LearnedModule, registry, notes: list[str] = ()):
    """A Skill `learned.<name>` whose calls run the module's `main` in a child VM (compiled on first call)."""
    from orgtree_lang.compile.api import compile_source
    from orgtree_lang.runtime.skills import MISSING, Param, Skill

    program = compile_source(module.path.read_text(encoding="utf-8"), str(module.path), registry).program
    main = program.pipelines["main"]
    for p in main.params:
        if p.type.kind == "record":
            raise SkillError(f"learned skill {module.skill_name}: parameter `{p.name}` is a record "
                             f"({p.type}), which other modules cannot build", hint="take a dict instead")
    returns = main.returns
    if _has_record(returns):
        from orgtree_lang.syntax import types as T

        returns = T.dict_of(T.primitive("any")) if returns.kind == "record" else T.primitive("any")
    params = tuple(Param(p.name, p.type, p.default if p.has_default else MISSING) for p in main.params)
    description = module.doc.strip() + "".join(f"\n\nUsage note: {note}" for note in notes)

    def run(ctx, **arguments: Any) -> Any:
        return run_learned(module, program, registry, ctx, arguments)

    return Skill(name=module.skill_name, description=description, params=params, returns=returns,
                 returns_doc=main.doc.strip(), pure=False, func=run, origin=f"learned ({module.path.name})",
                 takes_context=True, idempotent=False, uses=tuple(program.uses))


def run_learned(module: LearnedModule, program, registry, ctx, arguments: dict[str, Any]) -> Any:
    """Run the promoted module as a child of the calling run; a failure inside it is a SkillError naming the file."""
    from orgtree_lang.org.scheduler import Scheduler
    from orgtree_lang.runtime.values import RecordValue, to_plain
    from orgtree_lang.vm.machine import Machine
    from orgtree_lang.vm.services import Services

    child = Machine(program, Services(registry=registry, context=ctx, org=Scheduler))
    run_id = f"{getattr(ctx, 'run_id', 'local')}/{module.skill_name}"
    try:
        child.start("main", dict(arguments), run_id=run_id)
        child.run()
    except PipeRuntimeError as err:
        raise SkillError(f"{module.skill_name} failed: {err.message} (at {err.span})",
                         hint=err.hint or f"the module is {module.path}; report it with `pipe skills report "
                                          f"{module.skill_name} ...`") from err
    result = child.state.result
    return to_plain(result) if isinstance(result, RecordValue) or _contains_record(result) else result


def _has_record(ptype) -> bool:
    if ptype.kind == "record":
        return True
    arg = getattr(ptype, "arg", None)
    return arg is not None and _has_record(arg)


def _contains_record(value: Any) -> bool:
    from orgtree_lang.runtime.values import RecordValue

    if isinstance(value, RecordValue):
        return True
    if isinstance(value, list):
        return any(_contains_record(v) for v in value)
    if isinstance(value, dict):
        return any(_contains_record(v) for v in value.values())
    return False
