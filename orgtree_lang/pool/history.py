"""A skill's call history: the evidence bug reviewers work from. Read from the org tree's node table in state.db
when this build has one, else from the runs' traces (every skill call is a `skill` event there)."""

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
        return f"#{self.id}  {when}  run {self.run_id}  {self.status:<7} {took:>10}  {self.inputs} {outcome}"


History = Callable[[str, int], list[Call]]


def workspace_history(root: Path | str) -> History:
    """The org tree's history when this build records one, else the history kept in the runs' traces."""
    try:
        import orgtree_lang.orgtree.store  # noqa: F401
    except ImportError:
        return trace_history(root)
    return tree_history(root)


def trace_history(root: Path | str) -> History:
    """Calls read from `.orgtree/runs/*/trace*.jsonl`, newest run first; a failed call's error is the `error`
    event that follows it. Call ids are `<run id>:<line>`."""
    import json

    from orgtree_lang.runtime.workspace import STATE_DIR_NAME

    runs = Path(root) / STATE_DIR_NAME / "runs"

    def calls(name: str, limit: int = 100) -> list[Call]:
        found: list[Call] = []
        traces = sorted(runs.glob("*/trace*.jsonl"), key=lambda p: p.stat().st_mtime, reverse=True) \
            if runs.is_dir() else []
        for trace in traces:
            in_file: list[Call] = []
            pending: dict | None = None
            with trace.open(encoding="utf-8") as handle:
                for number, line in enumerate(handle, 1):
                    try:
                        event = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # a line cut short by a crash
                    if pending is not None and event.get("event") == "error":
                        in_file[-1] = _with_error(in_file[-1], str(event.get("error", "")))
                        pending = None
                        continue
                    if event.get("event") != "skill" or event.get("skill") != name:
                        continue
                    failed = event.get("outcome") != "ok"
                    arguments = list(event.get("args", [])) + [f"{k}={v}" for k, v in event.get("kwargs", {}).items()]
                    in_file.append(Call(f"{event.get('run', '?')}:{number}", name, str(event.get("run", "")),
                                        f"{event.get('frame', '')} at {event.get('at', '?')}",
                                        "error" if failed else "ok", f"({', '.join(arguments)})",
                                        str(event.get("result") or ""), "failed" if failed else None,
                                        float(event.get("time", 0.0)), event.get("duration_ms")))
                    pending = event if failed else None
            found.extend(reversed(in_file))
            if len(found) >= limit:
                break
        return sorted(found, key=lambda c: c.started_at, reverse=True)[:limit]

    return calls


def _with_error(call: Call, error: str) -> Call:
    import dataclasses

    return dataclasses.replace(call, error=error or call.error)


def tree_history(root: Path | str) -> History:
    """The history of the workspace's org tree (`orgtree_lang.orgtree.store.TreeStore`), newest call first."""
    from orgtree_lang.pool.store import state_db

    path = state_db(root)

    def calls(name: str, limit: int = 100) -> list[Call]:
        try:
            from orgtree_lang.orgtree.store import TreeStore
        except ImportError as err:  # the org tree is not part of this build
            raise RuntimeError("this build records no call history (orgtree_lang.orgtree is missing)") from err
        if not path.is_file():
            return []
        store = TreeStore(path)
        try:
            nodes = store.calls(name=name, run_id=None, limit=limit)
        finally:
            getattr(store, "close", lambda: None)()
        return [Call(str(n.id), n.name, n.run_id, n.caller or "", n.status, n.inputs or "", n.output or "",
                     n.error, n.started_at, n.duration_ms) for n in nodes]

    return calls
