"""A skill's call history, read from the org tree's node table in state.db: the evidence bug reviewers work from."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Call:
    """One recorded call of a skill or module: when, in which run and node, by whom, with what, and how it ended."""

    id: str
    name: str
    run_id: str
    caller: str
    status: str  # running | ok | error
    inputs: str
    output: str
    error: str | None
    started_at: float
    duration_ms: float | None

    @property
    def failed(self) -> bool:
        return self.status == "error"

    def line(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started_at))
        took = f"{self.duration_ms:.1f} ms" if self.duration_ms is not None else "-"
        outcome = f"error: {self.error}" if self.failed else f"-> {self.output}"
        return f"#{self.id}  {when}  {self.status:<5} {took:>9}  {self.caller or '?'} -> {self.name}({self.inputs}) {outcome}"


History = Callable[[str, int], list[Call]]


def workspace_history(root: Path | str) -> History:
    """The call history of the workspace: its org tree (`orgtree_lang.runlog.store.TreeStore`)."""
    return tree_history(root)


def tree_history(root: Path | str) -> History:
    """The history of the workspace's org tree (`orgtree_lang.runlog.store.TreeStore`), newest call first."""
    from orgtree_lang.pool.store import state_db

    path = state_db(root)

    def calls(name: str, limit: int = 100) -> list[Call]:
        from orgtree_lang.runlog.store import TreeStore

        if not path.is_file():
            return []
        with TreeStore(path) as store:
            nodes = store.calls(name=name, run_id=None, limit=limit)
        return [Call(str(n.id), n.name, n.run_id, n.caller or "", n.status, n.inputs or "", n.output or "",
                     n.error, n.started_at, n.duration_ms) for n in nodes]

    return calls
