"""The parser's own LALR driver (syntax/lalr.py) against Lark's parse tree and transform: the same nodes, the same
spans, the same diagnostics, for the golden programs, the examples, the stdlib, programs generated from the
grammar, edited and half-typed programs; and the driver really runs (it never falls back on that corpus).

The reference is Lark's own path: `Lark.parse` builds the parse tree with propagate_positions and the builder
transforms it, the way parser.py worked before the driver.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orgtree_lang.syntax import parser
from orgtree_lang.syntax.builder import NodeBuilder
from orgtree_lang.syntax.diagnostics import CompileError, DiagnosticSink
from orgtree_lang.syntax.indent import PipeIndenter
from orgtree_lang.syntax.lalr import parse_with
from orgtree_lang.syntax.spans import Span
from orgtree_lang.syntax.strings import string_value
from pipe_testing import REPO_DIR, example_files, golden_files

CORPUS = golden_files() + example_files() + sorted((REPO_DIR / "stdlib").glob("**/*.pipe"))


def shape(value):
    """A node tree as plain tuples (nodes compare by identity), spans included."""
    if isinstance(value, Span):
        return ("Span", value.file, value.line, value.col, value.end_line, value.end_col)
    if dataclasses.is_dataclass(value):
        return (type(value).__name__,) + tuple(shape(getattr(value, f.name)) for f in dataclasses.fields(value))
    if isinstance(value, (tuple, list)):
        return tuple(shape(item) for item in value)
    return (type(value).__name__, value)


def outcome(source: str):
    """What parsing gives: the module's shape, or every diagnostic with its span and hint."""
    try:
        return ("module", shape(parser.parse(source, "t.pipe")))
    except CompileError as err:
        return ("errors", tuple((d.severity, d.message, shape(d.span), d.hint) for d in err.diagnostics))


@contextlib.contextmanager
def lark_path():
    """Parse with Lark's parse tree and the builder as a Transformer (f-string fields included)."""
    driver = parser.build
    parser.build = lambda text, start, builder: builder.transform(parser.lark_parser().parse(text, start=start))
    try:
        yield
    finally:
        parser.build = driver


def reference_outcome(source: str):
    with lark_path():
        return outcome(source)


def assert_same(source: str) -> None:
    assert outcome(source) == reference_outcome(source)


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: str(p.relative_to(REPO_DIR)))
def test_the_driver_builds_what_lark_builds(path: Path):
    assert_same(path.read_text(encoding="utf-8"))


def test_the_driver_runs_on_every_program_of_the_corpus():
    """No silent fallback: on every program that parses, the driver itself builds the module."""
    driven = 0
    for path in CORPUS:
        source = path.read_text(encoding="utf-8")
        try:
            parser.parse(source, "t.pipe")
        except CompileError:
            continue
        source += "" if source.endswith("\n") else "\n"
        module = parse_with(parser.lark_parser(), source, "start", NodeBuilder("t.pipe", DiagnosticSink("t.pipe"), parser.parse_expr),
                            PipeIndenter())
        assert module.pipelines or module.records or module.uses or module.tests, path
        driven += 1
    assert driven >= 40


@pytest.mark.parametrize("path", golden_files()[::7], ids=lambda p: p.stem)
def test_half_typed_programs_give_lark_diagnostics(path: Path):
    """Every prefix of a program, cut inside a line as an editor sees it while one types."""
    source = path.read_text(encoding="utf-8")
    cuts = sorted({i for i, char in enumerate(source) if char in " (=:,.\n"})[::5]
    for cut in cuts:
        assert_same(source[:cut])


def test_nodes_and_diagnostics_of_known_mistakes_are_lark_s():
    for source in [
        "pipeline main() -> int:\n    x = if\n",  # a keyword where a name goes: the builder's error
        "pipeline main() -> int:\n    return a->b\n",  # `->` where no arrow is allowed (the contextual lexer)
        "pipeline main():\n    x = f\"{y!r}\"\n    s = 'tab\\t' + \"\"\"two\r\nlines\"\"\"\n",
        "pipeline main():\n  if x:\n      y = 1\n    z = 2\n",  # a dedent to no level
        "pipeline main():\n    x = " + "[" * 120 + "]" * 120 + "\n",  # nested too deeply
        "record R:\n    a: int\n    \"late doc\"\n",
        "",
        "# only a comment",
    ]:
        assert_same(source)


GENERATED = st.deferred(lambda: __import__("test_properties").PROGRAMS)
EDITED = st.deferred(lambda: __import__("test_properties").edited_golden_programs())


@pytest.mark.slow
@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
@given(st.one_of(GENERATED, EDITED))
def test_generated_and_edited_programs_parse_as_lark_parses_them(source):
    assert_same(source)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # invalid escapes, as Python reads them
@given(st.from_regex(r'"(?!"")([^"\\\n]|\\.)*"|\'(?!\'\')([^\'\\\n]|\\.)*\'|"""([^\\]|\\.)*?"""', fullmatch=True))
def test_string_values_are_python_s(literal):
    try:
        expected = ast.literal_eval(literal)
    except (ValueError, SyntaxError):
        with pytest.raises((ValueError, SyntaxError)):
            string_value(literal)
        return
    assert string_value(literal) == expected
