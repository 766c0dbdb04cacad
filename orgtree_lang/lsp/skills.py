"""The skills each workspace's documents see, built once and built again only when the workspace's skill pool
(state.db: usage notes and removals; .orgtree/skills: promoted modules) or its own Python skills change on disk."""

from __future__ import annotations

from pathlib import Path

from orgtree_lang.runtime.config import CONFIG_NAME, ConfigError, read_config
from orgtree_lang.runtime.host_code import skill_folders


class WorkspaceSkills:
    """The stdlib and plugins are registered once per server; each workspace's pool is applied on top of them."""

    def __init__(self) -> None:
        self._base = None
        self._by_root: dict[Path, tuple[tuple, object, list]] = {}

    def registry(self, root: Path):
        from orgtree_lang.run.registries import default_registry, workspace_registry

        if self._base is None:
            self._base = default_registry()
        stamp = _pool_stamp(root)
        known = self._by_root.get(root)
        if known is None or known[0] != stamp:
            problems: list = []  # a workspace skill module that cannot load blinds nothing else
            known = (stamp, workspace_registry(root, base=self._base, skill_problems=problems), problems)
            self._by_root[root] = known
        return known[1]

    def problems(self, root: Path) -> list:
        """The SkillErrors of the workspace's own skill modules that did not load, as of the last registry()."""
        known = self._by_root.get(root)
        return list(known[2]) if known is not None else []


def _pool_stamp(root: Path) -> tuple:
    """Changes whenever a file the workspace registry reads changes (a few stat calls, cheap on every keystroke)."""
    from orgtree_lang.pool.learned import skills_dir
    from orgtree_lang.runtime.state_db import state_db_path

    db = state_db_path(root)
    files = [db, db.with_name(db.name + "-wal")]  # in WAL mode a committed change may touch only the -wal file
    learned = skills_dir(root)
    if learned.is_dir():
        files += sorted(learned.glob("*.pipe"))
    files.append(root / CONFIG_NAME)  # which folders hold the workspace's own Python skills
    try:
        folders = skill_folders(root, read_config(root / CONFIG_NAME))
    except ConfigError:
        folders = []
    for folder, _source in folders:
        if folder.is_dir():
            files += sorted(folder.rglob("*.py"))
    stamp = []
    for path in files:
        try:
            info = path.stat()
            stamp.append((str(path), info.st_mtime_ns, info.st_size))
        except OSError:
            stamp.append((str(path), None, None))
    return tuple(stamp)
