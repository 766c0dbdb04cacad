"""Examples, `expect`, `assume` and `test` blocks: checks at run time, `pipe test`, the bytecode and the formatter."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_testing import pipe
from orgtree_lang.compile.code import Program
from orgtree_lang.syntax.formatter import format_source
from pipe_testing import compile_text, registry, run_compiled

BLOCK = '''\
pipeline main(word: str):
    ambiguous shout(word: str, times: int = 2) -> loud: str:
        """Repeat the word `times` times in upper case, joined by spaces."""
        examples:
            shout("hi", 2) -> "HI HI"
            shout("a", times=3) -> "A A A"
        expect len(loud) >= len(word) * times, "every repetition is there"
    print(loud)
'''


def _resolver(answer):
    def resolve(block):
        resolve.seen = block.spec
        return {"loud": answer}
    return resolve


def test_a_block_whose_outputs_meet_its_expectations_runs_on(tmp_path: Path):
    compiled = compile_text(BLOCK, "shout.pipe", registry())
    resolver = _resolver("HI HI")
    outcome = run_compiled(compiled.program, tmp_path, registry(), decomposer=resolver, inputs={"word": "hi"})
    assert outcome.error is None and outcome.output == ["HI HI"]
    spec = resolver.seen
    assert [(e.inputs, e.outputs) for e in spec.examples] == [({"word": "hi", "times": 2}, {"loud": "HI HI"}),
                                                              ({"word": "a", "times": 3}, {"loud": "A A A"})]
    assert spec.expects == (("len(loud) >= len(word) * times", "every repetition is there"),)


def test_a_block_output_that_breaks_an_expectation_fails_at_the_expect_line_naming_the_values(tmp_path: Path):
    compiled = compile_text(BLOCK, "shout.pipe", registry())
    outcome = run_compiled(compiled.program, tmp_path, registry(), decomposer=_resolver("HI"), inputs={"word": "hi"})
    err = outcome.error
    assert err is not None and err.kind == "expectation" and err.span.line == 7
    assert err.message == ('expectation does not hold: len(loud) >= len(word) * times (every repetition is there); '
                           'len(loud) = 2; len(word) * times = 4; loud = "HI"; word = "hi"; times = 2')
    assert outcome.output == []


def test_a_failed_assumption_is_traced_as_one(tmp_path: Path):
    source = 'pipeline main(n: int):\n    assume n > 0, "a count"\n    print(n)\n'
    outcome = run_compiled(compile_text(source, "a.pipe", registry()).program, tmp_path, registry(), inputs={"n": 0})
    assert outcome.error.kind == "assumption"
    trace = (tmp_path / "trace.jsonl").read_text(encoding="utf-8")
    assert '"kind": "assumption"' in trace.replace('":"', '": "') and "assumption does not hold" in trace


def test_tests_and_checks_survive_the_json_form():
    source = (Path(__file__).parent / "golden" / "contracts" / "expect_post_condition.pipe").read_text()
    program = compile_text(source + '\ntest "t":\n    assume clamp(1, 0, 2) == 1, "x"\n', "p.pipe",
                           registry()).program
    again = Program.loads(program.dumps())
    assert again.dumps() == program.dumps() and list(again.tests) == ['test "t"']
    assert again.pipelines["clamp"].checks == program.pipelines["clamp"].checks


def test_the_formatter_keeps_contracts_and_is_stable():
    ugly = ('pipeline f(x: int) -> int:\n  "Doc."\n  examples:\n      f(1)->2  # one\n  expect result>x,"bigger"\n'
            '  assume x>0 , "positive"\n  return x+1\n\ntest   "f":\n  expect f(1)==2,"ok"\n')
    pretty = format_source(ugly)
    assert pretty == ('pipeline f(x: int) -> int:\n    """Doc."""\n    examples:\n        f(1) -> 2  # one\n'
                      '    expect result > x, "bigger"\n    assume x > 0, "positive"\n    return x + 1\n\n'
                      'test "f":\n    expect f(1) == 2, "ok"\n')
    assert format_source(pretty) == pretty


PROGRAM = '''\
pipeline double(n: int) -> int:
    """Twice n."""
    examples:
        double(2) -> 4
        double(0) -> 0
    return n * 2

test "double is even":
    for n in range(5):
        expect double(n) % 2 == 0, "always even"
'''


def test_pipe_test_runs_examples_and_tests_and_exits_0(tmp_path: Path):
    (tmp_path / "double.pipe").write_text(PROGRAM)
    result = pipe("test", "double.pipe", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert [line.split(" (")[0] for line in lines[:-1]] == [
        "PASS double.pipe: example double, line 4", "PASS double.pipe: example double, line 5",
        'PASS double.pipe: test "double is even"']
    assert lines[-1] == "3 tests: 3 passed, 0 failed"


def test_pipe_test_reports_a_failing_example_with_its_line_and_exits_1(tmp_path: Path):
    (tmp_path / "double.pipe").write_text(PROGRAM.replace("return n * 2", "return n + 2"))
    result = pipe("test", "double.pipe", cwd=tmp_path)
    assert result.returncode == 1
    assert "FAIL double.pipe: example double, line 5" in result.stdout
    assert "example on line 5 does not hold: double(0) gave 2, expected 0" in result.stdout
    assert "double.pipe:5:" in result.stdout
    assert result.stdout.splitlines()[-1] == "3 tests: 1 passed, 2 failed"


def test_pipe_test_with_no_tests_fails_and_says_how_to_write_one(tmp_path: Path):
    (tmp_path / "plain.pipe").write_text('pipeline main():\n    print(1)\n')
    result = pipe("test", "plain.pipe", cwd=tmp_path)
    assert result.returncode == 1 and "no tests found" in result.stderr


def test_pipe_test_of_a_file_that_does_not_compile_exits_65(tmp_path: Path):
    (tmp_path / "bad.pipe").write_text('test "x":\n    expect 1, "int"\n')
    result = pipe("test", "bad.pipe", cwd=tmp_path)
    assert result.returncode == 65 and "must be a bool" in result.stderr


def test_pipe_test_help_has_an_example():
    result = pipe("test", "--help")
    assert result.returncode == 0 and "pipe test examples/contracts.pipe" in result.stdout


@pytest.mark.parametrize("word", ["expect", "assume"])
def test_expect_and_assume_are_keywords(word: str):
    from orgtree_lang.syntax.diagnostics import CompileError

    with pytest.raises(CompileError) as info:
        compile_text(f"pipeline main():\n    {word} = 1\n", "k.pipe", registry())
    assert f"`{word}` is a keyword" in info.value.render()


def test_examples_and_test_stay_usable_as_names(tmp_path: Path):
    source = 'pipeline main():\n    examples = [1]\n    test = 2\n    print(examples, test)\n'
    assert run_compiled(compile_text(source, "n.pipe", registry()).program, tmp_path).output == ["[1] 2"]


ROUTED = '''route "billing" -> desk
route "audit" -> ledger

pipeline desk(m: Message) -> none:
    print(f"desk got {m.body}")

pipeline main() -> int:
    send "billing", 3
    send "audit", 4
    return 1

test "both routes take their messages":
    expect main() == 1, "main returns 1"
'''


def test_pipe_test_runs_a_program_with_its_modules_routes_and_the_settings_routes(tmp_path: Path):
    (tmp_path / "routed.pipe").write_text(ROUTED + '\npipeline ledger(m: Message) -> none:\n    print("ledger")\n')
    (tmp_path / "orgtree.toml").write_text('[org.routes]\naudit = "ledger"\n')
    ran = pipe("run", "routed.pipe", cwd=tmp_path)
    tested = pipe("test", "routed.pipe", "-v", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "known routes: none" not in tested.stdout
    # What a test prints is what the run printed: the same handlers took the same messages.
    assert [line.strip("| ").strip() for line in tested.stdout.splitlines() if line.startswith("    |")] == \
        ran.stdout.splitlines()[:-1]


def test_pipe_test_reuses_the_saved_module_of_an_ambiguous_block_as_pipe_run_does(tmp_path: Path):
    import shutil

    examples = Path(__file__).parent.parent / "examples"
    shutil.copytree(examples / "models", tmp_path / "models")
    (tmp_path / "triage.pipe").write_text((examples / "ambiguous_triage.pipe").read_text() + '''
test "a request for something new is a feature":
    expect main("Please add CSV export") == "feature", "a feature request"
''')
    offline = pipe("test", "triage.pipe", cwd=tmp_path)
    assert offline.returncode == 1 and "FAIL" in offline.stdout  # nothing saved yet, no model: says how to add one
    assert "--model" in offline.stdout
    written = pipe("test", "triage.pipe", "--model", "scripted:models/triage_author.yaml",
                   "--review-model", "scripted:models/triage_reviewer.yaml", cwd=tmp_path)
    assert written.returncode == 0, written.stdout + written.stderr  # the flag its hint names: it has it now
    assert list((tmp_path / ".orgtree" / "modules").rglob("classify*.pipe"))
    again = pipe("test", "triage.pipe", cwd=tmp_path, env={"PIPE_MODEL": None})
    assert again.returncode == 0, again.stdout + again.stderr  # no model: the saved module answers
    assert again.stdout.splitlines()[-1] == "1 test: 1 passed, 0 failed"
