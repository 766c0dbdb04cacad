"""`pipe fmt`: canonical layout that keeps every comment, is idempotent, and compiles to the same bytecode."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orgtree_lang.compile.api import compile_source
from orgtree_lang.run.registries import default_registry
from orgtree_lang.syntax.diagnostics import CompileError
from orgtree_lang.syntax.formatter import format_source
from orgtree_lang.syntax.parser import source_comments

pytestmark = pytest.mark.fast

TESTS = Path(__file__).resolve().parent
PROGRAMS = sorted((TESTS / "golden").rglob("*.pipe")) + sorted((TESTS.parent / "examples").glob("*.pipe"))
REGISTRY = default_registry(plugins=False)


def shape_of(source: str):
    """Bytecode without positions, or None if the program does not compile."""
    try:
        return compile_source(source, "f.pipe", REGISTRY).program.shape()
    except CompileError:
        return None


def parses(source: str) -> bool:
    try:
        format_source(source)
    except CompileError:
        return False
    return True


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: str(p.relative_to(TESTS.parent)))
def test_formatting_is_idempotent_keeps_comments_and_bytecode(path):
    source = path.read_text(encoding="utf-8")
    if not parses(source):
        pytest.skip("has a syntax error on purpose")
    formatted = format_source(source)
    assert format_source(formatted) == formatted
    assert sorted(c[2].rstrip() for c in source_comments(source)) == \
        sorted(c[2].rstrip() for c in source_comments(formatted))
    assert shape_of(formatted) == shape_of(source)


def test_there_are_programs_to_format():
    assert len(PROGRAMS) >= 20


def test_canonical_layout():
    ugly = ("use text,fs\n"
            "record  P :\n"
            "  x:int=1\n"
            "pipeline main( a:int , b:str='x' )->list[int]?:\n"
            "  '''Doc.'''\n"
            "  y=[1,2 ,\n"
            "     3]   # trailing\n"
            "  # own line\n"
            "  if not(a<2)and b!='':\n"
            "     return [ -a , (a+1)*2 ]\n"
            "  return none\n")
    assert format_source(ugly) == (
        "use text, fs\n"
        "\n"
        "record P:\n"
        "    x: int = 1\n"
        "\n"
        "pipeline main(a: int, b: str = 'x') -> list[int]?:\n"
        '    """Doc."""\n'
        "    y = [1, 2, 3]  # trailing\n"
        "    # own line\n"
        "    if not a < 2 and b != '':\n"
        "        return [-a, (a + 1) * 2]\n"
        "    return none\n"
    )


def test_parentheses_are_kept_only_where_precedence_needs_them():
    cases = {
        "(a + b) * c": "(a + b) * c",
        "a + (b * c)": "a + b * c",
        "a - (b - c)": "a - (b - c)",
        "(a - b) - c": "a - b - c",
        "(-a) ** 2": "(-a) ** 2",
        "-(a ** 2)": "-a ** 2",
        "a ** (b ** c)": "a ** b ** c",
        "(a ** b) ** c": "(a ** b) ** c",
        "not (a and b)": "not (a and b)",
        "(a or b) and c": "(a or b) and c",
        "(a < b) == c": "(a < b) == c",
        "(xs)[0].y": "xs[0].y",
    }
    for written, canonical in cases.items():
        source = f"pipeline main(a: any, b: any, c: any, xs: any) -> any:\n    return {written}\n"
        formatted = format_source(source)
        assert formatted.splitlines()[1] == f"    return {canonical}", written
        assert shape_of(formatted) == shape_of(source), written


# ---- property: random expressions with random spacing and redundant parentheses -------------

ATOMS = st.sampled_from(["a", "b", "1", "2.5", '"s"', "true", "none", "[a, 1]", '{"k": b}', "f(a)"])
BINARY = st.sampled_from(["+", "-", "*", "/", "//", "%", "**", "and", "or", "<", "==", "in", "not in"])


@st.composite
def expressions(draw, depth=3):
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        text = draw(ATOMS)
    else:
        kind = draw(st.integers(0, 2))
        if kind == 0:
            text = f"{draw(expressions(depth - 1))} {draw(BINARY)} {draw(expressions(depth - 1))}"
        elif kind == 1:
            text = f"{draw(st.sampled_from(['-', 'not ']))}{draw(expressions(depth - 1))}"
        else:
            text = f"{draw(expressions(depth - 1))}[{draw(expressions(depth - 1))}]"
    if draw(st.booleans()):
        text = f"({text})"
    return text


@pytest.mark.slow
@given(expr=expressions(), spaces=st.sampled_from(["", " ", "  "]), comment=st.booleans())
def test_formatting_random_expressions_round_trips(expr, spaces, comment):
    body = re.sub(r"([+\-*/%<=,])", spaces + r"\1" + spaces, expr) if spaces else expr
    source = ("pipeline f(x: any) -> any:\n    return x\n\n"
              f"pipeline main(a: any, b: any) -> any:\n    r = {body}{'  # c' if comment else ''}\n    return r\n")
    if not parses(source):
        return  # spacing can glue tokens into something else (e.g. `* *`); not this test's concern
    formatted = format_source(source)
    assert format_source(formatted) == formatted
    assert shape_of(formatted) == shape_of(source)


def test_examples_are_in_canonical_form():
    for path in sorted((TESTS.parent / "examples").glob("*.pipe")):
        source = path.read_text(encoding="utf-8")
        assert format_source(source) == source, f"run `pipe fmt {path.name}`"


def test_blank_lines_after_blocks_and_header_comments_are_kept():
    source = ("# header comment\n"
              "\n"
              "pipeline main():\n"
              "    if true:\n"
              "        pass\n"
              "\n"
              "    x = 1\n"
              "    for i in [1]:\n"
              "        pass\n"
              "    y = 2\n")
    assert format_source(source) == source


def test_long_statements_ending_in_a_literal_or_call_get_one_item_per_line():
    items = ", ".join(f'"item number {i}"' for i in range(8))
    source = f"pipeline main() -> list[str]:\n    return [{items}]\n"
    formatted = format_source(source)
    lines = formatted.splitlines()
    assert lines[1] == "    return ["
    assert lines[2:10] == [f'        "item number {i}",' for i in range(8)]
    assert lines[10] == "    ]"
    assert all(len(line) <= 100 for line in lines)
    assert format_source(formatted) == formatted
    assert shape_of(formatted) == shape_of(source)


def test_comments_stay_with_the_list_dict_and_call_items_they_follow() -> None:
    messy = ("pipeline main():\n    xs = [1,  # one\n      2,   # two\n  # before three\n        3]\n"
             "    d = {\"a\": 1,  # the a\n       \"b\": 2}\n    print(  # why\n  xs, d)  # after\n")
    expected = ("pipeline main():\n    xs = [\n        1,  # one\n        2,  # two\n        # before three\n"
                "        3,\n    ]\n    d = {\n        \"a\": 1,  # the a\n        \"b\": 2,\n    }\n"
                "    print(  # why\n        xs,\n        d,\n    )  # after\n")
    assert format_source(messy) == expected
    assert format_source(expected) == expected
    assert format_source("pipeline main():\n    xs = [\n        1,\n        2,\n    ]  # all\n") == \
        "pipeline main():\n    xs = [1, 2]  # all\n"
