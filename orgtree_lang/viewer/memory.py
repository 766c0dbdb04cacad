"""The memory pages: the shared scratchpad's notes and the insight pool with its proposals."""

from __future__ import annotations

from orgtree_lang.viewer.page import Site, esc, frame, table, when


def pad_page(site: Site) -> str:
    """Every scratchpad note, oldest first, as `pipe pad show` prints them."""
    from orgtree_lang.memory.scratchpad import Scratchpad
    from orgtree_lang.runtime.state_db import state_db_path

    notes = []
    if state_db_path(site.workspace).is_file():
        with Scratchpad(state_db_path(site.workspace)) as pad:
            notes = pad.notes()
    rows = [[esc(when(n.at)), esc(n.turn), esc(n.agent), esc(n.kind), esc(n.text)] for n in notes]
    body = "<h1>Scratchpad</h1>" + table(["when", "turn", "agent", "kind", "note"], rows, empty="no notes yet",
                                         css="pad")
    return frame(site, "scratchpad", body)


def insights_page(site: Site) -> str:
    """The insights of every status, and every proposal with the reviewer's decision."""
    from orgtree_lang.memory.insights import InsightPool
    from orgtree_lang.runtime.state_db import state_db_path

    insights, proposals = [], []
    if state_db_path(site.workspace).is_file():
        with InsightPool(state_db_path(site.workspace)) as pool:
            insights, proposals = pool.insights(None), pool.proposals()
    rows = [[esc(i.id), esc(i.status), esc(i.text), esc(i.evidence), esc(", ".join(i.tags)), esc(i.author)]
            for i in insights]
    asked = [[esc(p.id), esc(p.action), esc(p.insight_id), esc(p.author), esc(p.status), esc(p.reason),
              esc(p.decision)] for p in proposals]
    body = ("<h1>Insights</h1>"
            + table(["id", "status", "insight", "evidence", "tags", "by"], rows, empty="no insights yet",
                    css="insights")
            + "<h2>Proposals</h2>"
            + table(["id", "action", "insight", "by", "status", "reason", "decision"], asked,
                    empty="no proposals yet", css="proposals"))
    return frame(site, "insights", body)
