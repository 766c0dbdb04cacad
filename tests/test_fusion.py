"""Superinstructions: each fused opcode is its parts, and a run of fused code stops, counts and fails as the parts would.

- The table row of every fusion has its parts' fields (jump target last) and their combined stack effects.
- A JUMP to a STMT becomes JUMP_STMT, and steps still count every statement run, loop tests included.
- The disassembler shows the superinstruction as the operation it does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from orgtree_lang.compile.disassemble import disassemble
from orgtree_lang.compile.fusion import FUSIONS_BY_NAME, fused_fields
from orgtree_lang.compile.opcodes import BY_NAME, OPCODES
from orgtree_lang.run.factory import plain_machine
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.skills import SkillContext
from orgtree_lang.runtime.workspace import Workspace
from orgtree_lang.vm.budget import Budget
from pipe_testing import compile_text, registry

REG = registry()
PAIRS = sorted(FUSIONS_BY_NAME.items())


@pytest.mark.parametrize("parts,fused", PAIRS, ids=[fused for _, fused in PAIRS])
def test_a_fused_opcode_has_its_parts_fields_with_the_jump_last(parts, fused):
    assert BY_NAME[fused].fields == fused_fields(*parts)
    assert BY_NAME[fused].fields[:-1].count("jump") == 0


@pytest.mark.parametrize("parts,fused", PAIRS, ids=[fused for _, fused in PAIRS])
def test_a_fused_opcode_moves_the_stack_as_its_parts_do(parts, fused):
    first, second = (BY_NAME[name] for name in parts)
    whole = BY_NAME[fused]
    assert whole.effect(None, None) == first.effect(None, None) + second.effect(None, None)
    if second.jump_effect is not None:
        assert whole.jump_effect == first.effect(None, None) + second.jump_effect
    elif first.jump_effect is not None:  # FOR_ITER + STORE_LOCAL: the jump is the first part's
        assert whole.jump_effect == first.jump_effect
    else:
        assert whole.jump_effect is None


def _run(source: str, tmp_path: Path, **budget):
    program = compile_text(source).program
    machine = plain_machine(program, registry=REG, context=SkillContext(Workspace(tmp_path)),
                            budget=Budget(**budget))
    machine.start()
    return program, machine.run()


COUNT_TO_THREE = """\
pipeline main() -> int:
    i = 0
    while i < 3:
        i += 1
    return i
"""


def test_a_while_loop_jumps_back_with_jump_stmt_and_counts_every_test_of_its_condition(tmp_path):
    program, state = _run(COUNT_TO_THREE, tmp_path)
    names = [OPCODES[op].name for op in program.pipelines["main"].ops]
    assert "JUMP_STMT" in names and "JUMP" not in names
    # One step per statement run: `i = 0`, four tests of `i < 3`, three `i += 1`, the return.
    assert (state.result, state.steps) == (3, 9)


def test_a_step_budget_stops_a_fused_loop_at_the_same_statement_as_ever(tmp_path):
    with pytest.raises(PipeRuntimeError) as caught:
        _run(COUNT_TO_THREE, tmp_path, max_steps=8)
    assert caught.value.kind == "budget" and caught.value.span.line == 5
    _, state = _run(COUNT_TO_THREE, tmp_path, max_steps=9)
    assert state.result == 3


def test_pausing_after_each_step_stops_on_statements_only_and_gets_the_same_result(tmp_path):
    program = compile_text(COUNT_TO_THREE).program
    machine = plain_machine(program, registry=REG, context=SkillContext(Workspace(tmp_path)))
    machine.start()
    lines = []
    while (state := machine.run(pause_after=1)).status == "paused":
        frame = state.frames[-1]
        assert OPCODES[frame.code.ops[frame.pc]].name == "STMT"
        lines.append(frame.code.span_at(frame.pc).line)
    assert state.result == 3
    # Every statement after the first, in the order they run: the loop test stops the run at its own line.
    assert lines == [3, 4, 3, 4, 3, 4, 3, 5]


def test_the_disassembler_shows_what_a_superinstruction_does():
    text = disassemble(compile_text("pipeline main(n: int) -> int:\n    i = 0\n    while i < n:\n"
                                    "        i = i + 1\n    return i\n").program)
    assert "COMPARE_LOCALS_JUMP_IF_FALSE" in text and "(i < n, else to " in text
    assert "BINARY_LOCAL_CONST_STORE" in text and "(i + 1 -> i)" in text
    assert "JUMP_STMT" in text
