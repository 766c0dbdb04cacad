"""The language card: every example compiles, runs and prints what its `# -> X` comments say; the prompts use it."""

from __future__ import annotations

from pathlib import Path

import pytest

from orgtree_lang.syntax.card import card_examples, language_card
from orgtree_lang.syntax.diagnostics import CompileError
from pipe_testing import compile_text, output_lines, registry, run_compiled

EXAMPLES = card_examples()


def test_the_card_has_an_example_for_each_part_it_promises() -> None:
    card = language_card()
    for heading in ("Modules, pipelines, calls, recursion", "Types, literals, statements, operators",
                    "Strings, lists, dicts", "Records and type tests", "Errors",
                    "Examples, expectations, assumptions, tests", "F-strings and printing", "Idioms"):
        assert f"## {heading}" in card, heading
    assert len(EXAMPLES) >= 7


def test_the_card_lists_every_word_that_cannot_be_a_name() -> None:
    # Both real authors' only invalid first answer used `record` as a variable: the card names the keywords.
    import re

    from orgtree_lang.syntax.parse_errors import RESERVED
    from orgtree_lang.syntax.words import KEYWORDS

    [line] = [line for line in language_card().splitlines() if line.startswith("Never names (keywords):")]
    listed = set(re.findall(r"`([a-z_]+)`", line.split(";")[0]))
    words = set(KEYWORDS) | set(RESERVED)  # not SOFT_KEYWORDS: `label` and `goto` may be names
    assert not words - listed, f"add {sorted(words - listed)} to the card's `Never names (keywords):` line"
    assert listed <= words, f"{sorted(listed - words)} can be names: take them off that line of grammar/card.md"


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"line{e.line}" for e in EXAMPLES])
def test_every_card_example_runs_and_prints_what_it_says(example, tmp_path: Path) -> None:
    assert example.output, "an example shows what it prints with `# -> X` comments"
    try:
        compiled = compile_text(example.source, f"card_line{example.line}.pipe", registry())
    except CompileError as err:
        pytest.fail(err.render())
    assert not compiled.warnings
    outcome = run_compiled(compiled.program, tmp_path, registry())
    assert outcome.error is None, outcome.error
    assert output_lines(outcome.output) == example.output


def test_the_card_stays_small_enough_for_every_prompt() -> None:
    from orgtree_lang.models.tokens import count_tokens

    # The author's and the reviewer's every request carry the card: it must leave room for the work itself.
    assert count_tokens(language_card()) <= 2400


def test_a_wrong_expectation_in_an_example_is_noticed(tmp_path: Path) -> None:
    [example] = card_examples("```pipe\npipeline main():\n    print(1 + 1)  # -> 3\n```")
    outcome = run_compiled(compile_text(example.source, "x.pipe", registry()).program, tmp_path, registry())
    assert output_lines(outcome.output) != example.output


def test_the_author_and_the_reviewer_are_given_the_card() -> None:
    from orgtree_lang.decompose.decomposer import LANGUAGE_NOTES
    from orgtree_lang.review.reviewer import reviewer_messages

    assert language_card() in LANGUAGE_NOTES
    messages = reviewer_messages("s", 1, "spec", "artifact", [], [], language=language_card())
    assert any(language_card() in m.content for m in messages)
    assert not any(language_card() in m.content for m in reviewer_messages("s", 1, "spec", "artifact", [], []))


def test_every_stdlib_skill_of_the_language_namespaces_has_an_example_that_parses() -> None:
    from orgtree_lang.decompose.prompt import example_call, skill_entry
    from orgtree_lang.syntax.parser import parse

    reg = registry()
    namespaces = ("text", "json", "lists", "dicts", "math", "time", "kv", "random", "ids", "fs")
    for name in reg.names():
        if name.split(".")[0] not in namespaces:
            continue
        example = example_call(reg.get(name))
        assert example and name in example, f"{name} has no `Example:` line"
        statement = example.split("  # ")[0]
        body = f"{statement}\n        pass" if statement.endswith(":") else statement
        parse(f"pipeline main():\n    {body}\n")  # raises CompileError if the example is not .pipe
        assert f"e.g. {example}" in skill_entry(reg.get(name))
