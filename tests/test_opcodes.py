"""The opcode table, the stack-depth check and the JSON form of compiled programs, over every golden program.

- The table is complete and self-consistent: every opcode the code generator names is in it, codes are
  positions, and each fixed stack effect matches its stack picture.
- `stack_depths` proves each compiled pipeline consistent, `compute_max_stack` agrees with the recorded
  `max_stack`, and the depths it predicts are the depths the VM really has at every statement boundary.
- `Program.loads(program.dumps())` is the same program: same JSON, same disassembly, same run.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orgtree_lang.compile import codegen, concurrency, contracts, emitter, expressions
from orgtree_lang.compile.api import compile_source
from orgtree_lang.compile.code import FORMAT_VERSION, Program
from orgtree_lang.compile.disassemble import disassemble
from orgtree_lang.compile.opcodes import BY_NAME, OPCODES
from orgtree_lang.compile.stack import StackError, compute_max_stack, stack_depths
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.skills import SkillContext
from orgtree_lang.runtime.workspace import Workspace
from orgtree_lang.run.factory import plain_machine
from pipe_testing import compile_text, example_files, golden_files, golden_id, read_expectations, registry

pytestmark = pytest.mark.fast

REG = registry()


def _compiled_programs() -> list[tuple[str, Program]]:
    found = []
    for path in golden_files():
        if read_expectations(path.read_text(encoding="utf-8")).compiles:
            found.append((golden_id(path), compile_text(path.read_text(encoding="utf-8"), path.name, REG).program))
    for path in example_files():
        found.append((f"examples/{path.stem}", compile_text(path.read_text(encoding="utf-8"), path.name, REG).program))
    return found


PROGRAMS = _compiled_programs()
IDS = [name for name, _ in PROGRAMS]
# The code generator: the pipeline compiler and its mixins.
GENERATOR = (codegen, emitter, expressions, concurrency, contracts)

# In the table for the VM and the docs, but the code generator has no use for it yet.
NOT_EMITTED: set[str] = set()


# ---- the table ---------------------------------------------------------------------------------


def test_every_opcode_the_code_generator_names_is_in_the_table():
    source = "".join(Path(part.__file__).read_text(encoding="utf-8") for part in GENERATOR)
    named = set(re.findall(r'\bCODE\["([A-Z][A-Z0-9_]*)"\]', source))
    assert named, 'the code generator should name opcodes as CODE["NAME"]'
    assert named <= set(BY_NAME), f"not in the table: {sorted(named - set(BY_NAME))}"


def test_every_opcode_in_the_table_is_emitted_by_some_program():
    emitted = {OPCODES[op].name for _, program in PROGRAMS for code in program.pipelines.values() for op in code.ops}
    assert set(BY_NAME) - emitted == NOT_EMITTED


def test_opcode_codes_are_positions_and_names_are_unique():
    assert [op.code for op in OPCODES] == list(range(len(OPCODES)))
    assert len(BY_NAME) == len(OPCODES)
    for op in OPCODES:
        assert "--" in op.picture and op.doc and op.operand


@pytest.mark.parametrize("op", [op for op in OPCODES if op.operand not in ("call", "ambiguous", "count")
                                and "|" not in op.picture and "..." not in op.picture], ids=lambda op: op.name)
def test_fixed_stack_effects_match_their_pictures(op):
    before, after = (side.split() for side in op.picture.split("--"))
    assert op.effect(None, None) == len(after) - len(before)


@pytest.mark.parametrize("name,effect", [("BUILD_LIST", lambda n: 1 - n), ("BUILD_DICT", lambda n: 1 - 2 * n),
                                         ("BUILD_STRING", lambda n: 1 - n), ("UNPACK", lambda n: n - 1)])
def test_counted_stack_effects(name, effect):
    for n in range(5):
        assert BY_NAME[name].effect(n, None) == effect(n)


def test_a_jump_to_a_different_depth_is_a_stack_error():
    program = compile_text("pipeline main():\n    x = 1\n").program
    code = program.pipelines["main"]
    # Make the last LOAD_CONST jump back to the start with one value more on the stack.
    bad = next(pc for pc, op in enumerate(code.ops) if OPCODES[op].name == "STORE_LOCAL")
    code.ops[bad], code.args[bad] = BY_NAME["JUMP_IF_TRUE_OR_POP"].code, 0
    with pytest.raises(StackError):
        stack_depths(code)


# ---- compiled programs ------------------------------------------------------------------------


@pytest.mark.parametrize("name,program", PROGRAMS, ids=IDS)
def test_stack_depths_are_consistent_and_max_stack_agrees(name, program):
    for code in program.pipelines.values():
        depths = stack_depths(code)
        assert depths[0] == 0
        assert compute_max_stack(code) == code.max_stack
        assert max(depths.values()) <= code.max_stack
        # Every instruction the code can reach is accounted for, and the operands point at real entries.
        for pc, (op, arg) in enumerate(zip(code.ops, code.args)):
            opcode = OPCODES[op]
            if opcode.jump_effect is not None:
                assert 0 <= opcode.jump_target(arg) < len(code.ops)
            if opcode.operand == "local":
                assert 0 <= arg < len(code.varnames)
            if opcode.operand == "const":
                assert 0 <= arg < len(code.consts)
            if opcode.operand == "call":
                assert 0 <= arg < len(code.calls)
            assert code.span_at(pc).line > 0, f"{code.name} pc {pc} has no source line"
        assert OPCODES[code.ops[-1]].name == "RETURN"


@pytest.mark.parametrize("name,program", PROGRAMS, ids=IDS)
def test_static_depths_are_the_vm_depths_at_every_statement(name, program, tmp_path):
    depths = {code.name: stack_depths(code) for code in program.pipelines.values()}
    machine = plain_machine(program, registry=REG, context=SkillContext(Workspace(tmp_path)))
    machine.start()
    checked = 0
    while True:
        try:
            state = machine.run(pause_after=1)
        except PipeRuntimeError:
            break
        if state.status != "paused":
            break
        *callers, top = state.frames
        assert OPCODES[top.code.ops[top.pc]].name == "STMT"
        assert len(top.stack) == depths[top.pipeline][top.pc]
        for frame in callers:
            # A caller waits after its CALL_PIPELINE: its arguments are gone and the result is not there yet.
            assert len(frame.stack) == depths[frame.pipeline][frame.pc] - 1
        checked += 1
        assert checked < 20_000


@pytest.mark.parametrize("name,program", PROGRAMS, ids=IDS)
def test_json_round_trip_disassembles_and_runs_identically(name, program, tmp_path):
    text = program.dumps()
    loaded = Program.loads(text)
    assert loaded.dumps() == text
    assert disassemble(loaded) == disassemble(program)
    assert loaded.shape() == program.shape()
    assert _run(program, tmp_path / "a") == _run(loaded, tmp_path / "b")


def _run(program: Program, root: Path):
    root.mkdir()
    printed: list[str] = []
    machine = plain_machine(program, registry=REG, context=SkillContext(Workspace(root)), printer=printed.append)
    machine.start()
    try:
        machine.run()
    except PipeRuntimeError as err:
        return printed, None, (err.message.replace(str(root), "ROOT"), str(err.span))
    return printed, machine.state.result, None


def test_a_program_with_another_format_version_is_refused():
    data = PROGRAMS[0][1].to_json()
    data["format"] = FORMAT_VERSION + 1
    with pytest.raises(ValueError, match="format"):
        Program.from_json(data)


def test_the_compile_cache_returns_the_same_program(tmp_path):
    source = "pipeline main() -> int:\n    total = 0\n    for i in range(4):\n        total += i\n    return total\n"
    first = compile_source(source, "c.pipe", REG, cache_dir=tmp_path)
    second = compile_source(source, "c.pipe", REG, cache_dir=tmp_path)
    assert not first.cached and second.cached
    assert second.program.dumps() == first.program.dumps()
    assert disassemble(second.program) == disassemble(first.program)
    changed = compile_source(source.replace("range(4)", "range(5)"), "c.pipe", REG, cache_dir=tmp_path)
    assert not changed.cached
