"""Golden tests: every tests/golden/<feature>/*.pipe program is checked against its own inline expectations.

Markers, each in a comment at the end of a line:

- `# expect: TEXT`: the program prints a line equal to TEXT. All expects of a file, in file order, must equal
  the full list of printed lines (trailing spaces ignored; a printed string with newlines counts as several lines).
- `# error: TEXT`: compiling fails with an error diagnostic on this line whose message contains TEXT. Every error
  the compiler reports must be expected by its own marker (a line may hold several), so a file shows that all
  errors are reported at once.
- `# warning: TEXT`: the same for warnings; every warning must be expected, and warnings alone do not stop a file
  from compiling and running.
- `# runtime error: TEXT`: the run fails with a PipeRuntimeError located on this line whose message contains TEXT;
  the lines printed before the failure are still checked against the expects.
- `# hint: TEXT`: on a line with an error, warning or runtime error marker, the hint of that diagnostic (or of one
  of the diagnostics on the line) contains TEXT.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from orgtree_lang.syntax.diagnostics import CompileError
from pipe_testing import compile_text, golden_files, golden_id, output_lines, read_expectations, registry, run_compiled

pytestmark = pytest.mark.fast

GOLDEN = golden_files()


def test_there_are_enough_golden_programs():
    assert len(GOLDEN) >= 60
    features = {path.parent.name for path in GOLDEN}
    assert len(features) >= 20


def _match_diagnostics(kind: str, expected: list[tuple[int, str]], diagnostics, rendered: str) -> list[str]:
    """Problems with how `diagnostics` (of one severity) meet the `expected` (line, text) markers, one to one."""
    problems: list[str] = []
    unmatched = list(diagnostics)
    for line, text in expected:
        hit = next((d for d in unmatched if d.span.line == line and text in d.message), None)
        if hit is None:
            problems.append(f"expected {kind} on line {line} containing {text!r}")
        else:
            unmatched.remove(hit)
    problems += [f"unexpected {kind} at line {d.span.line}: {d.message}" for d in unmatched]
    if problems:
        problems.append("compiler said:\n" + rendered)
    return problems


def _match_hints(hints: list[tuple[int, str]], diagnostics) -> list[str]:
    problems = []
    for line, text in hints:
        on_line = [d.hint or "" for d in diagnostics if d.span.line == line]
        if not any(text in hint for hint in on_line):
            problems.append(f"no diagnostic on line {line} has a hint containing {text!r} (hints: {on_line})")
    return problems


@pytest.mark.parametrize("path", GOLDEN, ids=[golden_id(p) for p in GOLDEN])
def test_golden(path: Path, tmp_path: Path):
    source = path.read_text(encoding="utf-8")
    expect = read_expectations(source)
    assert len(expect.runtime_errors) <= 1, "a program can fail at run time only once"
    assert not (expect.errors and (expect.output or expect.runtime_errors)), \
        "a program with compile errors cannot also expect output"
    reg = registry()
    file = golden_id(path) + ".pipe"

    if expect.errors:
        with pytest.raises(CompileError) as info:
            compile_text(source, file, reg)
        diagnostics = info.value.diagnostics
        rendered = info.value.render()
        problems = _match_diagnostics("error", expect.errors, [d for d in diagnostics if d.severity == "error"],
                                      rendered)
        problems += _match_diagnostics("warning", expect.warnings,
                                       [d for d in diagnostics if d.severity == "warning"], rendered)
        problems += _match_hints(expect.hints, diagnostics)
        assert not problems, "\n".join(problems)
        return

    try:
        compiled = compile_text(source, file, reg)
    except CompileError as err:
        pytest.fail("expected the program to compile, but:\n" + err.render())
    problems = _match_diagnostics("warning", expect.warnings, compiled.warnings,
                                  "\n".join(w.render(source) for w in compiled.warnings))
    warning_lines = {line for line, _ in expect.warnings}
    problems += _match_hints([h for h in expect.hints if h[0] in warning_lines], compiled.warnings)
    runtime_hints = [h for h in expect.hints if h[0] not in warning_lines]
    assert not problems, "\n".join(problems)

    outcome = run_compiled(compiled.program, tmp_path, reg)
    error = outcome.error
    if expect.runtime_errors:
        line, text = expect.runtime_errors[0]
        assert error is not None, f"expected a runtime error on line {line}; output was {outcome.output}"
        where = error.span.line if error.span is not None else None
        assert where == line, f"runtime error {error.message!r} is at {error.span}, expected line {line}"
        assert text in error.message, f"runtime error {error.message!r} lacks {text!r}"
        for hint_line, hint in runtime_hints:
            assert hint_line == line, "a hint marker must share its line with the error it describes"
            assert hint in (error.hint or ""), f"hint {error.hint!r} lacks {hint!r}"
    else:
        assert not runtime_hints, "a hint marker needs an error, warning or runtime error on its line"
        if error is not None:
            pytest.fail(f"unexpected runtime error at {error.span}: {error.message}")
    assert output_lines(outcome.output) == expect.output
