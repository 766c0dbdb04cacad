"""The node panel of a run page: one org tree node's inputs, outputs, figures, and the trace events it recorded."""

from __future__ import annotations

import json
import time
from pathlib import Path

from orgtree_lang.viewer.page import duration, esc, status_badge, table, when

MAX_EVENTS = 300  # trace events shown for one node; a loop of a million calls must not make a page of them
_SLACK = 0.005  # seconds: a node's start and an event's time are taken at slightly different moments


def node_panel(workspace: Path, nodes: list, node_id: str) -> str:
    """The panel for `node_id` among a run's reconciled `nodes`, or a short note when it is not (yet) there."""
    node = next((n for n in nodes if n.id == node_id), None)
    if node is None:
        return f'<p class="empty">no node {esc(node_id)} in this run (yet)</p>'
    facts = [("node", f"<code>{esc(node.id)}</code>"), ("kind", esc(node.kind)), ("status", status_badge(node.status)),
             ("called by", esc(node.caller or "-")), ("started", esc(when(node.started_at))),
             ("time", esc(duration(node.duration_ms))), ("tokens", esc(f"{node.tokens:,}")),
             ("cost", esc(f"${node.cost:.4f}")), ("inputs", f"<pre>{esc(node.inputs or '(none)')}</pre>")]
    if node.output:
        facts.append(("output", f'<pre class="output">{esc(node.output)}</pre>'))
    if node.error:
        facts.append(("error", f'<pre class="error">{esc(node.error)}</pre>'))
    if node.detail:
        facts.append(("detail", esc(node.detail)))
    module = _module_link(workspace, node)
    if module:
        facts.append(("module", module))
    rows = "".join(f"<tr><th>{name}</th><td>{value}</td></tr>" for name, value in facts)
    events = node_events(workspace, node)
    shown = [[esc(f"{e['time'] - node.started_at:+.3f} s"), esc(e.get("event")), esc(e.get("at", "")),
              f"<code>{esc(_event_text(e))}</code>"] for e in events[:MAX_EVENTS]]
    more = f'<p class="more">… {len(events) - MAX_EVENTS} more events</p>' if len(events) > MAX_EVENTS else ""
    return (f'<h2>{esc(node.name)}</h2><table class="facts">{rows}</table><h3>Trace events</h3>'
            + table(["when", "event", "at", "what"], shown, empty="no trace events for this node", css="events")
            + more)


def _module_link(workspace: Path, node) -> str:
    """A link to the generated module an ambiguous node wrote or reused (its detail names the file)."""
    from orgtree_lang.decompose.store import ModuleStore

    if node.kind != "ambiguous" or not node.detail:
        return ""
    store = ModuleStore(workspace)
    for module in store.all():
        relative = module.path.relative_to(store.root).as_posix()
        if f".orgtree/modules/{relative}" in node.detail:  # the run may have named the workspace another way
            return f'<a class="module-link" href="/modules/{esc(relative)}">{esc(relative)}</a>'
    return ""


def node_events(workspace: Path, node) -> list[dict]:
    """The trace events of `node`: those that name it as their node (its prints, errors, returns, the messages it
    sent or took, an ambiguous block's model calls), the call of it and the messages sent to it. Events are matched by node, not
    by time, so concurrent branches of one pipeline never show each other's; a trace written before events
    carried their node (node "root") is matched by the node's time and frame instead."""
    top = node.run_id.split("/", 1)[0]
    folder = Path(workspace) / ".orgtree" / "runs" / top
    path = node.id[len(top) + 1:]
    found = []
    for trace in sorted(folder.glob("trace*.jsonl")):
        with trace.open(encoding="utf-8", errors="replace") as lines:
            for line in lines:
                if path not in line and '"root"' not in line:
                    continue  # most lines of a big trace are another node's: skip them unparsed
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:  # the line a running run is writing now
                    continue
                if _is_own(event, node):
                    found.append(event)
    return sorted(found, key=lambda e: e.get("time", 0))


def _is_own(event: dict, node) -> bool:
    owner = event.get("node")
    if owner == "root":
        return _is_own_by_time(event, node)
    if owner == node.id or event.get("callee") == node.id:  # its own, or the call of it (the caller's event)
        return True
    # A message is the sender's event; the node it was sent to shows it too.
    return event.get("event") == "message.send" and f"{node.run_id}/{event.get('to')}" == node.id


def _is_own_by_time(event: dict, node) -> bool:
    """How events of a trace from before they named their node are matched: the node's run, its time, its kind."""
    end = node.started_at + node.duration_ms / 1000 if node.duration_ms is not None else time.time()
    if event.get("run") not in (node.run_id, node.id) \
            or not node.started_at - _SLACK <= event.get("time", 0) <= end + _SLACK:
        return False
    kind = event.get("event")
    if node.kind == "skill":
        return kind == "skill" and event.get("skill") == node.name
    if node.kind == "ambiguous":
        return event.get("for_node") == node.id or (kind == "ambiguous" and event.get("block") == node.name)
    path = node.id[len(node.run_id) + 1:]
    return event.get("frame") == node.name or event.get("for_node") == node.id \
        or path in (event.get("sender"), event.get("to"), event.get("by"), event.get("task"))


def _event_text(event: dict) -> str:
    """The event's own fields, without those every event has."""
    own = {k: v for k, v in event.items() if k not in ("time", "run", "node", "event", "frame", "at")}
    return ", ".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in own.items())
