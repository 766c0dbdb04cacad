"""The rule "a run must never change what a later run executes": which workspace paths a run may not write, and why.

The host executes or reads as settings some files of the workspace: the settings file, the run's state folder,
program sources, the scripts (and the modules beside them) of the MCP servers orgtree.toml starts, the settings
folders of editors and tools (which name programs to run), and the workspace's own Python skills (`skills/`,
`[skills] paths`). A run, or a module a model wrote, that could write one of them would run its own code on the
host, outside every sandbox, the next time. Every fs skill asks `refusal` before it writes; a new kind of host code
is one entry of `EXECUTED` (a function from the settings to paths).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

STATE_DIR_NAME = ".orgtree"
SETTINGS_FILE_NAME = "orgtree.toml"
SOURCE_SUFFIX = ".pipe"

# Folders whose files editors and tools of the host read as settings; many of them name a program to start
# (a language server, a task, a hook). Protected wherever they appear in the workspace.
TOOL_FOLDERS = frozenset({
    ".vscode", ".idea", ".fleet", ".zed", ".nova", ".vim", ".nvim", ".helix", ".emacs.d", ".theia", ".eclipse",
    ".settings", ".devcontainer", ".git", ".hg", ".svn", ".direnv", ".husky", ".cargo", ".config"})
TOOL_FOLDER_PREFIXES = (".sublime",)
# Single files of the same kind (editor, shell, build and test tools that run what they name).
TOOL_FILES = frozenset({
    ".envrc", ".exrc", ".nvimrc", ".nvim.lua", ".vimrc", ".dir-locals.el", ".dir-locals-2.el", ".editorconfig",
    ".gitattributes", ".gitmodules", ".pre-commit-config.yaml", ".npmrc", ".yarnrc", ".yarnrc.yml", ".pythonrc",
    "makefile", "gnumakefile", "justfile", "pyproject.toml", "setup.py", "setup.cfg", "conftest.py", "tox.ini",
    "noxfile.py", "pytest.ini", "package.json"})
TOOL_FILE_SUFFIXES = (".code-workspace", ".sublime-project", ".sublime-workspace")
# What Python, Node and a shell load from a folder they run a script in (or are started in): a new file of one
# of these kinds there shadows a module the server imports.
CODE_SUFFIXES = (".py", ".pyc", ".pyo", ".pyw", ".pyd", ".so", ".pth", ".js", ".mjs", ".cjs", ".ts", ".mts",
                 ".cts", ".node", ".sh", ".bash", ".zsh", ".env")
CODE_FOLDERS = frozenset({"__pycache__", "node_modules"})
CODE_FILES = frozenset({"package.json", ".env"})


@dataclass(frozen=True)
class Refusal:
    """Why a path may not be written: `what` follows the path in the error (`notes.py` is ...), `hint` the fix."""

    what: str
    hint: str


@dataclass(frozen=True)
class Executed:
    """Host code the settings name: a file the host runs (`file`) or a folder it imports from (`folder`)."""

    path: Path
    kind: str  # "file" or "folder"
    source: str  # the setting that names it, for the error: "[mcp.servers.notes] command"


def _mcp_servers(root: Path, tables: dict[str, Any]) -> Iterator[Executed]:
    """Each stdio MCP server: the words of its command that name files, their folders, its cwd and PYTHONPATH."""
    mcp = tables.get("mcp")
    servers = mcp.get("servers") if isinstance(mcp, dict) else None
    for name, entry in (servers.items() if isinstance(servers, dict) else ()):
        command = entry.get("command") if isinstance(entry, dict) else None
        if not isinstance(command, list):
            continue
        source = f"[mcp.servers.{name}] command"
        cwd = root / entry["cwd"] if isinstance(entry.get("cwd"), str) else root
        yield Executed(cwd, "folder", source)  # `python -m`, node and npx resolve modules from here
        for word in command:
            if isinstance(word, str) and word and not word.startswith("-") and _names_a_file(cwd, word):
                path = cwd / word
                yield Executed(path, "file", source)
                yield Executed(path.parent, "folder", source)  # Python puts the script's folder first on sys.path
                venv = _virtualenv_of(path)
                if venv is not None:
                    yield Executed(venv, "tree", source)
        env = entry.get("env") if isinstance(entry.get("env"), dict) else {}
        for variable in ("PYTHONPATH", "NODE_PATH"):
            for folder in str(env.get(variable, "")).split(os.pathsep):
                if folder:
                    yield Executed(cwd / folder, "folder", f"[mcp.servers.{name}] env {variable}")


def _sandbox_program(root: Path, tables: dict[str, Any]) -> Iterator[Executed]:
    """`[sandbox] bwrap`, when it names a file: the host starts it for every code.run."""
    sandbox = tables.get("sandbox")
    bwrap = sandbox.get("bwrap") if isinstance(sandbox, dict) else None
    if isinstance(bwrap, str) and "/" in bwrap:
        yield Executed(root / bwrap, "file", "[sandbox] bwrap")


SKILLS_FOLDER = "skills"  # the workspace's own Python skills, beside its programs (docs/skills.md)


def skill_folders(root: Path, tables: dict[str, Any]) -> list[tuple[Path, str]]:
    """The folders whose Python modules are the workspace's skills, each with the setting that names it: `skills/`
    of the root, and each of `[skills] paths` (relative to the root, inside it); ConfigError for a bad list."""
    from orgtree_lang.runtime.config import ConfigError

    skills = tables.get("skills")
    paths = skills.get("paths", []) if isinstance(skills, dict) else []
    where = root / SETTINGS_FILE_NAME
    if not isinstance(paths, list) or not all(isinstance(entry, str) and entry for entry in paths):
        raise ConfigError(f"{where}: [skills] paths must be a list of folders relative to the workspace, got "
                          f"{paths!r}", hint='e.g. paths = ["tools/skills"]')
    found = [(root / SKILLS_FOLDER, f"part of the workspace's own skills (its {SKILLS_FOLDER}/ folder, whose "
                                    "modules `use` imports)")]
    for entry in paths:
        if entry.startswith("/") or not _real(root / entry).is_relative_to(_real(root)):
            raise ConfigError(f"{where}: [skills] paths lists `{entry}`, which is not inside the workspace {root}",
                              hint="list folders relative to the workspace root (copy shared skills into it)")
        found.append((root / entry, "[skills] paths"))
    return found


def _workspace_skills(root: Path, tables: dict[str, Any]) -> Iterator[Executed]:
    """The folders of the workspace's skills, whole (every file: modules, their data, a new module), and the real
    file behind each symlink in them (a link to a file elsewhere in the workspace makes that file host code)."""
    for folder, source in skill_folders(root, tables):
        yield Executed(folder, "tree", source)
        if not folder.is_dir():
            continue  # protected all the same: a run must not create the folder with a module in it
        for inside, dirs, files in os.walk(folder, followlinks=True):
            for name in dirs + files:
                path = Path(inside) / name
                if path.is_symlink():
                    yield Executed(path, "tree" if path.is_dir() else "file", source)


EXECUTED: tuple[Callable[[Path, dict[str, Any]], Iterator[Executed]], ...] = (_mcp_servers, _sandbox_program,
                                                                              _workspace_skills)


def _names_a_file(cwd: Path, word: str) -> bool:
    # A word is a path when it has a folder part or a suffix, or names an existing file (missing files count:
    # a run must not be able to create the script a server will be started with).
    return "/" in word or PurePosixPath(word).suffix != "" or (cwd / word).is_file()


def _virtualenv_of(path: Path) -> Path | None:
    for folder in path.parents:
        if (folder / "pyvenv.cfg").is_file():
            return folder
    return None


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


class HostCode:
    """The paths of one workspace that a run may not write; built from orgtree.toml as it is when first asked.

    `writable` lists what a person allows (`[fs] writable`, paths relative to the root; a folder ends with `/`);
    it never covers the settings file or the state folder, and a generated module gets no exceptions at all."""

    def __init__(self, root: Path, tables: dict[str, Any], *, writable_sources: bool = False,
                 generated: bool = False, writable: tuple[str, ...] = ()) -> None:
        self.root = root
        self.writable_sources = writable_sources and not generated
        self.generated = generated
        self.writable = () if generated else tuple(_real(root / entry) for entry in writable)
        self.executed: list[Executed] = []
        for contributor in EXECUTED:
            for item in contributor(root, tables):
                real = _real(item.path)
                if real == root or real.is_relative_to(root):
                    self.executed.append(Executed(real, item.kind, item.source))

    @classmethod
    def of(cls, root: Path, tables: dict[str, Any], *, writable_sources: bool = False,
           generated: bool = False) -> HostCode:
        """The protections of the settings `tables` (orgtree.toml of `root`); ConfigError for a bad `[fs] writable`."""
        from orgtree_lang.runtime.config import ConfigError

        fs = tables.get("fs", {})
        writable = fs.get("writable", []) if isinstance(fs, dict) else []
        where = root / SETTINGS_FILE_NAME
        if not isinstance(writable, list) or not all(isinstance(entry, str) and entry for entry in writable):
            raise ConfigError(f"{where}: [fs] writable must be a list of paths relative to the workspace, "
                              f"got {writable!r}", hint='e.g. writable = ["tools/generated/", "Makefile"]')
        for entry in writable:
            real = _real(root / entry)
            if entry.startswith("/") or not real.is_relative_to(root):
                raise ConfigError(f"{where}: [fs] writable lists `{entry}`, which is not inside the workspace {root}",
                                  hint="list paths relative to the workspace root")
        return cls(root, tables, writable_sources=writable_sources, generated=generated, writable=tuple(writable))

    def refusal(self, real: Path) -> Refusal | None:
        """Why the resolved path `real` (inside the root) may not be written, or None when it may."""
        found = self._settings_or_state(real)
        if found is not None:
            return found
        if any(real == allowed or real.is_relative_to(allowed) for allowed in self.writable):
            return None
        found = self._refusal_by_name(real)
        if found is None and real.is_file() and os.stat(real).st_nlink > 1:
            found = self._hard_link_refusal(real)
        return found

    def _settings_or_state(self, real: Path) -> Refusal | None:
        state = _real(self.root / STATE_DIR_NAME)
        settings = self.root / SETTINGS_FILE_NAME
        target = _real(settings)
        same = real in (settings, target, state) or real.is_relative_to(state)
        if not same:
            try:
                same = os.path.samefile(real, target)
            except OSError:  # one of them does not exist (yet): no hard link between them
                same = False
        if same:
            return Refusal(f"is the workspace's settings file or inside the run's state folder {self.root / STATE_DIR_NAME}",
                           "programs may read them but not change them; write somewhere else in the workspace")
        return None

    def _refusal_by_name(self, real: Path) -> Refusal | None:
        if real.suffix.lower() == SOURCE_SUFFIX and not self.writable_sources:
            return _source_refusal(self.generated)
        parts = real.relative_to(self.root).parts
        for index, part in enumerate(parts):
            low = part.lower()
            last = index == len(parts) - 1
            if (not last and (low in TOOL_FOLDERS or low.startswith(TOOL_FOLDER_PREFIXES))) or \
                    (last and (low in TOOL_FILES or low in TOOL_FOLDERS or low.endswith(TOOL_FILE_SUFFIXES))):
                return Refusal(
                    f"is in the settings of an editor or tool (`{'/'.join(parts[:index + 1])}`), which may name a "
                    "program the host runs",
                    _allow_hint(self.generated))
        for item in self.executed:
            if self._covers(item, real):
                how = (f"{'named by' if item.kind == 'file' else 'importable by'} `{item.source}` in orgtree.toml"
                       if item.source.startswith("[") else item.source)
                return Refusal(f"is code the host executes: {how}, and a run must never change what a later run "
                               "executes", _allow_hint(self.generated))
        return None

    @staticmethod
    def _covers(item: Executed, real: Path) -> bool:
        if item.kind == "file":
            return real == item.path
        if item.kind == "tree":
            return real == item.path or real.is_relative_to(item.path)
        if not real.is_relative_to(item.path) or real == item.path:
            return False
        inside = real.relative_to(item.path).parts
        name = inside[-1].lower()
        return (name.endswith(CODE_SUFFIXES) or name in CODE_FILES or any(p.lower() in CODE_FOLDERS for p in inside)
                or (len(inside) > 1 and _importable_package(item.path, inside)))

    def _hard_link_refusal(self, real: Path) -> Refusal | None:
        """A file with several names is refused when another of its names is protected (fs.append writes in place)."""
        identity = os.stat(real)
        seen = 0
        for folder, dirs, files in os.walk(self.root):
            for name in files:
                seen += 1
                other = Path(folder) / name
                try:
                    mine = os.stat(other, follow_symlinks=False)
                except OSError:
                    continue
                if (mine.st_dev, mine.st_ino) == (identity.st_dev, identity.st_ino) and other != real:
                    found = self._settings_or_state(other) or self._refusal_by_name(other)
                    if found is not None:
                        return Refusal(f"is a hard link to `{other.relative_to(self.root).as_posix()}`, which "
                                       + found.what, found.hint)
            if seen > 200_000:  # a workspace too big to search: a file with several names is refused outright
                return Refusal("has several names (hard links) that could not all be checked",
                               "write a new file instead of one with hard links")
        return None


def _importable_package(folder: Path, inside: tuple[str, ...]) -> bool:
    # Any file under a subfolder that holds Python (a package, or a namespace package) can be imported as data
    # too (importlib.resources); a subfolder of plain data files stays writable.
    return (folder / inside[0] / "__init__.py").exists()


def _source_refusal(generated: bool) -> Refusal:
    if generated:
        return Refusal("is a program source (.pipe), and a generated module may not write program sources",
                       "generated modules never change code a later run executes, whatever orgtree.toml says; "
                       "write the result to a file of another kind")
    return Refusal("is a program source (.pipe); runs may read program sources but not change them, so that no run "
                   "changes the code or capabilities of a later run",
                   "write somewhere else, or, if a program of yours must write .pipe files, a person may allow it "
                   "with `[fs] writable_sources = true` in orgtree.toml (generated modules never may)")


def _allow_hint(generated: bool) -> str:
    if generated:
        return "generated modules never change code the host executes, whatever orgtree.toml says; write elsewhere"
    return ("write somewhere else, or, if a program of yours must write it, a person may list it in orgtree.toml: "
            '`[fs] writable = ["PATH"]` (a folder ends with `/`; generated modules never may)')
