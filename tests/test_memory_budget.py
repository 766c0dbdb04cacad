"""The memory budget: with --max-memory no value a program builds may take more bytes than the limit."""

from __future__ import annotations

import sys

import pytest
from cli_testing import pipe as run_pipe
from pipe_testing import run_source

from orgtree_lang.vm.budget import Budget

MB = 1024 * 1024
DOUBLINGS = {
    "a list by +": 'xs = [1, 2, 3]\n    for i in range(40):\n        xs = xs + xs',
    "a list by *": 'xs = [1, 2, 3]\n    for i in range(40):\n        xs = xs * 2',
    "a string by *": 's = "ab"\n    for i in range(40):\n        s = 2 * s',
    "an f-string": 's = "ab"\n    for i in range(40):\n        s = f"{s}{s}"',
    "a skill's result": 'xs = [1, 2, 3]\n    for i in range(40):\n        xs = lists.concat([xs, xs])',
}


@pytest.mark.parametrize("how", sorted(DOUBLINGS))
def test_a_value_doubling_past_the_limit_stops_the_run_before_it_takes_the_memory(how, tmp_path):
    source = f"use lists\n\npipeline main() -> int:\n    {DOUBLINGS[how]}\n    return 1\n"
    outcome = run_source(source, tmp_path, budget=Budget(max_memory=8 * MB))
    assert outcome.error is not None, f"{how}: the run finished"
    assert outcome.error.kind == "budget" and not outcome.error.catchable
    assert outcome.error.message.startswith("memory budget exceeded: limit 8,388,608 bytes for one value, used ")
    assert outcome.error.span is not None and outcome.error.span.line == 6
    assert "--max-memory" in outcome.error.hint


def test_values_within_the_limit_are_built_as_before(tmp_path):
    source = 'pipeline main() -> int:\n    xs = [1]\n    for i in range(10):\n        xs = xs + xs\n    return len(xs)\n'
    assert run_source(source, tmp_path, budget=Budget(max_memory=8 * MB)).result == 1024


def test_pipe_run_takes_max_memory_with_a_unit(tmp_path):
    (tmp_path / "grow.pipe").write_text('pipeline main() -> int:\n    s = "ab"\n    for i in range(40):\n'
                                        '        s = s + s\n    return len(s)\n')

    def pipe(*args):
        return run_pipe("run", "grow.pipe", *args, cwd=tmp_path, env={"PIPE_NO_PLUGINS": "1"})

    stopped = pipe("--max-memory", "50M")
    assert stopped.returncode == 70
    assert "memory budget exceeded: limit 52,428,800 bytes for one value" in stopped.stderr
    assert "grow.pipe:4" in stopped.stderr
    wrong = pipe("--max-memory", "lots")
    assert wrong.returncode == 2 and "expected a size like 500M or 2G, got 'lots'" in wrong.stderr


# What `+` and `*` are about to build, derived by hand from CPython's layouts (64-bit): a str is one header
# (sys.getsizeof of a one-character string of its kind, less that character) plus 1, 2 or 4 bytes a
# character for the widest character it holds; a list or tuple is its empty size plus one 8-byte pointer
# an item. The header is counted once, however many repetitions the value holds.
def _str_size(sample_char: str, length: int) -> int:
    width = 1 if ord(sample_char) < 256 else 2 if ord(sample_char) < 65536 else 4
    return sys.getsizeof(sample_char) - width + length * width


BUILT = {
    '"x" * 1000': _str_size("x", 1000),
    '1000 * "x"': _str_size("x", 1000),
    '"é" * 1000': _str_size("é", 1000),
    '"ā" * 1000': _str_size("ā", 1000),
    '"😀" * 1000': _str_size("😀", 1000),
    '"ab" * 250 + "c" * 500': _str_size("x", 1000),
    '"a" * 700 + "ā" * 300': _str_size("ā", 1000),  # the wider kind of the two holds both
    '[1, 2] * 500': sys.getsizeof([]) + 8 * 1000,
    '[1] * 600 + [2] * 400': sys.getsizeof([]) + 8 * 1000,
}


@pytest.mark.parametrize("expression", sorted(BUILT))
def test_the_memory_budget_counts_what_an_operator_builds_exactly(expression, tmp_path):
    size = BUILT[expression]
    # The figure is the real one: Python builds exactly this many bytes.
    assert sys.getsizeof(eval(expression)) == size, "the hand-derived figure is wrong, not the budget"
    source = f"pipeline main() -> int:\n    v = {expression}\n    return len(v)\n"
    assert run_source(source, tmp_path, budget=Budget(max_memory=size)).result == 1000
    stopped = run_source(source, tmp_path, budget=Budget(max_memory=size - 1))
    assert stopped.error is not None and stopped.error.kind == "budget"
    assert f"limit {size - 1:,} bytes for one value, used {size:,};" in stopped.error.message
