"""The runs pages: the list of a workspace's runs, and one run with its org tree, questions, messages and output."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orgtree_lang.runtime.errors import UsageError
from orgtree_lang.viewer.artifacts import artifacts_html
from orgtree_lang.viewer.page import Site, duration, esc, frame, status_badge, table, when

MAX_CHILDREN_SHOWN = 200  # children listed under one node; the rest are counted, so a huge run stays a small page
_RUN_REF = re.compile(r"[A-Za-z0-9_-]{1,64}")
FOLD_AT = 6  # a longer stretch of plain skill calls under one node is shown folded, as one line with counts


@dataclass
class RunView:
    """What the run page shows, read from the run's journal and the workspace's state.db."""

    meta: dict[str, Any]
    status: str
    nodes: list = field(default_factory=list)  # TreeNode, reconciled with the journal
    questions: list = field(default_factory=list)  # (asked, posted question or None) while it waits


def read_run(workspace: Path, ref: str) -> RunView:
    """The run `ref` (an id or a unique prefix of one) as the pages show it; UsageError when there is none."""
    from orgtree_lang.durable.journal import Journal
    from orgtree_lang.durable.people import waiting_questions
    from orgtree_lang.durable.reconcile import reconciled_tree
    from orgtree_lang.durable.runs import effective_status, find_run, view_meta
    from orgtree_lang.runlog.store import TreeStore
    from orgtree_lang.runtime.state_db import state_db_path

    run_dir = find_run(workspace, run_ref(ref))
    journal = Journal.open(run_dir)
    try:
        meta = view_meta(run_dir, journal)
    finally:
        journal.close()
    status = effective_status(run_dir, meta)
    nodes = []
    if state_db_path(workspace).is_file():
        with TreeStore(state_db_path(workspace)) as store:
            nodes = reconciled_tree(workspace, meta["run_id"], store.run_nodes(meta["run_id"]))
    questions = waiting_questions(workspace, meta) if status == "waiting" else []
    return RunView(meta, status, nodes, questions)


class NotARunId(UsageError):
    """A run named by something other than its id: a path or a pattern could reach outside the workspace."""

    status = 400


def run_ref(ref: str) -> str:
    """`ref` if it can only name a run of this workspace: an id or a prefix of one, never a path or a pattern."""
    if not _RUN_REF.fullmatch(ref):
        raise NotARunId(f"expected a run id (letters, digits, - and _), got {ref!r}",
                         hint="the runs page lists the runs of this workspace")
    return ref


def runs_page(site: Site) -> str:
    """Every run of the workspace, newest first, each linking to its page; the list follows new runs live."""
    return frame(site, "runs", f'<h1>Runs</h1><div id="live">{runs_table(site)}</div>', live_url="/live/runs")


def runs_table(site: Site) -> str:
    """The table of runs, newest first."""
    from orgtree_lang.durable.runs import list_runs

    rows = []
    for s in reversed(list_runs(site.workspace)):
        status = "broken" if s.status.startswith("unreadable") else s.status
        rows.append([f'<a class="run-link" href="/runs/{esc(s.run_id)}">{esc(s.run_id)}</a>', status_badge(status),
                     esc(Path(s.program).name if status != "broken" else s.status), esc(when(s.started)),
                     esc(f"{s.duration:.2f}"), esc(s.steps)])
    return table(["run", "status", "program", "started", "seconds", "steps"], rows,
                 empty=f"no runs in {site.workspace / '.orgtree' / 'runs'} yet", css="runs")


def run_page(site: Site, view: RunView) -> str:
    """One run: the part that changes while it runs (updated in place from /runs/ID/live), and the node panel."""
    run_id = view.meta["run_id"]
    body = (f'<h1>Run <code>{esc(run_id)}</code></h1><p id="action-result" role="status"></p>'
            f'<div class="run-grid"><div id="live">{run_body(site, view)}</div>'
            f'<aside id="node-detail" data-run="{esc(run_id)}"><p class="empty">Click a node of the tree to see its '
            f'inputs, outputs, figures and trace events.</p></aside></div>')
    return frame(site, f"run {run_id}", body, live_url=f"/runs/{run_id}/live")


def run_body(site: Site, view: RunView) -> str:
    """The live part of a run page: summary, questions, org tree, messages, printed output."""
    return "".join((_summary(view), _questions(site, view), _tree(view), _messages(view), _printed(view)))


def _summary(view: RunView) -> str:
    from orgtree_lang.runtime.values import bytes_values, decode, display, to_plain

    meta = view.meta
    def shown(value) -> str:  # records as their fields; a bytes value by its media type, size and hash
        return display(value if bytes_values(value) else to_plain(value), True)

    given = [f"{k}={shown(v)}" for k, v in decode(meta.get("inputs", {})).items()]
    given += [f"{k}={shown(v)} (default)" for k, v in decode(meta.get("defaults", {})).items()]
    rows = [("status", status_badge(view.status)), ("program", esc(meta.get("program"))),
            ("pipeline", esc(meta.get("entry"))), ("started", esc(when(meta.get("created"))))]
    if view.status == "running":  # the figures the run wrote last (durable/runs.py view_meta), about a second old
        rows.append(("steps", f'<span class="steps">{esc(meta.get("steps", 0))}</span> so far'))
    else:
        rows += [("seconds", esc(f"{meta.get('elapsed', 0.0):.2f}")),
                 ("steps", f'<span class="steps">{esc(meta.get("steps", 0))}</span>')]
    rows += [("attempts", esc(meta.get("attempts", 0))), ("inputs", esc(", ".join(given) or "(none)"))]
    if meta.get("parent_run"):
        rows.append(("forked from", f'<a href="/runs/{esc(meta["parent_run"])}">{esc(meta["parent_run"])}</a> '
                                    f'at step {esc(meta.get("fork_step"))}'))
    inputs, result = decode(meta.get("inputs", {})), decode(meta.get("result")) if view.status == "done" else None
    if view.status == "done":
        rows.append(("result", f'<code class="result">{esc(display(result, True))}</code>'))
    shown = artifacts_html(inputs, result)
    if shown:
        rows.append(("artifacts", shown))
    if meta.get("error"):
        error = meta["error"]
        rows.append(("error", f'<span class="error">{esc(error.get("message"))}</span> '
                              f'(at {esc(error.get("at"))}, node {esc(error.get("node"))})'))
    cells = "".join(f"<tr><th>{name}</th><td>{value}</td></tr>" for name, value in rows)
    return f'<section class="summary"><table class="facts">{cells}</table></section>'


def _questions(site: Site, view: RunView) -> str:
    if not view.questions:
        return ""
    items = []
    for asked, posted in view.questions:
        ref = posted.ref if posted is not None else ""  # not in the inbox yet: a reply names no question
        answered = posted is not None and posted.status == "answered"
        state = f"answered {esc(json.dumps(posted.answer))}" if answered else "open"
        form = ""
        if site.allow_actions and not answered:
            form = (f'<form class="reply" data-action="/actions/reply"><input type="hidden" name="run" '
                    f'value="{esc(view.meta["run_id"])}"><input type="hidden" name="message" value="{esc(ref)}">'
                    f'<input name="text" placeholder="{"yes or no" if asked["kind"] == "approve" else "answer"}" '
                    f'aria-label="answer to {esc(ref)}"><button>reply</button></form>')
        items.append(f'<li class="question"><code>{esc(ref or "?")}</code> {esc(asked["kind"])} at '
                     f'{esc(asked["file"])}:{esc(asked["line"])} ({esc(asked["node"])}): '
                     f'<q>{esc(asked["text"])}</q> <span class="state">[{state}]</span>{form}</li>')
    resume = ""
    if site.allow_actions:
        resume = (f'<form class="resume" data-action="/actions/resume"><input type="hidden" name="run" '
                  f'value="{esc(view.meta["run_id"])}"><button>resume the run</button></form>')
    hint = "" if site.allow_actions else \
        '<p class="hint">Answer with <code>pipe reply</code>, or start the viewer with --allow-actions.</p>'
    return f'<section class="waiting"><h2>Waiting for a person</h2><ul>{"".join(items)}</ul>{resume}{hint}</section>'


def _tree(view: RunView) -> str:
    from orgtree_lang.runlog.render import build_tree, message_edges

    roots = build_tree(view.nodes)
    if not roots:
        return '<section class="tree"><h2>Org tree</h2><p class="empty">no nodes recorded yet</p></section>'
    edges = message_edges(view.meta.get("messages", []), view.meta["run_id"])
    branches = "".join(_branch(root, edges) for root in roots)
    return f'<section class="tree"><h2>Org tree</h2><ul class="org">{branches}</ul></section>'


def _branch(branch, edges: dict[str, list[str]]) -> str:
    from orgtree_lang.runlog.render import node_label

    node = branch.node
    label = node.name if node.kind == "skill" else node_label(node)
    figures = [duration(node.duration_ms)] if node.duration_ms is not None else []
    if branch.tokens:
        figures.append(f"{branch.tokens:,} tokens")
    if branch.cost:
        figures.append(f"${branch.cost:.4f}")
    row = (f'<button class="node" data-node="{esc(node.id)}"><span class="name">{esc(label)}</span></button> '
           f'<span class="kind">{esc(node.kind)}</span> {status_badge(node.status)} '
           f'<span class="figures">{esc(" · ".join(figures))}</span>')
    if node.status == "error" and node.error:
        row += f' <span class="error">{esc(node.error)}</span>'
    elif node.output:
        row += f' <span class="out">→ {esc(node.output[:120])}</span>'
    groups = _grouped(branch.children)
    inner = [f'<li class="message">{esc(edge)}</li>' for edge in edges.get(node.id, ())]
    inner += [_calls(group, edges) if isinstance(group, list) else _branch(group, edges)
              for group in groups[:MAX_CHILDREN_SHOWN]]
    if len(groups) > MAX_CHILDREN_SHOWN:
        inner.append(f'<li class="more">… {len(groups) - MAX_CHILDREN_SHOWN} more</li>')
    children = f'<ul>{"".join(inner)}</ul>' if inner else ""
    return f'<li class="branch kind-{esc(node.kind)}" data-status="{esc(node.status)}">{row}{children}</li>'


def _grouped(children: list) -> list:
    """Children with each stretch of more than FOLD_AT skill calls (that called nothing themselves) as one list."""
    groups: list = []
    for child in children:
        plain = child.node.kind == "skill" and not child.children
        if plain and groups and isinstance(groups[-1], list):
            groups[-1].append(child)
        else:
            groups.append([child] if plain else child)
    flat: list = []
    for group in groups:
        flat.extend([group] if not isinstance(group, list) or len(group) > FOLD_AT else group)
    return flat


def _calls(group: list, edges: dict[str, list[str]]) -> str:
    """A folded stretch of skill calls: how many of each skill, errors, total time; opened, the calls themselves."""
    from orgtree_lang.runlog.render import calls_in

    counts: dict[str, int] = {}
    errors = 0
    for branch in group:
        calls, failed = calls_in(branch.node)
        counts[branch.node.name] = counts.get(branch.node.name, 0) + calls
        errors += failed
    names = ", ".join(f"{name} ×{count}" for name, count in counts.items())
    spent = duration(sum(b.node.duration_ms or 0.0 for b in group))
    shown = "".join(_branch(b, edges) for b in group[:MAX_CHILDREN_SHOWN])
    more = f'<li class="more">… {len(group) - MAX_CHILDREN_SHOWN} more</li>' if len(group) > MAX_CHILDREN_SHOWN else ""
    state = f'<span class="status status-error">{errors} failed</span>' if errors else status_badge("ok")
    return (f'<li class="folded"><details data-key="{esc(group[0].node.id)}"><summary>{sum(counts.values())} skill '
            f'calls: {esc(names)} {state} <span class="figures">{esc(spent)}</span>'
            f'</summary><ul>{shown}{more}</ul></details></li>')


def _messages(view: RunView) -> str:
    from orgtree_lang.runtime.values import decode, display_short

    rows = [[esc(m["id"]), esc(m["sender"]), esc(m["to"]), esc(m["topic"]),
             f'<span class="body">{esc(display_short(decode(m["body"]), 120))}</span>', esc(f'{m["sent_at"]:.0f}'),
             esc("queued" if m["received"] is None else f'{m["received"]:.0f}')]
            for m in view.meta.get("messages", [])]
    return ('<section class="messages"><h2>Messages</h2>'
            + table(["id", "from", "to", "topic", "body", "sent", "received"], rows, empty="no messages sent",
                    css="messages") + "</section>")


def _printed(view: RunView) -> str:
    lines = view.meta.get("output", [])
    if not lines:
        return ""
    return f'<section class="printed"><h2>Printed</h2><pre>{esc(chr(10).join(lines))}</pre></section>'
