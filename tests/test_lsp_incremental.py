"""The language server's incremental parse gives the tree a whole parse gives, version after version of an edit."""

from __future__ import annotations

from pathlib import Path

import pytest

from orgtree_lang.lsp.incremental import IncrementalParser, pieces
from orgtree_lang.syntax.diagnostics import CompileError
from orgtree_lang.syntax.parser import parse

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted([*ROOT.glob("examples/*.pipe"), *ROOT.glob("tests/golden/**/*.pipe"), *ROOT.glob("stdlib/*.pipe")])


def _outcome(parse_text, source: str):
    """The module's declarations (their reprs hold every node and span), or the diagnostics of a failed parse."""
    try:
        return repr(parse_text(source).items)
    except CompileError as err:
        return [(d.message, d.span) for d in err.diagnostics]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_incremental_parse_equals_a_whole_parse_across_edits(path):
    source = path.read_text(encoding="utf-8")
    parser = IncrementalParser()
    lines = source.splitlines(keepends=True)
    middle = len(lines) // 2
    versions = [
        source,
        "# added above\n\n" + source,  # every declaration moves down two lines
        source,  # and back up
        "".join(lines[:middle] + ["    x = (1 +\n"] + lines[middle:]),  # broken in the middle
        "".join(lines[:middle] + ["\n"] + lines[middle:]),  # mended, one line longer
    ]
    for version in versions:
        assert _outcome(lambda text: parser.parse(text, "p.pipe"), version) == \
            _outcome(lambda text: parse(text, "p.pipe"), version)


def test_a_declaration_keyword_inside_a_long_string_falls_back_to_a_whole_parse():
    source = 'pipeline a() -> str:\n    """Says\npipeline inside a docstring\n"""\n    return "x"\n'
    assert len(pieces(source)) == 2  # the cut is wrong here: the first piece does not parse on its own
    module = IncrementalParser().parse(source, "p.pipe")
    assert [p.name for p in module.pipelines] == ["a"]
    assert repr(module.items) == repr(parse(source, "p.pipe").items)


def test_an_unchanged_declaration_is_not_parsed_again():
    parser = IncrementalParser()
    first = parser.parse("pipeline a() -> int:\n    return 1\n\npipeline b() -> int:\n    return 2\n", "p.pipe")
    second = parser.parse("pipeline a() -> int:\n    return 1\n\npipeline b() -> int:\n    return 3\n", "p.pipe")
    assert second.pipelines[0] is first.pipelines[0]
    assert second.pipelines[1] is not first.pipelines[1]


# ---- while a line is half-typed ---------------------------------------------------------------------------------

TWO = "pipeline a() -> int:\n    return b()\n\npipeline b() -> int:\n    n = 2\n    return n\n"


def test_a_half_typed_declaration_leaves_the_others_navigable_at_their_new_places():
    parser = IncrementalParser()
    parser.parse(TWO, "p.pipe")
    assert parser.navigable is None  # the version parsed: its module is the answer
    # Two lines are added above and `b` is half-typed: the whole text does not parse.
    broken = "# notes\n\n" + TWO.replace("    n = 2\n", "    n = (2 +\n")
    with pytest.raises(CompileError):
        parser.parse(broken, "p.pipe")
    a, b = parser.navigable.pipelines
    # `a` parses now, at its new line; `b` is its last good tree, moved to where `b` starts now.
    assert (a.name, a.span.line) == ("a", 3) and (b.name, b.span.line) == ("b", 6)
    assert repr(a) == repr(parse("\n\n" + pieces(TWO)[0][1], "p.pipe").pipelines[0])
    mended = broken.replace("(2 +", "2")
    assert parser.parse(mended, "p.pipe").pipelines[1].span.line == 6 and parser.navigable is None


def test_a_file_opened_half_typed_is_navigable_in_its_declarations_that_parse():
    parser = IncrementalParser()
    with pytest.raises(CompileError) as failed:
        parser.parse(TWO.replace("return b()", "return b("), "p.pipe")
    # The diagnostics are a whole parse's; navigation has `b`, and nothing for `a`, which never parsed.
    assert [(d.message, d.span) for d in failed.value.diagnostics] == \
        _outcome(lambda text: parse(text, "p.pipe"), TWO.replace("return b()", "return b("))
    assert [p.name for p in parser.navigable.pipelines] == ["b"]
