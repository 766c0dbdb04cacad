"""The modules pages: the generated child modules, and one module's highlighted source, provenance and reviews."""

from __future__ import annotations

from orgtree_lang.viewer.page import Site, esc, frame, table


def modules_page(site: Site) -> str:
    """One row per saved module: its path, block, parent, review rounds and why runs refuse it, if they do."""
    from orgtree_lang.decompose.store import ModuleStore

    store = ModuleStore(site.workspace)
    rows = []
    for module in store.all():
        relative = module.path.relative_to(store.root).as_posix()
        p = module.provenance
        rows.append([f'<a class="module-link" href="/modules/{esc(relative)}">{esc(relative)}</a>',
                     esc(p.get("block", "?")), esc(p.get("parent", "?")), esc(p.get("review-rounds", "?")),
                     esc(", ".join(module.refusals) or "reused by runs")])
    body = "<h1>Generated modules</h1>" + table(["module", "block", "parent", "review rounds", "state"], rows,
                                                empty=f"no generated modules in {store.root}", css="modules")
    return frame(site, "modules", body)


def module_page(site: Site, relative: str) -> str | None:
    """The module saved at `relative` (under .orgtree/modules), or None when no saved module is there."""
    from orgtree_lang.decompose.store import ModuleStore

    store = ModuleStore(site.workspace)
    # Looked up among the saved modules, never opened by the path a request names: no `..` can reach other files.
    module = next((m for m in store.all() if m.path.relative_to(store.root).as_posix() == relative), None)
    if module is None:
        return None
    facts = "".join(f"<tr><th>{esc(key)}</th><td>{esc(value)}</td></tr>" for key, value in module.provenance.items())
    refusals = "".join(f'<p class="refusal">Runs refuse this module until a person accepts it: {esc(reason)} '
                       f'(<code>pipe modules accept {esc(relative.removesuffix(".pipe"))}</code>).</p>'
                       for reason in module.refusals)
    body = (f"<h1>Module <code>{esc(relative)}</code></h1>{refusals}"
            f'<section><h2>Source</h2><pre class="source">{source_html(module.body)}</pre></section>'
            f'<section><h2>Provenance</h2><table class="facts provenance">{facts}</table></section>'
            f"{_ledger(site, module)}{_attempts(site, module)}")
    return frame(site, f"module {relative}", body)


def source_html(source: str) -> str:
    """`.pipe` source as HTML, each token in a span classed by what the lexer says it is."""
    from orgtree_lang.syntax.highlight import highlighted

    return "".join(f'<span class="tok-{piece.kind}">{esc(piece.text)}</span>' if piece.kind else esc(piece.text)
                   for piece in highlighted(source))


def _ledger(site: Site, module) -> str:
    from orgtree_lang.review.ledger import ConcernLedger
    from orgtree_lang.runtime.state_db import state_db_path

    rows = []
    if state_db_path(site.workspace).is_file():
        with ConcernLedger.for_workspace(site.workspace) as ledger:
            rows = [[esc(r["concern_id"]), esc(r["severity"]), esc(r["round"]), esc(r["status"]), esc(r["evidence"]),
                     esc(r.get("rationale") or "")] for r in ledger.history(module.review_subject)]
    return ("<section><h2>Concern ledger</h2>"
            + table(["concern", "severity", "round", "status", "evidence", "rationale"], rows,
                    empty=f"no concerns recorded for {module.review_subject}", css="ledger") + "</section>")


def _attempts(site: Site, module) -> str:
    from orgtree_lang.decompose.attempts import AttemptLog
    from orgtree_lang.runtime.state_db import state_db_path

    rows = []
    if state_db_path(site.workspace).is_file():
        log = AttemptLog(site.workspace)
        try:
            rows = [[esc(r["phase"]), esc(r["attempt"]), esc(r["model"]),
                     "accepted" if r["accepted"] else esc("not accepted: " + " | ".join(
                         p.splitlines()[0] for p in r["problems"] if p))] for r in log.for_spec(module.spec_hash)]
        finally:
            log.close()
    return ("<section><h2>Author attempts</h2>"
            + table(["phase", "attempt", "model", "verdict"], rows, empty="no attempts recorded", css="attempts")
            + "</section>")
