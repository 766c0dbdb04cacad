"""The HTML every page shares: the frame with its navigation, escaping, and how times, sizes and values are shown."""

from __future__ import annotations

import html
import time
from dataclasses import dataclass
from pathlib import Path

from orgtree_lang.runtime.printable import printable


@dataclass(frozen=True)
class Site:
    """What every page needs to know: the workspace it shows and whether actions (start a run, reply, resume) are
    allowed."""

    workspace: Path
    allow_actions: bool  # start runs, reply, resume
    token: str  # the secret every request carries (a cookie from the printed URL, or the X-Pipe-Token header)
    host: str = "127.0.0.1"  # the address the server listens on


def esc(value: object) -> str:
    """Text made safe to put inside HTML (element content or a quoted attribute), control characters spelled out
    (runtime/printable.py): a carriage return in a question must show, not end a line of a live update."""
    return html.escape(printable(value), quote=True)


def frame(site: Site, title: str, body: str, *, live_url: str = "") -> str:
    """A whole page: head, the navigation bar, `body`; `live_url` is the event stream the page follows."""
    mode = "actions allowed (each needs the token)" if site.allow_actions else "read-only"
    live = f' data-live="{esc(live_url)}"' if live_url else ""
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{esc(title)} · pipe serve</title>
<link rel="stylesheet" href="/static/viewer.css">
<script src="/static/viewer.js" defer></script>
</head>
<body data-actions="{'on' if site.allow_actions else 'off'}"{live}>
<nav>
  <strong>pipe serve</strong>
  <a href="/">runs</a> <a href="/programs">programs</a> <a href="/modules">modules</a> <a href="/skills">skills</a> <a href="/pad">scratchpad</a> <a href="/insights">insights</a>
  <span class="where">{esc(site.workspace)} · {mode}</span>
</nav>
<main>
{body}
</main>
</body>
</html>
"""


def when(at: float | None) -> str:
    """A wall-clock time as the local date and time, or `?` when it is unknown."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at)) if at else "?"


def duration(ms: float | None) -> str:
    """Milliseconds as a person reads them: `12 ms`, `3.4 s`, or `running` while unknown."""
    if ms is None:
        return "running"
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def table(headers: list[str], rows: list[list[str]], *, empty: str, css: str = "") -> str:
    """An HTML table from cells that are already HTML; `empty` is said instead when there are no rows."""
    if not rows:
        return f'<p class="empty">{esc(empty)}</p>'
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def status_badge(status: str) -> str:
    return f'<span class="status status-{esc(status)}">{esc(status)}</span>'
