"""`pipe lsp` over the real protocol: a client speaking JSON-RPC to the server subprocess, as an editor does."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lsp_testing import LspClient, position_of

pytest.importorskip("pygls", reason="`pipe lsp` needs the [lsp] extra (pip install 'orgtree-lang[lsp]')")

PROGRAM = textwrap.dedent('''\
    use text, lists
    use text

    record Task:
        """One piece of work."""
        title: str
        points: int = 1

    pipeline describe(task: Task) -> str:
        """One line about a task."""
        return text.uper(task.title)

    pipeline main(report: str = "it crashed") -> int:
        """Count, describe and classify."""
        words = text.split(report, sep=" ")
        n = 0
        label again
        n += 1
        if n < 3:
            goto again
        print(describe(Task("x")))
        ambiguous classify(report: str) -> kind: str:
            """Say whether the report is a bug, a feature or a question."""
        return len(wordz)
    ''')


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    """One server for the whole module (as one editor has): each test opens files of its own folder, which is
    their workspace, so tests do not see each other's skill pools or saved modules."""
    session = LspClient(tmp_path_factory.mktemp("lsp"))
    yield session
    session.close()


@pytest.fixture
def program(tmp_path) -> Path:
    path = tmp_path / "prog.pipe"
    path.write_text(PROGRAM, encoding="utf-8")
    return path


def _at(client, method, path, needle, offset=0, occurrence=1, **extra):
    line, character = position_of(path.read_text(), needle, offset, occurrence)
    return client.at(method, path, line, character, **extra)


def _hover(client, path, needle, offset=0, occurrence=1) -> str:
    result = _at(client, "textDocument/hover", path, needle, offset, occurrence)
    return result["contents"]["value"] if result else ""


def _range(line, start, end):
    return {"start": {"line": line, "character": start}, "end": {"line": line, "character": end}}


# ---- diagnostics -------------------------------------------------------------------------------------------


def test_opening_a_file_publishes_every_error_and_warning_of_the_checker_with_ranges_and_hints(client, program):
    published = client.open(program)
    found = sorted((d["range"]["start"]["line"], d["severity"], d["message"]) for d in published["diagnostics"])
    assert found == [
        (1, 2, "`use text` appears twice"),
        (10, 1, "namespace `text` has no skill `uper`\nhint: did you mean `text.upper`?"),
        (23, 1, "undefined name `wordz`\nhint: did you mean `words`?"),
    ]
    by_line = {d["range"]["start"]["line"]: d for d in published["diagnostics"]}
    assert by_line[10]["range"] == _range(10, 11, 20)  # `text.uper`
    assert by_line[23]["range"] == _range(23, 15, 20)  # `wordz`
    assert {d["source"] for d in published["diagnostics"]} == {"pipe"}


def test_edits_update_the_diagnostics_of_that_version(client, program):
    client.open(program)
    fixed = PROGRAM.replace("use text\n\n", "\n\n").replace("text.uper", "text.upper").replace("wordz", "words")
    assert client.change(program, 2, [{"text": fixed}])["diagnostics"] == []
    # An incremental edit that breaks the syntax: the parser's error, where it is.
    line, _ = position_of(fixed, "n = 0")
    published = client.change(program, 3, [{"range": _range(line, 8, 9), "text": "0 +"}])
    (diagnostic,) = published["diagnostics"]
    assert diagnostic["severity"] == 1 and diagnostic["range"]["start"]["line"] == line
    assert "expected" in diagnostic["message"]
    # Undo it: the module parses again and the errors are gone.
    assert client.change(program, 4, [{"range": _range(line, 8, 11), "text": "0"}])["diagnostics"] == []


def test_an_edit_that_adds_lines_moves_the_errors_below_it(client, program):
    client.open(program)
    published = client.change(program, 2, [{"range": _range(2, 0, 0), "text": "# one\n# two\n"}])
    lines = sorted(d["range"]["start"]["line"] for d in published["diagnostics"])
    assert lines == [1, 12, 25]


def test_a_half_typed_line_leaves_hover_and_definition_working_in_the_rest_of_the_file(client, tmp_path):
    # Opened with a line of `describe` half-typed: nothing parses as a whole, every other declaration still answers.
    path = tmp_path / "typing.pipe"
    typing = PROGRAM.replace("    return text.uper(task.title)", "    x = text.split(\n    return text.uper(task.title)")
    published = client.open(path, typing)
    assert any("expected" in d["message"] for d in published["diagnostics"])
    line, character = position_of(typing, 'Task("x")', 1)
    hover = client.at("textDocument/hover", path, line, character)
    assert hover["contents"]["value"].startswith("```pipe\nrecord Task:")
    line, character = position_of(typing, "text.split(report", 6)
    assert "Split a string into parts." in client.at("textDocument/hover", path, line, character)["contents"]["value"]
    uri = path.resolve().as_uri()
    line, character = position_of(typing, "goto again", 6)
    assert client.at("textDocument/definition", path, line, character) == \
        {"uri": uri, "range": _range(line - 3, 10, 15)}  # `label again`, three lines up


def test_while_a_declaration_is_half_typed_its_last_good_version_answers_at_its_new_place(client, program):
    client.open(program)
    # Two lines added above, then `describe` broken: main's call of it still hovers and goes to its definition,
    # which has moved down two lines.
    client.change(program, 2, [{"range": _range(0, 0, 0), "text": "# one\n# two\n"}])
    edited = "# one\n# two\n" + PROGRAM
    line, _ = position_of(edited, "return text.uper")
    published = client.change(program, 3, [{"range": _range(line, 4, 4), "text": "x = (1 +\n    "}])
    assert any("expected" in d["message"] for d in published["diagnostics"])
    edited = edited.replace("    return text.uper", "    x = (1 +\n    return text.uper")
    line, character = position_of(edited, "describe(Task", 2)
    hover = client.at("textDocument/hover", program, line, character)
    assert hover["contents"]["value"] == "```pipe\npipeline describe(task: Task) -> str\n```\n\nOne line about a task."
    assert client.at("textDocument/definition", program, line, character) == \
        {"uri": program.resolve().as_uri(), "range": _range(10, 9, 17)}


def test_ranges_count_utf16_units_for_text_outside_the_basic_plane(client, tmp_path):
    path = tmp_path / "emoji.pipe"
    source = 'pipeline main() -> str:\n    x = "🙂🙂" + nope\n    return x\n'
    (diagnostic,) = client.open(path, source)["diagnostics"]
    # `nope` starts at code point 15 of its line, but each emoji is two UTF-16 units.
    assert diagnostic["range"] == _range(1, 17, 21)


def test_a_skill_promoted_in_the_workspace_is_known_after_a_save(client, tmp_path):
    from orgtree_lang.run.registries import default_registry
    from orgtree_lang.pool.learned import LearnedStore

    path = tmp_path / "uses_learned.pipe"
    source = "use learned\n\npipeline main() -> str:\n    return learned.shout(\"hi\")\n"
    path.write_text(source, encoding="utf-8")
    before = client.open(path)["diagnostics"]
    assert before and "learned" in before[0]["message"]
    body = 'use text\n\npipeline main(words: str) -> str:\n    """Say it loudly."""\n    return text.upper(words)\n'
    learned = LearnedStore(tmp_path).save("shout", body, "Say it loudly.", {}, default_registry(plugins=False))
    # The person opens the promoted module and saves it: the other open documents are checked again.
    client.open(learned.path)
    client.notify("textDocument/didSave", {"textDocument": {"uri": learned.path.resolve().as_uri()}})
    after = client.wait_for("textDocument/publishDiagnostics", lambda p: p["uri"] == path.resolve().as_uri(),
                            timeout=20)
    assert after["diagnostics"] == []
    text = _hover(client, path, "learned.shout", 9)
    assert text.startswith("```pipe\nlearned.shout(words: str) -> str\n```") and "Say it loudly." in text
    assert _at(client, "textDocument/definition", path, "learned.shout", 9)["uri"] == \
        (tmp_path / ".orgtree" / "skills" / "shout.pipe").resolve().as_uri()


def test_closing_a_file_clears_its_diagnostics(client, program):
    client.open(program)
    client.notify("textDocument/didClose", {"textDocument": {"uri": program.resolve().as_uri()}})
    published = client.wait_for("textDocument/publishDiagnostics", lambda p: p["uri"] == program.resolve().as_uri())
    assert published["diagnostics"] == []


# ---- hover ----------------------------------------------------------------------------------------------------


def test_hover_on_a_skill_shows_its_signature_and_docs(client, program):
    client.open(program)
    text = _hover(client, program, "text.split", offset=6)
    assert text.startswith("```pipe\ntext.split(text: str, sep: str? = none, maxsplit: int = -1) -> list[str]\n```")
    assert "Split a string into parts." in text


def test_hover_on_a_skill_shows_the_usage_notes_of_the_workspace_pool(client, tmp_path, program):
    from orgtree_lang.pool.store import PoolStore

    store = PoolStore.for_workspace(tmp_path)
    bug = store.bug(store.file_bug("text.split", "split a CSV line", "3 fields", "1 field", reporter="t",
                                   reporter_conversation="c1"))
    store.record_decision(bug, "modify", "applied", "misuse", evidence=[], detail="", reviewer_model="m",
                          reviewer_conversation="c2", new_status="modified",
                          note="pass sep=\",\" for CSV; the default splits on whitespace")
    store.close()
    client.open(program)
    text = _hover(client, program, "text.split", offset=3)
    assert 'Usage note: pass sep="," for CSV; the default splits on whitespace' in text


def test_hover_on_a_pipeline_a_record_a_builtin_and_a_namespace(client, program):
    client.open(program)
    assert _hover(client, program, "describe(Task", 2) == \
        "```pipe\npipeline describe(task: Task) -> str\n```\n\nOne line about a task."
    assert _hover(client, program, 'Task("x")', 1) == \
        "```pipe\nrecord Task:\n    title: str\n    points: int = 1\n```\n\nOne piece of work."
    assert _hover(client, program, "len(wordz)", 1).startswith("```pipe\nlen(value) -> int\n```")
    namespace = _hover(client, program, "use text, lists", 12)
    assert namespace.startswith("```pipe\nuse lists\n```") and "`lists.append`" in namespace
    assert _hover(client, program, "n = 0") == ""  # a variable: nothing to show, and no error


def test_hover_on_an_ambiguous_block_says_whether_a_module_was_saved(client, program):
    client.open(program)
    text = _hover(client, program, "ambiguous classify", 12)
    assert text.startswith("```pipe\nambiguous classify(report: str) -> kind: str\n```")
    assert "no module saved for this block yet" in text


# ---- go to definition ------------------------------------------------------------------------------------------


def test_definition_of_a_pipeline_a_record_a_label_and_a_variable(client, program):
    client.open(program)
    uri = program.resolve().as_uri()
    assert _at(client, "textDocument/definition", program, "describe(Task", 1) == \
        {"uri": uri, "range": _range(8, 9, 17)}
    assert _at(client, "textDocument/definition", program, "task: Task", 7) == {"uri": uri, "range": _range(3, 7, 11)}
    assert _at(client, "textDocument/definition", program, "goto again", 6) == \
        {"uri": uri, "range": _range(16, 10, 15)}
    assert _at(client, "textDocument/definition", program, "report, sep", 1) == \
        {"uri": uri, "range": _range(12, 14, 20)}  # the parameter `report` of main
    assert _at(client, "textDocument/definition", program, "print(", 1) is None  # a built-in has no source


def test_definition_of_an_ambiguous_block_opens_its_saved_module(client, tmp_path, program):
    from orgtree_lang.decompose.store import ModuleStore
    from orgtree_lang.run.registries import default_registry

    body = 'pipeline classify(report: str) -> str:\n    """Label a report."""\n    return "bug"\n'
    saved = ModuleStore(tmp_path).save(str(program), "classify", body, {"block": "classify"},
                                       default_registry(plugins=False))
    client.open(program)
    found = _at(client, "textDocument/definition", program, "ambiguous classify", 13)
    text = _hover(client, program, "ambiguous classify", 13)
    assert found["uri"] == saved.path.resolve().as_uri()
    assert saved.path == tmp_path / ".orgtree" / "modules" / "prog" / "classify.pipe"
    assert f"saved module: `{saved.path}`" in text


# ---- completion, formatting, symbols ---------------------------------------------------------------------------


def test_completion_after_a_namespace_offers_its_skills(client, program):
    client.open(program)
    result = _at(client, "textDocument/completion", program, "text.split", 5)
    labels = {item["label"]: item for item in result["items"]}
    assert {"split", "upper", "join"} <= set(labels) and "append" not in labels
    assert labels["split"]["detail"].startswith("text.split(text: str")


def test_completion_elsewhere_offers_keywords_builtins_namespaces_and_declarations(client, program):
    client.open(program)
    line, _ = position_of(PROGRAM, "n = 0")
    labels = {item["label"] for item in client.at("textDocument/completion", program, line, 4)["items"]}
    assert {"ambiguous", "goto", "label", "while", "return", "fail"} <= labels  # keywords, soft ones included
    assert {"len", "print", "text", "lists", "describe", "main", "Task"} <= labels


def test_completion_on_a_use_line_offers_namespaces_and_skills(client, program):
    client.open(program)
    labels = {item["label"] for item in client.at("textDocument/completion", program, 0, 10)["items"]}
    assert {"lists", "lists.append", "text.split"} <= labels and "while" not in labels


def test_signature_help_inside_a_skill_call_marks_the_parameter_being_written(client, program):
    client.open(program)
    line, character = position_of(PROGRAM, "sep=", 0)
    help = client.at("textDocument/signatureHelp", program, line, character)
    (signature,) = help["signatures"]
    label = signature["label"]
    assert label == "text.split(text: str, sep: str? = none, maxsplit: int = -1) -> list[str]"
    assert [label[start:end] for start, end in (p["label"] for p in signature["parameters"])] == \
        ["text: str", "sep: str? = none", "maxsplit: int = -1"]
    assert help["activeParameter"] == 1  # after one comma: `sep`
    line, character = position_of(PROGRAM, "describe(Task", 9)
    help = client.at("textDocument/signatureHelp", program, line, character)
    assert help["signatures"][0]["label"] == "describe(task: Task) -> str" and help["activeParameter"] == 0
    line, character = position_of(PROGRAM, "n = 0")
    assert client.at("textDocument/signatureHelp", program, line, character) is None  # not inside a call


def test_signature_help_follows_keyword_arguments(client, tmp_path):
    path = tmp_path / "keywords.pipe"
    source = 'use text\n\npipeline main() -> int:\n    parts = text.split(text.strip(" a ", chars=" "), maxsplit=1, \n'
    client.open(path, source)
    line = 3
    after_keyword = client.at("textDocument/signatureHelp", path, line, len(source.splitlines()[line]))
    assert after_keyword["signatures"][0]["label"].startswith("text.split(")
    assert after_keyword.get("activeParameter") is None  # after `maxsplit=1,` the next one is not known
    at_keyword = client.at("textDocument/signatureHelp", path, line, source.splitlines()[line].index("maxsplit=") + 9)
    assert at_keyword["activeParameter"] == 2  # writing `maxsplit=`
    inner = client.at("textDocument/signatureHelp", path, line, source.splitlines()[line].index('" a "'))
    assert inner["signatures"][0]["label"].startswith("text.strip(") and inner["activeParameter"] == 0


def test_formatting_returns_what_pipe_fmt_prints(client, tmp_path):
    path = tmp_path / "messy.pipe"
    messy = "pipeline  main( )->int :\n    x=[1,2 ,3]\n    return len( x )\n"
    client.open(path, messy)
    (edit,) = client.request("textDocument/formatting", {"textDocument": {"uri": path.resolve().as_uri()},
                                                         "options": {"tabSize": 4, "insertSpaces": True}})
    assert edit["newText"] == "pipeline main() -> int:\n    x = [1, 2, 3]\n    return len(x)\n"
    assert edit["range"] == {"start": {"line": 0, "character": 0}, "end": {"line": 3, "character": 0}}


def test_formatting_a_file_that_does_not_parse_changes_nothing(client, tmp_path):
    path = tmp_path / "broken.pipe"
    client.open(path, "pipeline main() -> int:\n    return (1 +\n")
    assert client.request("textDocument/formatting", {"textDocument": {"uri": path.resolve().as_uri()},
                                                      "options": {"tabSize": 4, "insertSpaces": True}}) is None


def test_document_symbols_outline_records_pipelines_blocks_and_labels(client, program):
    client.open(program)
    symbols = client.request("textDocument/documentSymbol", {"textDocument": {"uri": program.resolve().as_uri()}})

    def shape(symbol):
        return (symbol["name"], symbol["kind"], [shape(child) for child in symbol.get("children", [])])

    struct, field, function, interface, key = 23, 8, 12, 11, 20
    assert [shape(s) for s in symbols] == [
        ("Task", struct, [("title", field, []), ("points", field, [])]),
        ("describe", function, []),
        ("main", function, [("again", key, []), ("classify", interface, [])]),
    ]
    assert symbols[2]["selectionRange"] == _range(12, 9, 13)


# ---- the command -----------------------------------------------------------------------------------------------


def test_pipe_lsp_without_pygls_says_which_extra_to_install(tmp_path):
    script = textwrap.dedent("""
        import sys
        class NoPygls:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("pygls", "lsprotocol"):
                    raise ImportError(f"No module named {name!r}")
        sys.meta_path.insert(0, NoPygls())
        from orgtree_lang.cli.main import main
        sys.exit(main(["lsp"]))
    """)
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "pip install 'orgtree-lang[lsp]'" in result.stderr


def test_the_workspace_skills_are_known_and_one_that_cannot_load_is_said_at_the_top(client, tmp_path):
    skills = tmp_path / "skills"
    skills.mkdir()
    (skills / "weather.py").write_text(textwrap.dedent('''\
        from orgtree_lang.runtime.skills import skill


        @skill(pure=True)
        def feels(temp_f: float) -> str:
            """Say how a Fahrenheit temperature feels."""
            return "mild"
        '''))
    (skills / "broken.py").write_text("import a_module_nobody_has\n")
    path = tmp_path / "uses.pipe"
    path.write_text('use weather\n\npipeline main() -> str:\n    return weather.feels(70.0)\n', encoding="utf-8")
    published = client.open(path)
    assert [(d["range"]["start"]["line"], d["message"]) for d in published["diagnostics"]] == [
        (0, "workspace skill module skills/broken.py:1 failed to load: ModuleNotFoundError: No module named "
            "'a_module_nobody_has'\nhint: fix it, or move it out of the skills folder (a name starting with `_` is "
            "a helper, not a skill module); `pipe skills` loads it again")]
    hover = client.request("textDocument/hover", {"textDocument": {"uri": path.resolve().as_uri()},
                                                  "position": {"line": 3, "character": 17}})
    assert "Say how a Fahrenheit temperature feels." in hover["contents"]["value"]
