"""A run's org tree made to agree with its journal after a crash: nodes not written yet appear, and nodes a dead
process left open are interrupted."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from orgtree_lang.durable.journal import Journal, StepRecord
from orgtree_lang.runlog.store import OPEN, TreeNode

INTERRUPTED = "interrupted"
STALE = "its process ended before it did"
RECOVERED = "recovered from the journal: the crash came before the node was written"

_NUMBERED = re.compile(r"[#@]\d+$")


def reconciled(run_id: str, nodes: list[TreeNode], steps: dict[int, StepRecord], *,
               up_to_seq: int | None = None, waiting: bool = False) -> list[TreeNode]:
    """`nodes` of run `run_id` (no process runs it) with the journal's `steps` folded in: a node still open
    (running, or receiving a message) is interrupted, and so is one `waiting` for a person unless the run still
    waits (`waiting`); every node and skill call the journal has but the tree lacks is added (only for steps
    numbered up to `up_to_seq`, if given), in the order of the journal."""
    have = {node.id: node for node in nodes}
    stale = ("running", "receiving") if waiting else OPEN
    out = [dataclasses.replace(node, status=INTERRUPTED, detail=node.detail or STALE)
           if node.status in stale else node for node in nodes]
    seq = max((node.seq for node in nodes), default=0)
    recorded_calls: dict[tuple[str, str], int] = {}
    for node in nodes:
        if node.kind == "skill":
            key = (node.parent_id or "", node.name)
            recorded_calls[key] = recorded_calls.get(key, 0) + _calls_in(node)
    journaled_calls: dict[tuple[str, str], int] = {}
    for record in steps.values():
        if up_to_seq is not None and record.seq > up_to_seq:
            break
        path = record.node
        if record.kind == "ambiguous" and record.statement is not None:
            path = f"{record.node}/{record.name}@{record.statement}"
        for node in _missing_path(run_id, path, have, record):
            seq += 1
            node.seq = seq
            have[node.id] = node
            out.append(node)
        if record.kind != "skill":
            continue
        parent = f"{run_id}/{record.node}"
        key = (parent, record.name)
        journaled_calls[key] = journaled_calls.get(key, 0) + 1
        if journaled_calls[key] > recorded_calls.get(key, 0):
            seq += 1
            out.append(_skill_node(run_id, parent, record, seq))
    return sorted(out, key=lambda node: (node.started_at, node.seq))


def _calls_in(node: TreeNode) -> int:
    """Skill calls a skill node stands for: one, or the count of an overflow node (`N ok, M error`)."""
    if node.id.endswith("#more"):
        return sum(int(part.split()[0]) for part in node.detail.split(", "))
    return 1


def _missing_path(run_id: str, path: str, have: dict[str, TreeNode], record: StepRecord) -> list[TreeNode]:
    """The nodes on journal path `path` (and its ancestors) that the tree lacks, outermost first."""
    parts = path.split("/")
    missing = []
    owner = run_id  # the run a node belongs to: a generated child's nodes belong to the child run
    for i, segment in enumerate(parts):
        node_id = f"{run_id}/{'/'.join(parts[: i + 1])}"
        parent_id = f"{run_id}/{'/'.join(parts[:i])}" if i else None
        block = "@" in segment
        if node_id not in have:
            done = block and node_id == f"{run_id}/{path}"  # the block's own step: its outcome is journaled
            status = ("ok" if record.ok else "error") if done else INTERRUPTED
            node = TreeNode(node_id, owner, parent_id, 0, _NUMBERED.sub("", segment),
                            "ambiguous" if block else "pipeline", "", status, "", "",
                            _error_text(record) if done and not record.ok else None, record.finished or 0.0, None)
            node.detail = RECOVERED
            missing.append(node)
        if block:
            owner = node_id
    return missing


def _skill_node(run_id: str, parent: str, record: StepRecord, seq: int) -> TreeNode:
    node = TreeNode(f"{parent}/{record.name}#j{record.seq}", _owner(run_id, record.node), parent, seq, record.name,
                    "skill", record.node.rsplit("/", 1)[-1], "ok" if record.ok else "error", "",
                    _result_text(record) if record.ok else "", _error_text(record) if not record.ok else None,
                    record.finished or 0.0, None)
    node.detail = RECOVERED
    return node


def _owner(run_id: str, path: str) -> str:
    """The run (the top one, or a generated child) that node path `path` belongs to."""
    parts = path.split("/")
    blocks = [i for i, segment in enumerate(parts) if "@" in segment]
    return f"{run_id}/{'/'.join(parts[: blocks[-1] + 1])}" if blocks else run_id


def _result_text(record: StepRecord) -> str:
    from orgtree_lang.runtime.values import decode
    from orgtree_lang.vm.trace import summarize

    if record.result is None:
        return ""
    try:
        return summarize(decode(json.loads(record.result)))
    except (ValueError, TypeError, KeyError):
        return ""


def _error_text(record: StepRecord) -> str:
    return (record.error or {}).get("message", "failed")


def reconciled_tree(root: Path, run_id: str, nodes: list[TreeNode]) -> list[TreeNode]:
    """`nodes` as `pipe tree` shows them: reconciled with the journal unless a process is running the run now."""
    from orgtree_lang.durable.journal import JournalError
    from orgtree_lang.durable.runs import effective_status, find_run, is_locked

    top = run_id.split("/", 1)[0]
    try:
        run_dir = find_run(root, top)
    except JournalError:
        return nodes  # a run made without a journal (`--no-journal`): its tree is all there is
    if is_locked(run_dir):
        return nodes
    try:
        journal = Journal.open(run_dir)
    except JournalError:
        return nodes
    try:
        steps = journal.steps()
        waiting = effective_status(run_dir, journal.meta()) == "waiting"
    finally:
        journal.close()
    return reconciled(top, nodes, steps, waiting=waiting)


def repair_before_resume(root: Path, run_id: str, journal: Journal, up_to_seq: int | None) -> None:
    """Write the reconciled tree of run `run_id` to state.db as a resume starts (its process holds the run): nodes
    left running are interrupted, and the nodes of steps up to `up_to_seq` (those the resume does not ask for
    again) that the tree lacks are added. A resume from the start (`up_to_seq` 0) records every node again."""
    from orgtree_lang.runlog.store import TreeStore
    from orgtree_lang.runtime.state_db import state_db_path

    path = state_db_path(root)
    if not path.is_file():
        return
    with TreeStore(path) as store:
        nodes = store.run_nodes(run_id)
        changed = [node for node in reconciled(run_id, nodes, journal.steps(), up_to_seq=up_to_seq or 0)
                   if node.status == INTERRUPTED or node.detail == RECOVERED]
        store.write(changed)
