"""`f(x) -> fails "text"` examples: the call must raise a catchable error whose message contains the text."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_testing import pipe
from orgtree_lang.syntax.diagnostics import CompileError
from orgtree_lang.syntax.formatter import format_source
from pipe_testing import compile_text, registry, run_compiled

SPLIT = '''\
use text

pipeline split_csv_line(line: str) -> list[str]:
    """Split one CSV line; a line with an odd number of quotes is refused."""
    examples:
        split_csv_line("a,b") -> ["a", "b"]
        split_csv_line("a,\\"bc") -> fails "unterminated quote"
    if len(text.split(line, "\\"")) % 2 == 0:
        fail "unterminated quote in " + line
    return text.split(line, ",")
'''


def test_an_example_that_fails_with_the_message_passes(tmp_path: Path):
    (tmp_path / "split.pipe").write_text(SPLIT)
    result = pipe("test", "split.pipe", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert [line.split(" (")[0] for line in lines] == [
        "PASS split.pipe: example split_csv_line, line 6", "PASS split.pipe: example split_csv_line, line 7",
        "2 tests: 2 passed, 0 failed"]


def test_an_example_whose_call_returns_normally_fails_at_its_line(tmp_path: Path):
    (tmp_path / "split.pipe").write_text(SPLIT.replace('    if len(', '    if false and len('))
    result = pipe("test", "split.pipe", cwd=tmp_path)
    assert result.returncode == 1
    assert "FAIL split.pipe: example split_csv_line, line 7" in result.stdout
    assert ('example on line 7 does not hold: split_csv_line("a,\\"bc") returned ["a", "\\"bc"], expected it to '
            'fail with a message containing "unterminated quote"') in result.stdout
    assert "split.pipe:7:" in result.stdout
    assert result.stdout.splitlines()[-1] == "2 tests: 1 passed, 1 failed"


def test_an_example_whose_error_lacks_the_text_fails_saying_what_the_error_was(tmp_path: Path):
    (tmp_path / "split.pipe").write_text(SPLIT.replace('fail "unterminated quote in "', 'fail "odd quotes in "'))
    result = pipe("test", "split.pipe", cwd=tmp_path)
    assert result.returncode == 1
    assert ('example on line 7 does not hold: split_csv_line("a,\\"bc") failed with a `fail` error "odd quotes in '
            'a,\\"bc", expected it to fail with a message containing "unterminated quote"') in result.stdout
    assert result.stdout.splitlines()[-1] == "2 tests: 1 passed, 1 failed"


def test_any_catchable_error_kind_counts(tmp_path: Path):
    source = ('pipeline pick(xs: list[int], i: int) -> int:\n    """The i-th item."""\n    examples:\n'
              '        pick([1], 0) -> 1\n        pick([1], 5) -> fails "out of range"\n    return xs[i]\n')
    (tmp_path / "pick.pipe").write_text(source)
    result = pipe("test", "pick.pipe", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_formatter_round_trips_a_fails_example():
    ugly = SPLIT.replace('-> fails "unterminated quote"', '->   fails   "unterminated quote"  # refused')
    pretty = format_source(ugly)
    assert '        split_csv_line("a,\\"bc") -> fails "unterminated quote"  # refused\n' in pretty
    assert format_source(pretty) == pretty


def test_fails_stays_usable_as_a_name(tmp_path: Path):
    named = 'pipeline fails(n: int) -> int:\n    """Twice n."""\n    examples:\n        fails(2) -> 4\n    return n * 2\n'
    assert list(compile_text(named, "n.pipe", registry()).program.tests) == ["example fails, line 4"]
    variable = ('pipeline twice(fails: int) -> int:\n    """Twice its input."""\n    examples:\n'
                '        twice(2) -> 4\n    return fails * 2\n\npipeline main():\n    fails = [twice(1)]\n'
                '    print(fails)\n')
    assert run_compiled(compile_text(variable, "n.pipe", registry()).program, tmp_path).output == ["[2]"]


def test_another_word_than_fails_before_the_message_is_refused_with_a_hint():
    source = SPLIT.replace('-> fails "unterminated', '-> raises "unterminated')
    with pytest.raises(CompileError) as info:
        compile_text(source, "s.pipe", registry())
    rendered = info.value.render()
    assert "got `raises`" in rendered and 'write `-> fails "part of its message"`' in rendered
