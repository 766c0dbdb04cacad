"""The TextMate grammar of editors/vscode/ tokenizes every example and stdlib module as VS Code would
(vscode-textmate and vscode-oniguruma through node), and gives each token the scope the real lexer and parser
say it should have: keywords, strings, numbers, comments, declarations, types, labels and skill calls."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from lark.exceptions import LarkError

from orgtree_lang.lsp.complete import keywords
from orgtree_lang.syntax.diagnostics import CompileError
from orgtree_lang.syntax import nodes as n
from orgtree_lang.syntax.parser import lark_parser, parse, source_comments

ROOT = Path(__file__).resolve().parent.parent
GRAMMAR = ROOT / "editors" / "vscode" / "syntaxes" / "pipe.tmLanguage.json"
# The examples and stdlib modules, and the golden tests for the constructs they do not use (those with compile
# errors too: a half-written program must be coloured right as well).
SOURCES = sorted([*ROOT.glob("examples/*.pipe"), *ROOT.glob("stdlib/*.pipe"), *ROOT.glob("tests/golden/*/*.pipe")])
NPM_PACKAGES = ("vscode-textmate@9.3.2", "vscode-oniguruma@2.0.1")
CACHE = Path(os.environ.get("PIPE_TEST_NODE_CACHE") or Path.home() / ".cache" / "orgtree_lang" / "textmate-node")

# What kind of keyword each word is; everything not listed is control flow.
KEYWORD_SCOPES = {"true": "constant.language", "false": "constant.language", "none": "constant.language",
                  "and": "keyword.operator", "or": "keyword.operator", "not": "keyword.operator",
                  "in": "keyword.operator", "is": "keyword.operator", "pipeline": "storage.type",
                  "record": "storage.type", "ambiguous": "storage.type", "use": "keyword.control.import"}
TYPE_NAMES = ("str", "int", "float", "bool", "path", "bytes", "any", "list", "dict")


def _node_modules() -> Path:
    """vscode-textmate and vscode-oniguruma, installed once into the cache folder with npm."""
    folder = CACHE / "-".join(p.replace("@", "") for p in NPM_PACKAGES)
    wasm = folder / "node_modules" / "vscode-oniguruma" / "release" / "onig.wasm"
    if wasm.is_file():
        return folder / "node_modules"
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed to run VS Code's TextMate tokenizer (vscode-textmate)")
    # Installed beside the cache folder, then renamed into it: another pytest process (an xdist worker, a second
    # checkout's suite) installing at the same time never sees, or writes into, a half-installed folder.
    CACHE.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=CACHE))
    result = subprocess.run(["npm", "install", "--prefix", str(staging), "--no-audit", "--no-fund", "--no-save",
                             *NPM_PACKAGES], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"npm install {' '.join(NPM_PACKAGES)} failed:\n{result.stderr}"
    if folder.exists() and not wasm.is_file():  # a half install left by an older version of this helper
        shutil.rmtree(folder, ignore_errors=True)
    try:
        staging.rename(folder)
    except OSError:  # another process renamed its install into place first: use that one
        shutil.rmtree(staging, ignore_errors=True)
    return folder / "node_modules"


@pytest.fixture(scope="module")
def tokens() -> dict[str, list[list]]:
    modules = _node_modules()
    result = subprocess.run(["node", str(ROOT / "tests" / "textmate" / "tokenize.js"), str(GRAMMAR),
                             *map(str, SOURCES)], capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, NODE_PATH=str(modules)))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _scopes(lines: list[list], source_lines: list[str], line: int, col: int) -> list[str]:
    """The scopes at 1-based (line, code point col): TextMate counts UTF-16 units, as JavaScript strings do."""
    unit = len(source_lines[line - 1][:col - 1].encode("utf-16-le")) // 2
    for start, end, scopes in lines[line - 1]:
        if start <= unit < end:
            return scopes
    raise AssertionError(f"no token at {line}:{col}")


def _has(scopes: list[str], prefix: str) -> bool:
    return any(scope.startswith(prefix) for scope in scopes)


def _tokens(source: str):
    """The lexer's tokens, up to the first text it cannot lex."""
    try:
        yield from lark_parser().lex(source)
    except LarkError:
        return


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_token_gets_the_scope_the_lexer_and_parser_give_it(path, tokens):
    source = path.read_text(encoding="utf-8")
    lines, source_lines = tokens[str(path)], source.splitlines()
    try:
        module = parse(source, str(path))
    except CompileError:  # a golden test of a syntax error: its tokens are still checked, up to the error
        module = n.Module(n.Span(str(path), 0, 0, 0, 0), str(path), (), (), (), ())
    jumps = {(s.span.line, s.span.col) for s in module.walk() if isinstance(s, (n.Label, n.Goto))}
    wrong = []

    def expect(line: int, col: int, prefix: str, what: str) -> None:
        scopes = _scopes(lines, source_lines, line, col)
        if not _has(scopes, prefix):
            wrong.append(f"{line}:{col} {what}: expected {prefix}, got {scopes}")

    for token in _tokens(source):
        if token.type.startswith("_"):
            continue
        line, col = token.line, token.column
        if token.type != "NAME" and token.value in keywords():
            expect(line, col, KEYWORD_SCOPES.get(token.value, "keyword.control"), repr(token.value))
        elif token.type in ("STRING", "LONG_STRING"):
            expect(line, col, "string.quoted", "a string")
        elif token.type == "FSTRING":
            expect(line, col, "string.interpolated", "an f-string")
        elif token.type in ("INT", "FLOAT"):
            expect(line, col, "constant.numeric", "a number")
        elif token.type == "NAME" and (line, col) in jumps:
            expect(line, col, "keyword.control", f"the soft keyword {token.value!r}")
        elif token.type == "NAME":
            scopes = _scopes(lines, source_lines, line, col)
            if _has(scopes, "keyword") or _has(scopes, "storage") or _has(scopes, "comment"):
                wrong.append(f"{line}:{col} the name {token.value!r} looks like a keyword or comment: {scopes}")
    for line, col, _, _ in source_comments(source):
        expect(line, col, "comment.line", "a comment")
    for node in module.walk():
        if isinstance(node, n.Pipeline):
            expect(node.name_span.line, node.name_span.col, "entity.name.function", f"pipeline {node.name}")
        elif isinstance(node, n.TypeExpr) and node.name in TYPE_NAMES:
            expect(node.span.line, node.span.col, "support.type", f"the type {node.name}")
        elif isinstance(node, n.Call) and isinstance(node.func, n.Attribute):
            expect(node.func.attr_span.line, node.func.attr_span.col, "entity.name.function.skill",
                   f"the skill call {n.dotted_name(node.func)}")
    assert wrong == []
    # Nothing left open (a string or docstring running past its end would colour the rest of the file).
    assert all(scopes == ["source.pipe"] for _, _, scopes in lines[-1])


def test_the_check_notices_a_grammar_that_scopes_a_keyword_wrongly(tmp_path, tokens):
    """The same tokenizer on a grammar whose control keywords lost their scope: the `if` check would fail."""
    grammar = json.loads(GRAMMAR.read_text(encoding="utf-8"))
    grammar["repository"]["keyword"]["patterns"][0]["name"] = "variable.other.pipe"
    broken = tmp_path / "broken.tmLanguage.json"
    broken.write_text(json.dumps(grammar), encoding="utf-8")
    program = tmp_path / "p.pipe"
    program.write_text("pipeline main() -> int:\n    if true:\n        return 1\n    return 2\n", encoding="utf-8")
    result = subprocess.run(["node", str(ROOT / "tests" / "textmate" / "tokenize.js"), str(broken), str(program)],
                            capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, NODE_PATH=str(_node_modules())))
    lines = json.loads(result.stdout)[str(program)]
    assert not _has(_scopes(lines, program.read_text().splitlines(), 2, 5), "keyword.control")
    assert _has(_scopes(lines, program.read_text().splitlines(), 2, 8), "constant.language")


def test_the_vscode_extension_names_files_that_exist_and_starts_pipe_lsp():
    folder = ROOT / "editors" / "vscode"
    package = json.loads((folder / "package.json").read_text(encoding="utf-8"))
    (language,) = package["contributes"]["languages"]
    (grammar,) = package["contributes"]["grammars"]
    assert language["extensions"] == [".pipe"] and grammar["language"] == language["id"]
    assert (folder / grammar["path"]).resolve() == GRAMMAR
    assert json.loads(GRAMMAR.read_text(encoding="utf-8"))["scopeName"] == grammar["scopeName"]
    json.loads((folder / language["configuration"]).read_text(encoding="utf-8"))
    assert (folder / package["main"]).is_file()
    settings = package["contributes"]["configuration"]["properties"]
    command = [settings["pipe.server.command"]["default"], *settings["pipe.server.args"]["default"]]
    assert command == ["pipe", "lsp"]
    from cli_testing import pipe

    assert pipe("lsp", "--help").returncode == 0
    if shutil.which("node") is not None:
        checked = subprocess.run(["node", "--check", str(folder / package["main"])], capture_output=True, text=True)
        assert checked.returncode == 0, checked.stderr


def test_the_sublime_grammar_is_the_vscode_grammar_exported():
    import importlib.util
    import plistlib

    spec = importlib.util.spec_from_file_location("export_grammar", ROOT / "editors" / "export_grammar.py")
    export = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(export)
    assert export.TARGET.read_bytes() == export.plist_grammar(), "run `python editors/export_grammar.py`"
    assert plistlib.loads(export.TARGET.read_bytes())["scopeName"] == "source.pipe"


def test_the_vscode_extension_takes_the_server_command_from_user_settings_only(tmp_path):
    """A workspace's .vscode/settings.json (written by a run, or a cloned repository) cannot name the program."""
    if shutil.which("node") is None:
        pytest.skip("node is needed to load the extension")
    folder = ROOT / "editors" / "vscode"
    settings = json.loads((folder / "package.json").read_text(encoding="utf-8"))["contributes"]["configuration"]
    assert {settings["properties"][key].get("scope") for key in ("pipe.server.command", "pipe.server.args")} == \
        {"machine"}
    # The two modules VS Code hands the extension, as far as serverOptions reads them.
    for name, text in {"vscode": "module.exports = {};",
                       "vscode-languageclient/node": "module.exports = {TransportKind: {stdio: 0}};"}.items():
        (tmp_path / "node_modules" / name).mkdir(parents=True)
        (tmp_path / "node_modules" / name / "index.js").write_text(text)
    probe = f"""
const ext = require({json.dumps(str(folder / "extension.js"))});
const config = (values) => ({{inspect: (key) => values[key]}});
console.log(JSON.stringify([
  ext.serverOptions(config({{"server.command": {{workspaceValue: "/tmp/evil", workspaceFolderValue: "/tmp/evil"}},
                            "server.args": {{workspaceValue: ["-c", "touch /tmp/owned"]}}}})),
  ext.serverOptions(config({{"server.command": {{globalValue: "/opt/venv/bin/pipe", workspaceValue: "/tmp/evil"}}}})),
]));
"""
    done = subprocess.run(["node", "-e", probe], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, NODE_PATH=str(tmp_path / "node_modules")))
    assert done.returncode == 0, done.stderr
    default, chosen = json.loads(done.stdout)
    assert (default["command"], default["args"]) == ("pipe", ["lsp"])
    assert (chosen["command"], chosen["args"]) == ("/opt/venv/bin/pipe", ["lsp"])


def test_the_vscode_extension_does_not_start_the_server_in_an_untrusted_workspace():
    """`pipe lsp` imports the workspace's own skills (skills/*.py): code a cloned repository brings. VS Code's
    Restricted Mode must keep the extension off (the grammar, declarative, still colours the files)."""
    package = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text(encoding="utf-8"))
    assert package["capabilities"]["untrustedWorkspaces"]["supported"] is False
    assert package["contributes"]["grammars"][0]["language"] == "pipe"
