"""The programs pages: the workspace's `.pipe` programs, and one program's entry pipeline as a form to start a run
(its typed parameters as fields), or its compile errors with file:line:col."""

from __future__ import annotations

import json
from pathlib import Path

from orgtree_lang.viewer.page import Site, esc, frame, table

MAX_PROGRAMS = 500  # programs listed; a workspace holding a whole tree of them still gets a short page
_SKIPPED = (".orgtree", ".git", "node_modules", "__pycache__")


def programs(site: Site) -> list[str]:
    """The `.pipe` files of the workspace folder and its subfolders (hidden and `.orgtree/` ones left out), as
    paths relative to it, sorted: the only programs a page names and the run action starts."""
    found = []
    for path in sorted(Path(site.workspace).rglob("*.pipe")):
        relative = path.relative_to(site.workspace)
        if any(part.startswith(".") or part in _SKIPPED for part in relative.parts[:-1]) or not path.is_file():
            continue
        found.append(relative.as_posix())
        if len(found) >= MAX_PROGRAMS:
            break
    return found


def program_path(site: Site, relative: str) -> Path | None:
    """The program `relative` names, if it is one of `programs(site)`: never a path a request made up."""
    return Path(site.workspace) / relative if relative in programs(site) else None


def programs_page(site: Site) -> str:
    """Every program of the workspace, linking to its page (where a run of it is started)."""
    rows = [[f'<a class="program-link" href="/programs/{esc(rel)}">{esc(rel)}</a>'] for rel in programs(site)]
    body = "<h1>Programs</h1>" + table(["program"], rows, empty=f"no .pipe programs in {site.workspace}",
                                       css="programs")
    return frame(site, "programs", body)


def program_page(site: Site, relative: str, entry: str | None) -> str | None:
    """The program at `relative`: its pipelines, the entry's docstring and a form of its parameters (with actions
    allowed), or its compile errors as `pipe run` prints them; None when the workspace has no such program."""
    path = program_path(site, relative)
    if path is None:
        return None
    title = f"<h1>Program <code>{esc(relative)}</code></h1>"
    compiled = _compiled(site, path, relative)
    if isinstance(compiled, str):
        return frame(site, f"program {relative}",
                     f'{title}<section class="compile-errors"><h2>It does not compile</h2>'
                     f'<pre class="error">{esc(compiled)}</pre><p class="hint">Fix the file and reload this page.'
                     f'</p></section>')
    program = compiled.program
    try:
        code = program.entry(entry)
    except KeyError:
        code = None
    links = " ".join(f'<a class="entry-link" href="/programs/{esc(relative)}?entry={esc(name)}">{esc(name)}</a>'
                     for name in program.pipelines)
    body = f'{title}<p>Pipelines: {links}</p><p id="action-result" role="status"></p>'
    if code is None:
        wanted = f"`{entry}`" if entry else "`main` (or its only pipeline)"
        body += f'<p class="hint">Pick the pipeline to run: it has no {esc(wanted)}.</p>'
    else:
        body += _entry_form(site, relative, code)
    return frame(site, f"program {relative}", body)


def entry_params(site: Site, relative: str, entry: str | None) -> tuple:
    """The parameters of the pipeline a run of `relative` would start with (`entry`, else its main one); empty when
    the program is missing, does not compile or has no such pipeline (then `pipe run` says why)."""
    path = program_path(site, relative)
    compiled = _compiled(site, path, relative) if path is not None else ""
    try:
        return () if isinstance(compiled, str) else tuple(compiled.program.entry(entry).params)
    except KeyError:
        return ()


def _compiled(site: Site, path: Path, relative: str):
    """The program compiled as `pipe run` compiles it (the workspace's skills and cache), or its rendered errors;
    named as the run the page starts names it (relative to the workspace), so both say the same file:line:col."""
    from orgtree_lang.compile.api import compile_source
    from orgtree_lang.runtime.errors import PipeError

    from orgtree_lang.viewer.skills import workspace_skills

    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        return f"{relative}: cannot read it: {err}"
    try:
        return compile_source(source, relative, workspace_skills(site), Path(site.workspace) / ".orgtree" / "cache")
    except PipeError as err:
        return err.render("run")


def _entry_form(site: Site, relative: str, code) -> str:
    from orgtree_lang.runtime.values import display

    doc = f'<div class="doc"><pre>{esc(code.doc.strip())}</pre></div>' if code.doc.strip() else ""
    fields = []
    for param in code.params:
        label = f"{param.name} ({param.type})"
        default = (f"default: {display(param.default, True)}" if param.has_default else "required")
        fields.append(f'<label class="input"><span>{esc(label)}</span>{_field(param, default)}</label>')
    signature = f"{code.name}({', '.join(f'{p.name}: {p.type}' for p in code.params)}) -> {code.returns}"
    head = f'<h2>Run <code>{esc(signature)}</code></h2>{doc}'
    if not site.allow_actions:
        example = " ".join(f"-i {p.name}=..." for p in code.params if not p.has_default)
        return (head + (f'<ul class="params">{"".join(f"<li>{f}</li>" for f in fields)}</ul>' if fields else "")
                + f'<p class="hint">Start it with <code>pipe run {esc(relative)} --entry {esc(code.name)} '
                  f'{esc(example)}</code>, or start the viewer with --allow-actions to start it here.</p>')
    hidden = (f'<input type="hidden" name="program" value="{esc(relative)}">'
              f'<input type="hidden" name="entry" value="{esc(code.name)}">')
    return (head + f'<form class="start" data-action="/actions/run">{hidden}{"".join(fields)}'
                   f'<p class="hint">Each value is read by its type as <code>pipe run -i NAME=VALUE</code> reads it '
                   f'(text as typed, numbers, true or false, JSON for lists, dicts and records); an empty field '
                   f'takes the default.</p><button>start the run</button></form>')


def _field(param, default: str) -> str:
    """The form field of one parameter: a choice for a bool, a text area for a structured value, else a line."""
    name, kind = f"input.{param.name}", param.type.arg.kind if param.type.kind == "optional" else param.type.kind
    aria = f'aria-label="input {esc(param.name)}"'
    if kind == "bool":
        options = "".join(f'<option value="{v}">{v or esc(default)}</option>' for v in ("", "true", "false"))
        return f'<select name="{esc(name)}" {aria}>{options}</select>'
    if kind in ("str", "path", "int", "float", "any"):
        return f'<input name="{esc(name)}" {aria} placeholder="{esc(default)}">'
    if kind == "bytes":
        return f'<input name="{esc(name)}" {aria} placeholder="{esc(default)}; a file of the workspace, e.g. photo.png">'
    example = json.dumps([1, 2]) if kind == "list" else '{"key": "value"}'
    return (f'<textarea name="{esc(name)}" {aria} rows="3" '
            f'placeholder="{esc(default)}; JSON, e.g. {esc(example)}"></textarea>')
