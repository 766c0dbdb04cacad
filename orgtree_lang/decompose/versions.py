"""Every version of a generated module in state.db (`module_versions`): the first as written, each repair after a
run-time failure, with the cases it must pass; what `pipe modules show NAME --history` prints."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orgtree_lang.decompose.simulate import Case
from orgtree_lang.decompose.store import BODY_HASH, SavedModule, body_hash
from orgtree_lang.runtime.state_db import Transaction, open_state_db, state_db_path
from orgtree_lang.runtime.values import decode, encode


@dataclass(frozen=True)
class ModuleVersion:
    """One version of a module: its number, why it was made, its text and the cases it was simulated on."""

    key: str
    module: str
    version: int
    body_hash: str
    previous: str
    text: str
    reason: str
    cases: list[Case]
    run_id: str
    first_run: str | None
    at: float


class ModuleVersions:
    """Reads and appends the `module_versions` table of one workspace (a row is never changed, except the block
    node that first ran it)."""

    def __init__(self, workspace: Path | str) -> None:
        self.root = Path(workspace)
        self.db = open_state_db(state_db_path(workspace))

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> ModuleVersions:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _name(self, path: Path) -> str:
        try:
            return str(Path(path).resolve().relative_to(self.root.resolve()))
        except ValueError:
            return str(path)

    def record(self, key: str, saved: SavedModule, reason: str, cases: list[Case], run_id: str = "",
               previous: str = "") -> ModuleVersion:
        """The version `key` names, added as the module's next one unless it is there already (a resumed repair
        records nothing twice)."""
        module = self._name(saved.path)
        key = f"{module} {key}"
        with Transaction(self.db):
            row = self.db.execute("SELECT * FROM module_versions WHERE key = ?", (key,)).fetchone()
            if row is None:
                number = self.db.execute("SELECT coalesce(max(version), 0) + 1 FROM module_versions WHERE module = ?",
                                         (module,)).fetchone()[0]
                self.db.execute(
                    "INSERT INTO module_versions (key, module, spec_hash, version, body_hash, previous, text, reason, "
                    "cases, run_id, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (key, module, saved.spec_hash, number, saved.provenance.get(BODY_HASH) or body_hash(saved.body),
                     previous, saved.text, reason, json.dumps([case_json(c) for c in cases]), run_id, time.time()))
                row = self.db.execute("SELECT * FROM module_versions WHERE key = ?", (key,)).fetchone()
        return _version(row)

    def current(self, saved: SavedModule, run_id: str = "") -> ModuleVersion:
        """The row of the module as saved now; a module saved before versions were kept becomes version 1."""
        digest = saved.provenance.get(BODY_HASH) or body_hash(saved.body)
        found = self.with_body(saved.path, digest)
        if found is not None:
            return found
        return self.record(f"found:{digest}", saved, "found", [], run_id)

    def history(self, path: Path) -> list[ModuleVersion]:
        rows = self.db.execute("SELECT * FROM module_versions WHERE module = ? ORDER BY version",
                               (self._name(path),))
        return [_version(r) for r in rows]

    def by_key(self, path: Path, key: str) -> ModuleVersion | None:
        """The version of the module at `path` that `record` was given `key` for, if there is one."""
        row = self.db.execute("SELECT * FROM module_versions WHERE key = ?",
                              (f"{self._name(path)} {key}",)).fetchone()
        return _version(row) if row is not None else None

    def with_body(self, path: Path, digest: str) -> ModuleVersion | None:
        """The newest version of the module at `path` whose body has hash `digest`."""
        row = self.db.execute("SELECT * FROM module_versions WHERE module = ? AND body_hash = ? ORDER BY version DESC",
                              (self._name(path), digest)).fetchone()
        return _version(row) if row is not None else None

    def first_run(self, version: ModuleVersion, node: str) -> bool:
        """Whether the block reach `node` is the first to run `version` (marking it so when none ran it yet): the
        same answer when a resumed run reaches that block again."""
        with Transaction(self.db):
            self.db.execute("UPDATE module_versions SET first_run = ? WHERE key = ? AND first_run IS NULL",
                            (node, version.key))
            row = self.db.execute("SELECT first_run FROM module_versions WHERE key = ?", (version.key,)).fetchone()
        return row is not None and row["first_run"] == node


def case_json(case: Case) -> dict[str, Any]:
    return {"inputs": {k: encode(v) for k, v in case.inputs.items()},
            "outputs": {k: encode(v) for k, v in case.outputs.items()}, "source": case.source,
            **({"fails": case.fails} if case.fails is not None else {})}


def case_of(data: dict[str, Any]) -> Case:
    return Case({k: decode(v) for k, v in data["inputs"].items()}, {k: decode(v) for k, v in data["outputs"].items()},
                data["source"], data.get("fails"))


def _version(row) -> ModuleVersion:
    return ModuleVersion(row["key"], row["module"], row["version"], row["body_hash"], row["previous"], row["text"],
                         row["reason"], [case_of(c) for c in json.loads(row["cases"])], row["run_id"],
                         row["first_run"], row["at"])
