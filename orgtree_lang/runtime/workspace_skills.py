"""Import a workspace's own Python skills (its `skills/` folder and `[skills] paths`) and register their @skill
functions: the same decorator, docs and call history as a packaged plugin's, without a distribution.

Each module of such a folder (`weather.py`, or a package `geo/` with an `__init__.py`; names starting with `_` or
`.` are helpers, not skill modules) is imported as a submodule of a package made for the folder, so modules can
import their helpers relatively (`from ._units import celsius`) and nothing is put on `sys.path`. A function's
default name is `<module>.<function>`, so `use weather` reaches `weather.forecast`. Nothing writes bytecode into
the folder. These files are host code a person wrote: runs may never write them (runtime/host_code.py)."""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

from orgtree_lang.runtime.errors import SkillError
from orgtree_lang.runtime.host_code import skill_folders

PACKAGE_PREFIX = "_pipe_workspace_skills_"


class _NoBytecodeLoader(importlib.machinery.SourceFileLoader):
    """Loads a skill module from source without leaving `__pycache__/` in the workspace."""

    def set_data(self, path, data, *, _mode=0o666) -> None:  # the bytecode cache write
        return None


def skill_modules(folder: Path) -> list[Path]:
    """The skill modules of one folder, in name order: `NAME.py` files and `NAME/__init__.py` packages."""
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.iterdir()):
        if path.name.startswith(("_", ".")):
            continue
        if path.is_file() and path.suffix == ".py" and path.stem.isidentifier():
            found.append(path)
        elif path.is_dir() and path.name.isidentifier() and (path / "__init__.py").is_file():
            found.append(path / "__init__.py")
    return found


def add_workspace_skills(registry, root: Path, tables: dict[str, Any], problems: list | None = None) -> list[str]:
    """Register the @skill functions of every skill module of the workspace at `root` (`tables`: its orgtree.toml);
    returns the modules' paths relative to the root. SkillError names the module that failed and why; with a
    `problems` list, each such error is put there instead and the other modules still load (the editor's way)."""
    loaded = []
    for folder, _source in skill_folders(root, tables):
        modules = skill_modules(folder)
        if not modules:
            continue
        package = _fresh_package(folder)
        for path in modules:
            shown = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
            try:
                module = _import(package, path, shown)
                try:
                    registry.register_module(module, origin=f"workspace ({shown})")
                except (TypeError, ValueError) as err:
                    raise SkillError(f"workspace skill module {shown}: {err}",
                                     hint="rename the function, or give it a name of its own: @skill(\"ns.name\")"
                                     ) from None
            except SkillError as err:
                if problems is None:
                    raise
                problems.append(err)
                continue
            loaded.append(shown)
    return loaded


def _fresh_package(folder: Path) -> str:
    """A package whose path is `folder`, made anew (with none of its old submodules) so edits are seen."""
    name = PACKAGE_PREFIX + hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:16]
    for loaded in [key for key in sys.modules if key == name or key.startswith(name + ".")]:
        del sys.modules[loaded]
    package = types.ModuleType(name, f"the workspace skills of {folder}")
    package.__path__ = [str(folder)]
    package.__package__ = name
    sys.modules[name] = package
    return name


def _import(package: str, path: Path, shown: str) -> types.ModuleType:
    is_package = path.name == "__init__.py"
    name = f"{package}.{path.parent.name if is_package else path.stem}"
    loader = _NoBytecodeLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, path, loader=loader,
                                                  submodule_search_locations=[str(path.parent)] if is_package else None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and relative imports look their module up here
    try:
        loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        line = _line_in(exc, path)
        raise SkillError(f"workspace skill module {shown}{line} failed to load: {type(exc).__name__}: {exc}",
                         hint=f"fix it, or move it out of the skills folder (a name starting with `_` is a helper, "
                              f"not a skill module); `pipe skills` loads it again") from exc
    return module


def _line_in(exc: BaseException, path: Path) -> str:
    """`:LINE` of the innermost frame of `exc` in the module's own file, or of the syntax error there."""
    if isinstance(exc, SyntaxError) and exc.lineno and Path(exc.filename or "") == path:
        return f":{exc.lineno}"
    frame, line = exc.__traceback__, None
    while frame is not None:
        if Path(frame.tb_frame.f_code.co_filename) == path:
            line = frame.tb_lineno
        frame = frame.tb_next
    return f":{line}" if line else ""
