"""docs/bytecode.md is generated from the opcode table; these tests keep the committed page in step with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from orgtree_lang.compile import docgen
from orgtree_lang.compile.opcodes import BY_NAME, OPCODES, Opcode

DOC = Path(__file__).resolve().parent.parent / "docs" / "bytecode.md"
REGENERATE = "python -m orgtree_lang.compile.docgen > docs/bytecode.md"


def test_bytecode_doc_is_the_generator_output() -> None:
    committed = DOC.read_text(encoding="utf-8")
    generated = docgen.render()
    assert committed == generated, (
        f"docs/bytecode.md is out of date with orgtree_lang/compile/opcodes.py or the compiler; "
        f"regenerate it with `{REGENERATE}` and commit the result"
    )


def test_the_example_declares_the_stdlib_skills_it_calls_as_the_stdlib_does(registry) -> None:
    for declared in docgen.example_registry():
        real = registry.get(declared.name)
        assert (declared.signature(), declared.params, declared.pure, declared.description) == \
               (real.signature(), real.params, real.pure, real.description), declared.name


def test_every_opcode_has_a_row_in_the_instruction_table() -> None:
    page = docgen.render()
    for opcode in OPCODES:
        assert f"| {opcode.code} | `{opcode.name}` | {opcode.operand} |" in page


def test_the_example_disassembly_is_embedded() -> None:
    page = docgen.render()
    assert docgen.EXAMPLE_SOURCE in page
    assert "pipeline shout(words: list[str], times: int = 2) -> str" in page
    assert '"format": ' in page


@pytest.mark.parametrize("name, formula", [
    ("STMT", "0"), ("LOAD_CONST", "+1"), ("POP", "-1"), ("SLICE", "-3"),
    ("BUILD_LIST", "1 - n"), ("BUILD_DICT", "1 - 2·n"), ("UNPACK", "n - 1"),
    ("CALL_SKILL", "1 - nargs - nkw"), ("AMBIGUOUS", "outputs - inputs"),
])
def test_stack_effects_are_written_as_formulas(name: str, formula: str) -> None:
    assert docgen.effect_formula(BY_NAME[name]) == formula


def test_an_effect_the_generator_cannot_describe_is_refused() -> None:
    squared = Opcode(99, "SQUARE", "count", "x -- y", "made up", lambda arg, code: arg * arg)
    with pytest.raises(ValueError, match="not linear"):
        docgen.effect_formula(squared)


def test_an_undocumented_operand_kind_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(docgen.OPERAND_DOCS, "attr")
    with pytest.raises(ValueError, match="attr"):
        docgen.render()
