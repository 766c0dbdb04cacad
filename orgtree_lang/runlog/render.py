"""The org tree as text: one line per node, children indented under their parent, repeated skill calls folded,
and the messages each node sent as edges under it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from orgtree_lang.runlog.store import TreeNode


@dataclass
class Branch:
    """A node with its children, and the tokens and cost of its whole subtree."""

    node: TreeNode
    children: list[Branch] = field(default_factory=list)
    tokens: int = 0
    cost: float = 0.0


def build_tree(nodes: list[TreeNode]) -> list[Branch]:
    """The roots (nodes whose parent is not among `nodes`), each with its subtree; totals summed up the tree."""
    branches = {n.id: Branch(n) for n in nodes}
    roots: list[Branch] = []
    for node in nodes:
        parent = branches.get(node.parent_id) if node.parent_id else None
        (parent.children if parent is not None else roots).append(branches[node.id])

    def total(branch: Branch) -> None:
        branch.tokens, branch.cost = branch.node.tokens, branch.node.cost
        for child in branch.children:
            total(child)
            branch.tokens += child.tokens
            branch.cost += child.cost

    for root in roots:
        total(root)
    return roots


def render_tree(nodes: list[TreeNode], *, every_skill_call: bool = False, max_depth: int | None = None,
                messages: list[dict] = (), run_id: str = "") -> list[str]:
    """Lines of text for `pipe tree`; consecutive calls of one skill under one parent fold into one line.

    `messages` (a run's message log, org/mailboxes.py: sender and receiver as node paths of run `run_id`) are
    drawn as edges under the node that sent them: one line per receiver, `→ main/worker#1 "stop"`."""
    lines: list[str] = []
    edges = message_edges(messages, run_id)

    def walk(branch: Branch, prefix: str, last: bool, depth: int, top: bool) -> None:
        connector = "" if top else ("└─ " if last else "├─ ")
        lines.append(prefix + connector + _describe(branch))
        inner = prefix + ("" if top else ("   " if last else "│  "))
        for edge in edges.get(branch.node.id, ()):
            lines.append(inner + ("│  " if branch.children else "   ") + edge)
        if max_depth is not None and depth >= max_depth:
            if branch.children:
                lines.append(inner + f"… {len(branch.children)} more")
            return
        groups = branch.children if every_skill_call else _fold_skill_calls(branch.children)
        for i, child in enumerate(groups):
            end = i == len(groups) - 1
            if isinstance(child, list):
                lines.append(inner + ("└─ " if end else "├─ ") + _describe_calls(child))
            else:
                walk(child, inner, end, depth + 1, False)

    for root in build_tree(nodes):
        walk(root, "", True, 0, True)
    return lines


def _fold_skill_calls(children: list[Branch]) -> list:
    """Runs of calls of the same skill become one list each; other children stay as they are."""
    folded: list = []
    for child in children:
        if child.node.kind == "skill" and not child.children:
            if folded and isinstance(folded[-1], list) and folded[-1][0].node.name == child.node.name:
                folded[-1].append(child)
                continue
            folded.append([child])
        else:
            folded.append(child)
    return [group[0] if isinstance(group, list) and len(group) == 1 else group for group in folded]


def node_label(node: TreeNode) -> str:
    """The node's own path segment (`fetch#2`, `classify@7`), or its name for a run's entry."""
    segment = node.id.rsplit("/", 1)[-1]
    return segment if segment != node.name else node.name


def _describe(branch: Branch) -> str:
    node = branch.node
    parts = [node_label(node), node.kind]
    if node.kind == "skill" and node_label(node) != node.name:
        parts[0] = node.name
    parts.append(node.status)
    if node.duration_ms is not None:
        parts.append(_duration(node.duration_ms))
    if branch.tokens:
        parts.append(f"{branch.tokens:,} tokens")
    if branch.cost:
        parts.append(f"${branch.cost:.4f}")
    text = "  ".join(parts)
    if node.detail:
        text += f"  [{node.detail}]"
    if node.inputs:
        text += f"  in: {node.inputs}"
    if node.status in ("error", "cancelled", "interrupted") and node.error:
        text += f"  {'error' if node.status == 'error' else 'why'}: {node.error}"
    elif node.output:
        text += f"  out: {node.output}"
    return text


def message_edges(messages: list[dict], run_id: str, shown: int = 3) -> dict[str, list[str]]:
    """For each sending node's id, one line per node it sent messages to, in the order of the first message:
    the bodies of the first `shown` messages, how many there were, and how many still wait in a mailbox."""
    from orgtree_lang.runtime.values import decode, display_short

    by_edge: dict[tuple[str, str], list[dict]] = {}
    for message in messages:
        by_edge.setdefault((message["sender"], message["to"]), []).append(message)
    edges: dict[str, list[str]] = defaultdict(list)
    for (sender, to), sent in by_edge.items():
        bodies = ", ".join(display_short(decode(m["body"]), 40) for m in sent[:shown])
        count = f" ×{len(sent)}:" if len(sent) > 1 else ""
        more = ", …" if len(sent) > shown else ""
        queued = sum(m.get("received") is None for m in sent)
        waits = f"  ({queued} not received)" if queued else ""
        edges[f"{run_id}/{sender}"].append(f"→ {to}{count} {bodies}{more}{waits}")
    return edges


def _describe_calls(group: list[Branch]) -> str:
    counted = [calls_in(b.node) for b in group]
    calls, errors = sum(c for c, _ in counted), sum(e for _, e in counted)
    total_ms = sum(b.node.duration_ms or 0.0 for b in group)
    status = f"{errors} error{'s' if errors != 1 else ''}" if errors else "ok"
    return f"{group[0].node.name} ×{calls}  skill  {status}  {_duration(total_ms)}"


def calls_in(node: TreeNode) -> tuple[int, int]:
    """(calls, errors) a skill node stands for: one call, or the counts of an overflow node past the cap."""
    if node.id.endswith("#more"):  # detail is "N ok, M error" (recorder.TreeRecorder._count_overflow)
        ok, error = (int(part.split()[0]) for part in node.detail.split(", "))
        return ok + error, error
    return 1, int(node.status == "error")


def _duration(ms: float) -> str:
    if ms < 1000:
        return f"{ms:.1f} ms"
    return f"{ms / 1000:.2f} s"


def status_counts(nodes: list[TreeNode]) -> dict[str, dict[str, int]]:
    """Per kind, how many nodes have each status (for the summary line)."""
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for node in nodes:
        counts[node.kind][node.status] += 1
    return {kind: dict(by_status) for kind, by_status in counts.items()}
