"""The skills pages: every skill a workspace's programs see, and one skill's docs, call history and bug reports."""

from __future__ import annotations

import re

from orgtree_lang.viewer.page import Site, duration, esc, frame, status_badge, table, when

HISTORY_SHOWN = 50  # calls listed on a skill's page, newest first, as `pipe skills history` shows by default
_SKILL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def workspace_skills(site: Site):
    """The registry a program of the workspace compiles against: installed skills, learned.* and the pool's
    changes (usage notes, removals), as `pipe skills` lists them. Built for each page, so it is never stale."""
    from orgtree_lang.run.registries import workspace_registry
    from orgtree_lang.run.settings import RunSettings

    return workspace_registry(site.workspace, config=RunSettings.load(site.workspace).file)


def skills_page(site: Site) -> str:
    """Every skill by namespace with its one-line summary, linking to its page; MCP servers not started."""
    registry = workspace_skills(site)
    rows = []
    for name in registry.names():
        found = registry.get(name)
        summary = found.description.strip().splitlines()[0] if found.description.strip() else ""
        traits = "pure" if found.pure else "effects"
        rows.append([f'<a class="skill-link" href="/skills/{esc(name)}">{esc(name)}</a>', esc(summary),
                     esc(traits), esc(found.origin)])
    body = ("<h1>Skills</h1>"
            + table(["skill", "what it does", "kind", "from"], rows, empty="no skills", css="skills"))
    lazy = registry.lazy_namespaces()
    if lazy:
        names = ", ".join(f"<code>{esc(n)}.*</code>" for n in lazy)
        body += (f'<p class="hint">The tools of the MCP servers of orgtree.toml ({names}) are listed once a server '
                 f'has started: <code>pipe skills</code> starts them to list their tools.</p>')
    problems = getattr(registry, "learned_problems", {})
    if problems:
        items = "".join(f"<li><code>{esc(n)}</code>: <pre>{esc(p)}</pre></li>" for n, p in sorted(problems.items()))
        body += f'<section class="problems"><h2>Learned skills that do not compile</h2><ul>{items}</ul></section>'
    return frame(site, "skills", body)


def skill_page(site: Site, name: str) -> str | None:
    """One skill as `pipe skills NAME` shows it, with its recorded calls (`pipe skills history NAME`) and the
    bug reports filed about it (`pipe skills bugs NAME`); None when the workspace has no skill `name`."""
    if not _SKILL_NAME.fullmatch(name):
        return None
    registry = workspace_skills(site)
    if name not in registry.names():  # never a lazy look-up: a page view starts no MCP server
        return None
    found = registry.get(name)
    params = [[f"<code>{esc(p.name)}</code>", f"<code>{esc(p.type)}</code>",
               esc("required" if p.required else "optional"), esc(p.doc)] for p in found.params]
    traits = ["pure" if found.pure else "has effects"] + (["idempotent"] if found.idempotent else []) + \
        (["slow (runs on the executor)"] if found.slow else [])
    body = (f'<h1>Skill <code>{esc(name)}</code></h1>'
            f'<pre class="signature">{esc(found.signature())}</pre>'
            f'<div class="doc"><pre>{esc(found.description.strip())}</pre></div>'
            + ("<h2>Parameters</h2>" + table(["name", "type", "", "doc"], params, empty="", css="params")
               if params else "")
            + (f'<p class="returns">Returns <code>{esc(found.returns)}</code>: {esc(found.returns_doc)}</p>'
               if found.returns_doc else "")
            + f'<p class="traits">{esc(", ".join(traits))}; from {esc(found.origin)}</p>'
            + _history(site, name) + _bugs(site, name))
    return frame(site, f"skill {name}", body)


def _history(site: Site, name: str) -> str:
    from orgtree_lang.pool.history import workspace_history

    calls = workspace_history(site.workspace)(name, HISTORY_SHOWN)
    rows = []
    for call in calls:
        top = call.run_id.split("/", 1)[0]
        rows.append([esc(when(call.started_at)), f'<a href="/runs/{esc(top)}">{esc(top)}</a>',
                     f"<code>{esc(call.id[len(top) + 1:])}</code>", esc(call.caller or "?"), status_badge(call.status),
                     esc(duration(call.duration_ms)), f"<code>{esc(call.inputs)}</code>",
                     f'<code class="{"error" if call.failed else "out"}">'
                     f'{esc(call.error if call.failed else call.output)}</code>'])
    failed = sum(call.failed for call in calls)
    said = (f'<p class="counts">{len(calls)} call(s) shown, newest first, {failed} failed</p>' if calls else "")
    return ("<h2>Call history</h2>" + said
            + table(["when", "run", "node", "called by", "status", "time", "inputs", "result"], rows,
                    empty=f"no recorded calls of {name} in this workspace", css="history"))


def _bugs(site: Site, name: str) -> str:
    from orgtree_lang.pool.store import PoolStore, state_db

    reports, decided = [], {}
    if state_db(site.workspace).is_file():
        store = PoolStore.for_workspace(site.workspace)
        try:
            reports = store.bugs(skill=name)
            decided = {bug.id: store.decisions(bug.id) for bug in reports}
        finally:
            store.close()
    rows = []
    for bug in reports:
        decisions = "; ".join(f"{d['decision']} {d['outcome']}: {d['reasoning']}" for d in decided[bug.id])
        rows.append([esc(f"#{bug.id}"), esc(when(bug.created)), esc(bug.reporter), esc(bug.use_case),
                     esc(bug.expected), esc(bug.observed), status_badge(bug.status), esc(decisions or "-")])
    return ("<h2>Bug reports</h2>"
            + table(["report", "filed", "by", "use case", "expected", "observed", "status", "decisions"], rows,
                    empty=f"no bug reports about {name}", css="bugs"))
