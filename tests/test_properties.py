"""Property tests: no input makes the parser, checker or compiler fail with anything but a CompileError, and
no program that compiles makes the VM fail with anything but a PipeRuntimeError.

Inputs come from three sources: programs generated from grammar/pipe.lark with hypothesis.extra.lark
(tokens padded with spaces, indentation rebuilt from _INDENT/_DEDENT markers), arbitrary text, and golden
programs with random edits. Examples per test follow the hypothesis profile (conftest.py);
`PIPE_HYPOTHESIS_PROFILE=thorough` runs many more.
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.lark import from_lark
from lark import Lark

from orgtree_lang.compile.api import compile_source
from orgtree_lang.compile.stack import stack_depths
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.run.registries import default_registry
from orgtree_lang.runtime.skills import SkillContext
from orgtree_lang.runtime.workspace import Workspace
from orgtree_lang.syntax.diagnostics import CompileError
from orgtree_lang.syntax.parser import grammar_text
from orgtree_lang.vm.budget import Budget
from orgtree_lang.run.factory import plain_machine
from pipe_testing import golden_files

pytestmark = pytest.mark.slow

REGISTRY = default_registry(plugins=False)
INDENT, DEDENT = "\x01", "\x02"

# Names that resolve to something (locals, built-ins, skills, soft keywords, reserved words) and a few random
# ones, so generated programs reach the checker's interesting paths and not only "undefined name".
NAMES = ["x", "y", "n", "items", "main", "f", "P", "str", "int", "float", "list", "dict", "any", "none",
         "len", "print", "range", "sorted", "text", "upper", "split", "json", "dump", "math", "sqrt", "lists",
         "label", "goto", "err", "Error", "message", "send", "parallel", "on", "import", "expect"]


def _generation_grammar() -> Lark:
    # A plain Lark object: the cached parser of the package has no `.grammar` for hypothesis to read.
    return Lark(grammar_text(), parser="lalr", start="start")


def _explicit(grammar: Lark, start: str) -> dict[str, st.SearchStrategy[str]]:
    """Strategies for the terminals reachable from rule `start` (hypothesis refuses unreachable ones)."""
    terminals, _, _ = grammar.grammar.compile([start], ())
    reachable = {t.name for t in terminals} | {"_INDENT", "_DEDENT"}
    explicit: dict[str, st.SearchStrategy[str]] = {}
    for term in terminals:
        value = term.pattern.value
        if term.pattern.type == "str" and value.isalpha():
            explicit[term.name] = st.just(f" {value} ")  # keywords must not glue to their neighbours
    pad = lambda s: f" {s} "  # noqa: E731
    explicit.update({
        "NAME": st.one_of(st.sampled_from(NAMES), st.from_regex(r"[a-z_][a-z0-9_]{0,4}", fullmatch=True)).map(pad),
        "INT": st.one_of(st.integers(0, 20).map(str), st.sampled_from(["1_000", "0", "10000", "99999999999"])).map(pad),
        "FLOAT": st.sampled_from(["1.5", "0.0", ".5", "2.", "1e3", "2.5E-2", "1e400"]).map(pad),
        "STRING": st.sampled_from(['"a"', "'b'", '""', '"x\\ny"', '"tab\\t"', "'it''s'", '"\\u00e9"']).map(pad),
        "LONG_STRING": st.sampled_from(['"""Doc."""', "'''two\nlines'''", '""""""']).map(pad),
        "FSTRING": st.sampled_from(['f"{x}"', 'f"a{1 + 2:>3}b"', 'f"{{}}"', 'f"{"', 'f"}"', 'f"{x!r}"',
                                    'f"{len(items)}"', "f''", 'f"{x:{y}}"', 'f"{}"']).map(pad),
        "_NL": st.sampled_from(["\n", "\n", "\n\n", "  # note\n", "\n# own line\n"]),
        "OPTIONAL": st.sampled_from(["", "", "", "?"]),  # `T??` is an error; keep most types plain
        "_INDENT": st.just(INDENT),
        "_DEDENT": st.just(DEDENT),
        "__IGNORE_0": st.just(" "),
        "__IGNORE_1": st.just(" "),
    })
    return {name: strategy for name, strategy in explicit.items() if name in reachable}


def lay_out(generated: str) -> str:
    """Turn _INDENT/_DEDENT markers at line starts into four-space indentation."""
    lines, level = [], 0
    for line in generated.split("\n"):
        level += line.count(INDENT) - line.count(DEDENT)
        text = line.replace(INDENT, "").replace(DEDENT, "").strip()
        lines.append("    " * max(level, 0) + text if text else "")
    return "\n".join(lines)


GRAMMAR = _generation_grammar()
WHOLE_MODULES = from_lark(GRAMMAR, start="start", explicit=_explicit(GRAMMAR, "start")).map(lay_out)

# Whole modules rarely get past `use`/`record` mistakes to pipeline bodies, so most examples are built
# from generated pipeline bodies under a header that binds the common names.
HEADER = (f'use text, math, json, lists, dicts\n\nrecord P:\n{INDENT}x: int\nmessage: str = "m"\n{DEDENT}\n'
          'pipeline main(x: int = 1, y: str = "s", n: float = 2.5, items: list[int] = [1, 2]) -> any:')
BODIES = from_lark(GRAMMAR, start="suite", explicit=_explicit(GRAMMAR, "suite")).map(lambda body: lay_out(HEADER + body))
PIPELINES = st.lists(from_lark(GRAMMAR, start="pipeline_decl", explicit=_explicit(GRAMMAR, "pipeline_decl")), min_size=1, max_size=3).map(
    lambda decls: lay_out(HEADER + "\n" + INDENT + " return none\n" + DEDENT + "\n".join(decls)))
PROGRAMS = st.one_of(WHOLE_MODULES, BODIES, BODIES, PIPELINES)


def compile_or_diagnose(source: str):
    """The compiled program, or None when the compiler reported diagnostics; anything else propagates."""
    try:
        return compile_source(source, "gen.pipe", REGISTRY).program
    except CompileError as err:
        assert err.diagnostics, "a CompileError must carry at least one diagnostic"
        assert any(d.severity == "error" for d in err.diagnostics)
        err.render()  # rendering every diagnostic must work too
        return None


def run_briefly(program) -> None:
    """Run a compiled program under a small budget; only .pipe runtime errors may come out."""
    for code in program.pipelines.values():
        stack_depths(code)
    with tempfile.TemporaryDirectory() as root:
        machine = plain_machine(program, registry=REGISTRY, context=SkillContext(Workspace(Path(root))),
                          budget=Budget(max_steps=300, max_seconds=5, max_skill_calls=50))
        try:
            machine.start()
        except (PipeRuntimeError, KeyError):  # KeyError: no entry pipeline to start (several, none is main)
            return
        try:
            machine.run()
        except PipeRuntimeError:
            pass


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
@given(PROGRAMS)
def test_generated_programs_give_diagnostics_or_bytecode(source):
    program = compile_or_diagnose(source)
    if program is not None:
        run_briefly(program)


@given(st.text(max_size=300))
def test_arbitrary_text_gives_diagnostics_or_bytecode(source):
    program = compile_or_diagnose(source)
    if program is not None:
        run_briefly(program)


@given(st.text(alphabet=" \t\n#:()[]{}\"'fx=+-*/%<>!.,0123456789_\\", max_size=200))
def test_punctuation_soup_gives_diagnostics(source):
    program = compile_or_diagnose(source)
    if program is not None:
        run_briefly(program)


GOLDEN_SOURCES = [p.read_text(encoding="utf-8") for p in golden_files()]


@st.composite
def edited_golden_programs(draw) -> str:
    """A golden program with a few characters deleted, duplicated or replaced."""
    source = draw(st.sampled_from(GOLDEN_SOURCES))
    for _ in range(draw(st.integers(1, 4))):
        if not source:
            break
        at = draw(st.integers(0, len(source) - 1))
        edit = draw(st.sampled_from(["delete", "duplicate", "replace", "insert"]))
        if edit == "delete":
            source = source[:at] + source[at + 1:]
        elif edit == "duplicate":
            source = source[:at] + source[at] + source[at:]
        else:
            char = draw(st.sampled_from(list(" \n\t:()[]{}\"'=#.,-+*/<>fx0") + ["    ", "not ", "goto ", "label "]))
            source = source[:at] + char + source[at + (edit == "replace"):]
    return source


@given(edited_golden_programs())
def test_edited_golden_programs_give_diagnostics_or_bytecode(source):
    program = compile_or_diagnose(source)
    if program is not None:
        run_briefly(program)


class _Enough(Exception):
    """The probe has seen enough programs compile: the generator is shown to work, so it stops generating."""


def test_the_grammar_strategy_produces_programs_that_compile():
    """Guard against a generator that only ever produces parse errors (which would test little)."""
    compiled = 0

    # Like the other grammar tests: from_lark discards some draws internally, which is not what this guards.
    # Generating is what costs here (about 0.1 s a program), so the probe stops at the third program that
    # compiles (only the generate phase: a stop is not a failure to shrink) and gives up after 150.
    @settings(max_examples=150, database=None, phases=[Phase.generate], report_multiple_bugs=False,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
    @given(PROGRAMS)
    def probe(source):
        nonlocal compiled
        if compile_or_diagnose(source) is not None:
            compiled += 1
            if compiled >= 3:
                raise _Enough

    with contextlib.suppress(_Enough):
        probe()
    assert compiled >= 3


def test_lay_out_turns_markers_into_indentation():
    generated = f"pipeline main():\n{INDENT} x = 1 \n if x:\n{INDENT} pass \n{DEDENT}{DEDENT} pipeline g():\n{INDENT} pass\n{DEDENT}"
    assert lay_out(generated) == ("pipeline main():\n    x = 1\n    if x:\n        pass\npipeline g():\n"
                                  "    pass\n")


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
@given(PROGRAMS)
@example(source=lay_out(HEADER + "\n\x01 x = 0 . x \n\x02"))  # `0.x` would lex as a float
def test_formatter_round_trips_generated_programs(source):
    """Format, reparse: the result is a fixed point and compiles to the same bytecode as the original."""
    from orgtree_lang.syntax.formatter import format_source

    try:
        formatted = format_source(source, "gen.pipe")
    except CompileError:
        return  # does not parse: the formatter has nothing to say
    assert format_source(formatted, "gen.pipe") == formatted
    original, again = compile_or_diagnose(source), compile_or_diagnose(formatted)
    assert (original is None) == (again is None)
    if original is not None:
        assert again.shape() == original.shape()
