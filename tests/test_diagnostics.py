"""Compile diagnostics: `file:line:col: severity: message`, the source line, a caret under the exact columns,
a hint line, and every error of a file reported at once."""

from __future__ import annotations

import pytest

from orgtree_lang.check.module import check
from orgtree_lang.compile.api import compile_file
from orgtree_lang.syntax.diagnostics import CompileError, Diagnostic, DiagnosticSink, did_you_mean, render_all
from orgtree_lang.syntax.parser import parse, parse_expr
from orgtree_lang.syntax.spans import Span
from pipe_testing import compile_text, registry

pytestmark = pytest.mark.fast


def errors_of(source: str, file: str = "t.pipe") -> CompileError:
    with pytest.raises(CompileError) as info:
        compile_text(source, file)
    return info.value


def caret_columns(rendered: str, line_number: int) -> tuple[str, int, int]:
    """For the excerpt of `line_number`: the source text, and the 1-based first and last column under `^~~`."""
    lines = rendered.splitlines()
    gutter = f"{line_number:>4} | "
    at = next(i for i, text in enumerate(lines) if text.startswith(gutter))
    source, carets = lines[at][len(gutter):], lines[at + 1]
    assert carets.startswith(" " * (len(gutter) - 2) + "| "), "the caret line continues the gutter"
    marks = carets[len(gutter):]
    first = marks.index("^")
    assert set(marks[first:].rstrip()) <= {"^", "~"} and marks.count("^") == 1
    return source, first + 1, len(marks.rstrip())


# ---- one diagnostic, rendered --------------------------------------------------------------


SOURCE = """\
pipeline main():
    total = 1
    x = totl + 1
"""


def test_rendering_has_location_message_source_line_caret_and_hint():
    err = errors_of(SOURCE, "prog.pipe")
    assert len(err.diagnostics) == 1
    text = err.render()
    lines = text.splitlines()
    assert lines[0] == "prog.pipe:3:9: error: undefined name `totl`"
    assert lines[1] == "   3 |     x = totl + 1"
    assert lines[2] == "     |         ^~~~"
    assert lines[3] == "  = hint: did you mean `total`?"
    assert lines[-1] == "1 error generated."


def test_the_caret_spans_exactly_the_offending_text():
    err = errors_of(SOURCE)
    source, first, last = caret_columns(err.render(), 3)
    assert source[first - 1:last] == "totl"
    d = err.diagnostics[0]
    assert (d.span.line, d.span.col, d.span.end_col) == (3, 9, 13)


@pytest.mark.parametrize("source,line,text", [
    ('pipeline main():\n    y = 1\n    z = y + "s"\n', 3, 'y + "s"'),
    ("pipeline main():\n    goto nowhere\n", 2, "nowhere"),
    ("use text\npipeline main():\n    s = text.uppr(\"a\")\n", 3, "text.uppr"),
    ("pipeline main():\n    xs = [1]\n    v = xs[\"k\"]\n", 3, '"k"'),
    ("pipeline f(a: int) -> int:\n    return a\npipeline main():\n    q = f(1, b=2)\n", 4, "b=2"),
    ("pipeline main():\n    print(f\"sum: {undefined_one}\")\n", 2, "undefined_one"),
])
def test_carets_sit_under_the_offending_text(source, line, text):
    err = errors_of(source)
    assert len(err.diagnostics) == 1
    rendered_source, first, last = caret_columns(err.render(), line)
    assert rendered_source[first - 1:last] == text


def test_carets_line_up_after_tabs_and_non_ascii_text():
    source = 'pipeline main():\n\tcafe = "é"\n\tn = "été" + cafe + bogus\n'
    err = errors_of(source)
    rendered_source, first, last = caret_columns(err.render(), 3)
    assert rendered_source[first - 1:last] == "bogus"


def test_a_span_running_past_its_line_is_underlined_to_the_end_of_the_line():
    d = Diagnostic("error", "boom", Span("f.pipe", 1, 5, 3, 2))
    text = d.render("abc defgh  \nsecond\nthird\n")
    assert text.splitlines()[1:] == ["   1 | abc defgh  ", "     |     ^~~~~"]


def test_a_diagnostic_without_a_source_line_renders_its_header_only():
    d = Diagnostic("error", "cannot read x.pipe", Span("x.pipe", 0, 0, 0, 0), "check the path")
    assert d.render("whatever") == "x.pipe:0:0: error: cannot read x.pipe\n  = hint: check the path"


def test_unreadable_file_is_a_diagnostic(tmp_path):
    with pytest.raises(CompileError) as info:
        compile_file(tmp_path / "missing.pipe", registry())
    assert "cannot read" in info.value.diagnostics[0].message
    assert "missing.pipe" in info.value.render()


def test_warnings_render_as_warnings_and_are_counted_with_errors():
    source = "pipeline main() -> int:\n    return 1\n    x = nope\n"
    err = errors_of(source)
    severities = sorted(d.severity for d in err.diagnostics)
    assert severities == ["error", "warning"]
    text = err.render()
    assert "t.pipe:3:5: warning: unreachable code" in text
    assert "t.pipe:3:9: error: undefined name `nope`" in text
    assert text.endswith("1 error, 1 warning generated.")


def test_a_program_with_only_warnings_compiles_and_returns_them():
    compiled = compile_text("pipeline main():\n    return\n    print(1)\n")
    assert [w.message for w in compiled.warnings] == ["unreachable code"]
    assert compiled.warnings[0].render("pipeline main():\n    return\n    print(1)\n").startswith(
        "test.pipe:3:5: warning: unreachable code")


# ---- every error at once ---------------------------------------------------------------------


THREE_ERRORS = """\
pipeline helper(n: int) -> int:
    return n

pipeline main():
    a = helper("x")
    b = undefined_name
    goto nowhere
"""


def test_a_file_with_three_distinct_errors_reports_all_three():
    err = errors_of(THREE_ERRORS)
    errors = [d for d in err.diagnostics if d.severity == "error"]
    assert [(d.span.line, d.message) for d in errors] == [
        (5, "argument `n` of pipeline `helper` expects int, got str"),
        (6, "undefined name `undefined_name`"),
        (7, "no label `nowhere` in pipeline `main`"),
    ]
    text = err.render()
    assert text.endswith("3 errors generated.")
    assert [line.split(":")[1] for line in text.splitlines() if line.startswith("t.pipe:")] == ["5", "6", "7"]


def test_the_checker_collects_every_error_before_any_code_is_generated():
    with pytest.raises(CompileError) as caught:
        check(parse(THREE_ERRORS, "t.pipe"), registry(), THREE_ERRORS)
    assert [d.span.line for d in caught.value.diagnostics if d.severity == "error"] == [5, 6, 7]
    fixed = THREE_ERRORS.replace('helper("x")', "helper(1)").replace("undefined_name", "1")
    fixed = fixed.replace("    goto nowhere\n", "    print(a, b)\n")
    assert fixed != THREE_ERRORS
    checked = check(parse(fixed, "t.pipe"), registry(), fixed)
    assert [d for d in checked.diagnostics if d.severity == "error"] == []


def test_errors_in_different_pipelines_and_records_are_all_reported():
    source = ("record R:\n    a: nosuchtype\n\npipeline one():\n    x = 1 + \"a\"\n\n"
              "pipeline two():\n    break\n\npipeline three() -> int:\n    return \"s\"\n")
    err = errors_of(source)
    assert sorted(d.span.line for d in err.diagnostics if d.severity == "error") == [2, 5, 8, 11]


def test_rendered_diagnostics_are_in_source_order():
    d1 = Diagnostic("error", "late", Span("a.pipe", 9, 1, 9, 2))
    d2 = Diagnostic("error", "early", Span("a.pipe", 2, 3, 2, 4))
    d3 = Diagnostic("warning", "middle", Span("a.pipe", 2, 7, 2, 8))
    text = render_all([d1, d3, d2], {})
    assert [line for line in text.splitlines() if line.startswith("a.pipe")] == [
        "a.pipe:2:3: error: early", "a.pipe:2:7: warning: middle", "a.pipe:9:1: error: late"]
    assert text.endswith("2 errors, 1 warning generated.")


# ---- parse errors ------------------------------------------------------------------------------


def test_a_parse_error_says_what_was_expected_and_found_with_a_hint():
    err = errors_of("pipeline main():\n    if true\n        pass\n")
    d = err.diagnostics[0]
    assert (d.span.line, d.span.col) == (2, 12)
    assert d.message == "expected `:`, got end of line"
    assert d.hint == "add `:` at the end of the line to start a block"


def test_an_integer_literal_too_long_for_python_is_a_diagnostic():
    err = errors_of("pipeline main():\n    x = " + "7" * 5000 + "\n")
    assert err.diagnostics[0].message == "integer literal with 5000 digits is too long"
    assert err.diagnostics[0].span.line == 2


def test_a_field_expression_ending_in_a_comment_is_reported_not_raised():
    sink = DiagnosticSink("f.pipe")
    assert parse_expr("n #note", "f.pipe", 3, 10, sink) is None
    assert sink.has_errors
    assert sink.items[0].span.line == 3


# ---- hints ----------------------------------------------------------------------------------------


def test_did_you_mean_suggests_the_closest_spelling_or_nothing():
    assert did_you_mean("totl", ["total", "other"]) == "did you mean `total`?"
    assert did_you_mean("zzz", ["total", "other"]) is None
    assert did_you_mean("x", []) is None
