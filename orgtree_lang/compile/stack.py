"""Compute a code object's maximum stack depth from the opcode table, proving every path agrees."""

from __future__ import annotations

from orgtree_lang.compile.code import CodeObject
from orgtree_lang.compile.opcodes import OPCODES

_ENDS_FLOW = {"RETURN", "FAIL", "JUMP", "JUMP_STMT", "JUMP_FOR_ITER_STORE", "END_BRANCH", "END_HANDLER"}


class StackError(AssertionError):
    """The compiler produced code whose stack depth differs between paths (a compiler bug)."""


def stack_depths(code: CodeObject) -> dict[int, int]:
    """The stack depth before each reachable instruction, following falls-through and jumps."""
    depths: dict[int, int] = {}
    work = [(0, 0)]
    while work:
        pc, depth = work.pop()
        while pc < len(code.ops):
            if pc in depths:
                if depths[pc] != depth:
                    raise StackError(f"{code.name}: pc {pc} reached with stack depths {depths[pc]} and {depth}")
                break
            depths[pc] = depth
            opcode = OPCODES[code.ops[pc]]
            arg = code.args[pc]
            if opcode.jump_effect is not None:
                target_depth = depth + opcode.jump_effect
                if target_depth < 0:
                    raise StackError(f"{code.name}: pc {pc} {opcode.name} jumps with a negative stack depth")
                work.append((opcode.jump_target(arg), target_depth))
            if opcode.operand == "branches":
                # Each branch of a parallel block runs in a frame of its own, from an empty stack.
                work.extend((start, 0) for start, _ in arg)
            elif opcode.operand == "branch":
                work.append((arg, 1))  # a parallel loop's body starts with its item on the stack
            if opcode.name in _ENDS_FLOW:
                break
            depth += opcode.effect(arg, code)
            if depth < 0:
                raise StackError(f"{code.name}: pc {pc} {opcode.name} pops an empty stack")
            pc += 1
    return depths


def compute_max_stack(code: CodeObject) -> int:
    depths = stack_depths(code)
    peak = 0
    for pc, depth in depths.items():
        opcode = OPCODES[code.ops[pc]]
        after = depth + opcode.effect(code.args[pc], code) if opcode.name not in _ENDS_FLOW else depth
        peak = max(peak, depth, after)
    return peak
