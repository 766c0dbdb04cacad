"""The dispatch loop's view of a code object: (loop code, prepared argument) pairs, numbered in groups for speed.

The loop in vm/machine.py tells instructions apart by comparing integers, one after another. It numbers the
instructions it runs itself in the groups below, most frequent first, so that one comparison (`op < LOCALS`)
skips a whole group; every other instruction gets a code after them and runs through its handler.
"""

from __future__ import annotations

from typing import Any, Callable

from orgtree_lang.compile.code import CodeObject
from orgtree_lang.compile.opcodes import CODE, OPCODES
from orgtree_lang.vm.assignments import assignments
from orgtree_lang.vm.instructions import COMPARE_FUNCS, HANDLERS, UNARY_FUNCS

# Statement boundaries, loops and compare-and-jump. STMT_ASSIGN is no opcode: prepare makes it of the STMT of
# an arithmetic assignment (vm/assignments.py).
FLOW = ("STMT", "JUMP_STMT", "STMT_ASSIGN", "COMPARE_LOCALS_JUMP_IF_FALSE", "COMPARE_LOCAL_CONST_JUMP_IF_FALSE",
        "COMPARE_CONST_JUMP_IF_FALSE", "JUMP_FOR_ITER_STORE", "FOR_ITER_STORE", "COMPARE_JUMP_IF_FALSE")
# Locals, constants and arithmetic whose result goes into a local.
LOCALS_GROUP = ("BINARY_LOCAL_CONST_STORE", "LOAD_LOCAL2", "BINARY_CONST", "BINARY_STORE", "LOAD_LOCAL",
                "LOAD_CONST", "STORE_LOCAL", "BINARY_LOCALS_STORE")
# The other instructions the loop runs itself: the rest of the operators and jumps, built-in calls, frames.
OTHERS = ("BINARY_LOCAL_CONST", "BINARY_LOCALS", "BINARY_CONST_STORE", "BINARY", "COMPARE", "JUMP_IF_FALSE",
          "JUMP", "POP", "FOR_ITER", "CALL_BUILTIN", "CALL_PIPELINE", "RETURN")
INLINE = frozenset(FLOW + LOCALS_GROUP + OTHERS) - {"STMT_ASSIGN"}  # the opcodes the loop runs itself

LOOP_CODE: dict[str, int] = {name: i for i, name in enumerate(FLOW + LOCALS_GROUP + OTHERS)}
LOCALS = len(FLOW)  # the first loop code of LOCALS_GROUP
OTHER = LOCALS + len(LOCALS_GROUP)  # the first of OTHERS
HANDLED = OTHER + len(OTHERS)  # the first code of an instruction run by its handler
STMT_ASSIGN = LOOP_CODE["STMT_ASSIGN"]
LOOP_CODE.update({name: HANDLED + i for i, name in enumerate(sorted(HANDLERS))})
HANDLERS_BY_LOOP_CODE: dict[int, Callable] = {LOOP_CODE[name]: handler for name, handler in HANDLERS.items()}
_BY_TABLE_CODE = {CODE[name]: code for name, code in LOOP_CODE.items() if name in CODE}
# The loop tells the statement boundaries apart from everything else with `op <= 2`: they must stay the first
# three loop codes.
if (LOOP_CODE["STMT"], LOOP_CODE["JUMP_STMT"], LOOP_CODE["STMT_ASSIGN"]) != (0, 1, 2):
    raise AssertionError("STMT, JUMP_STMT and STMT_ASSIGN must be the first three codes of FLOW")

_OPERAND_FUNCS = {"compare": COMPARE_FUNCS, "unary": UNARY_FUNCS}  # and "binop": the machine's operator table


def prepare(code: CodeObject, binary: dict[str, Callable]) -> list[tuple[int, Any]]:
    """The instructions as (loop code, argument) pairs: operator names in arguments replaced by their functions
    (`binary` for arithmetic), a superinstruction's constants by their values, and the STMT of each arithmetic
    assignment by a STMT_ASSIGN (function of the locals, the local it sets, the pc after the statement)."""
    prepared = [(_BY_TABLE_CODE[op], _argument(OPCODES[op].fields, arg, code, binary))
                for op, arg in zip(code.ops, code.args)]
    for pc, assignment in assignments(code, binary).items():
        prepared[pc] = (STMT_ASSIGN, assignment)
    return prepared


def _argument(fields: tuple[str, ...], arg: Any, code: CodeObject, binary: dict[str, Callable]) -> Any:
    if len(fields) == 1:
        kind = fields[0]
        return binary[arg] if kind == "binop" else _OPERAND_FUNCS[kind][arg] if kind in _OPERAND_FUNCS else arg
    return tuple(binary[item] if kind == "binop" else _OPERAND_FUNCS[kind][item] if kind in _OPERAND_FUNCS
                 else code.consts[item] if kind == "const" else item for kind, item in zip(fields, arg))
