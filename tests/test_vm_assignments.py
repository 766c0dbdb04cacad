"""Arithmetic assignments run as one prepared instruction (vm/assignments.py), and count, stop and fail as their
instructions do."""

from __future__ import annotations

from pathlib import Path

import pytest

from orgtree_lang.run.factory import plain_machine
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.skills import SkillContext
from orgtree_lang.runtime.workspace import Workspace
from orgtree_lang.vm.budget import Budget
from orgtree_lang.vm.dispatch import LOOP_CODE
from pipe_testing import compile_text, registry

pytestmark = pytest.mark.fast

REG = registry()
STMT_ASSIGN, STMT = LOOP_CODE["STMT_ASSIGN"], LOOP_CODE["STMT"]

LOOP = '''pipeline main(n: int) -> int:
    total = 0
    i = 0
    while i < n:
        total = total + i * 2 % 7 - (i // 3) ** 2
        i = i + 1
    return total
'''


def _machine(source: str, tmp_path: Path, **budget):
    program = compile_text(source).program
    machine = plain_machine(program, registry=REG, context=SkillContext(Workspace(tmp_path)), budget=Budget(**budget))
    return program, machine


def _expected(n: int) -> int:
    total = 0
    for i in range(n):
        total = total + i * 2 % 7 - (i // 3) ** 2
    return total


def test_each_arithmetic_assignment_is_prepared_as_one_instruction_and_computes_the_same(tmp_path: Path) -> None:
    program, machine = _machine(LOOP, tmp_path)
    code = program.pipelines["main"]
    prepared = machine.prepare(code)
    assigned = [code.span_at(pc).line for pc, (op, _arg) in enumerate(prepared) if op == STMT_ASSIGN]
    assert assigned == [2, 3, 5, 6]  # `return` and the loop test are no assignments
    machine.start("main", {"n": 100})
    assert machine.run().result == _expected(100)


def test_a_step_budget_counts_an_assignment_as_one_statement(tmp_path: Path) -> None:
    # 2 assignments, then per iteration the loop test and 2 assignments, then the last test and the return.
    steps = 2 + 3 * 10 + 2
    _, machine = _machine(LOOP, tmp_path, max_steps=steps)
    machine.start("main", {"n": 10})
    assert machine.run().result == _expected(10)
    _, machine = _machine(LOOP, tmp_path, max_steps=steps - 1)
    machine.start("main", {"n": 10})
    with pytest.raises(PipeRuntimeError) as caught:
        machine.run()
    assert caught.value.kind == "budget" and caught.value.span.line == 7


def test_a_run_paused_at_every_statement_stops_on_the_assignments_and_ends_alike(tmp_path: Path) -> None:
    program, machine = _machine(LOOP, tmp_path)
    machine.start("main", {"n": 4})
    lines = []
    while (state := machine.run(pause_after=1)).status == "paused":
        frame = state.frames[-1]
        lines.append(frame.code.span_at(frame.pc).line)
    assert state.result == _expected(4)
    assert lines == [3, 4] + [5, 6, 4] * 4 + [7]


@pytest.mark.parametrize("source,inputs,message,column", [
    ("pipeline main(n: int) -> int:\n    total = 1\n    total = total + 10 // (n - 3)\n    return total\n",
     {"n": 3}, "division by zero", 21),
    ("pipeline main(s: str) -> str:\n    total = \"a\"\n    total = total * 2 - s\n    return total\n",
     {"s": "b"}, "cannot apply `-` to str and str", 13),
    ("pipeline main(n: int) -> int:\n    if n > 5:\n        x = 1\n    y = x * 2 + n\n    return y\n",
     {"n": 3}, "variable `x` is used before it is assigned", 9),
])
def test_an_assignment_that_fails_fails_as_its_instructions_do(tmp_path: Path, source, inputs, message,
                                                               column) -> None:
    program, machine = _machine(source, tmp_path)
    code = program.pipelines["main"]
    line = 3 if "total" in source else 4
    assert [op for pc, (op, _arg) in enumerate(machine.prepare(code)) if code.span_at(pc).line == line][0] \
        == STMT_ASSIGN
    machine.start("main", inputs)
    with pytest.raises(PipeRuntimeError) as caught:
        machine.run()
    assert caught.value.message == message
    assert (caught.value.span.line, caught.value.span.col) == (line, column)


def test_an_error_in_an_assignment_is_caught_by_the_try_around_it(tmp_path: Path) -> None:
    source = ('pipeline main(n: int) -> str:\n    try:\n        x = 10 // n\n    except e:\n'
              '        return e.message\n    return "no error"\n')
    _, machine = _machine(source, tmp_path)
    machine.start("main", {"n": 0})
    assert machine.run().result == "division by zero"


def test_a_jump_to_an_assignment_runs_its_own_instructions(tmp_path: Path) -> None:
    # The end of the `if` branch jumps over the `else` to the assignment after it with a JUMP_STMT, which does
    # the STMT's work itself and lands on the assignment's own instructions.
    source = """pipeline main(n: int) -> int:
    total = 0
    for i in range(n):
        if i % 2 == 0:
            step = i
        else:
            step = 0 - i
        total = total + step * step
    return total
"""
    program, machine = _machine(source, tmp_path)
    code = program.pipelines["main"]
    prepared = machine.prepare(code)
    jumps = [arg for op, arg in prepared if op == LOOP_CODE["JUMP_STMT"]]
    assert any(prepared[target][0] == STMT_ASSIGN for target in jumps)
    machine.start("main", {"n": 9})
    assert machine.run().result == sum(i * i for i in range(9))
