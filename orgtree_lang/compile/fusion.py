"""Superinstructions: which adjacent instructions the code generator fuses into one, and the fused argument.

A fused instruction does what its parts did in order, so the VM dispatches once instead of two or three times.
Its argument holds both parts' fields in order, with a jump target last (the opcode table's operand says so:
LOAD_LOCAL `local` + BINARY_CONST `const binop` = BINARY_LOCAL_CONST `local const binop`).
A STMT is never fused into what follows it: statement boundaries, where a run may stop and be saved, stay
instructions of their own. Only a JUMP to a STMT takes that STMT's work along (JUMP_STMT), stopping at the
STMT's own pc, so the saved state is the one the unfused pair would leave.
"""

from __future__ import annotations

from typing import Any

from orgtree_lang.compile.opcodes import BY_NAME, CODE, OPCODES

# (first, second) -> the superinstruction that replaces the pair.
FUSIONS_BY_NAME: dict[tuple[str, str], str] = {
    ("LOAD_LOCAL", "LOAD_LOCAL"): "LOAD_LOCAL2",
    ("LOAD_CONST", "BINARY"): "BINARY_CONST",
    ("LOAD_LOCAL", "BINARY_CONST"): "BINARY_LOCAL_CONST",
    ("LOAD_LOCAL2", "BINARY"): "BINARY_LOCALS",
    ("BINARY_LOCALS", "STORE_LOCAL"): "BINARY_LOCALS_STORE",
    ("BINARY", "STORE_LOCAL"): "BINARY_STORE",
    ("BINARY_CONST", "STORE_LOCAL"): "BINARY_CONST_STORE",
    ("BINARY_LOCAL_CONST", "STORE_LOCAL"): "BINARY_LOCAL_CONST_STORE",
    ("COMPARE", "JUMP_IF_FALSE"): "COMPARE_JUMP_IF_FALSE",
    ("LOAD_LOCAL2", "COMPARE_JUMP_IF_FALSE"): "COMPARE_LOCALS_JUMP_IF_FALSE",
    ("LOAD_CONST", "COMPARE_JUMP_IF_FALSE"): "COMPARE_CONST_JUMP_IF_FALSE",
    ("LOAD_LOCAL", "COMPARE_CONST_JUMP_IF_FALSE"): "COMPARE_LOCAL_CONST_JUMP_IF_FALSE",
    ("FOR_ITER", "STORE_LOCAL"): "FOR_ITER_STORE",
}
FUSIONS: dict[tuple[int, int], int] = {(CODE[a], CODE[b]): CODE[fused] for (a, b), fused in FUSIONS_BY_NAME.items()}

# Parts that can fail with an operator error: a fused instruction takes the source span of such a part.
_OPERATOR_FIELDS = {"binop", "compare"}


def fused_fields(first: str, second: str) -> tuple[str, ...]:
    """The operand fields of the fusion of opcodes `first` and `second`: both parts' fields, jump target last."""
    fields = [f for f in (*BY_NAME[first].fields, *BY_NAME[second].fields) if f != "none"]
    return tuple(sorted(fields, key=lambda f: f == "jump"))  # a stable sort: only the jump moves


def fuse(first_op: int, first_arg: Any, second_op: int, second_arg: Any) -> tuple[int, Any] | None:
    """The superinstruction (opcode, argument) doing `first` then `second`, or None if the pair has none."""
    fused = FUSIONS.get((first_op, second_op))
    if fused is None:
        return None
    pairs = []  # (field kind, item) of both parts in order
    for op, arg in ((first_op, first_arg), (second_op, second_arg)):
        fields = OPCODES[op].fields
        if fields != ("none",):
            pairs.extend(zip(fields, arg if len(fields) > 1 else [arg]))
    pairs.sort(key=lambda pair: pair[0] == "jump")  # a stable sort: only a jump target moves, to the end
    return fused, [item for _, item in pairs]

def keeps_second_span(second_op: int) -> bool:
    """Whether the fused instruction takes the second part's span (it holds the operator that can fail)."""
    return bool(_OPERATOR_FIELDS & set(OPCODES[second_op].fields))


# Instructions whose jump is a transfer of control (not a handler's or a branch's address), and so may go
# straight to where a JUMP at their target would take them.
_THREADED = {CODE[name] for name in ("JUMP", "JUMP_IF_FALSE", "JUMP_IF_FALSE_OR_POP", "JUMP_IF_TRUE_OR_POP",
                                     "COMPARE_JUMP_IF_FALSE", "COMPARE_LOCALS_JUMP_IF_FALSE",
                                     "COMPARE_CONST_JUMP_IF_FALSE", "COMPARE_LOCAL_CONST_JUMP_IF_FALSE",
                                     "FOR_ITER", "FOR_ITER_STORE")}


def thread_jumps(ops: list[int], args: list[Any]) -> None:
    """Once every jump target is known: a jump to a JUMP goes where that JUMP goes, and a JUMP to a STMT or a
    FOR_ITER_STORE runs that instruction itself (one dispatch instead of two for each turn of a loop)."""
    jump = CODE["JUMP"]
    takes_along = {CODE["STMT"]: CODE["JUMP_STMT"], CODE["FOR_ITER_STORE"]: CODE["JUMP_FOR_ITER_STORE"]}

    def final(target: int) -> int:
        seen = set()
        while ops[target] == jump and target not in seen:
            seen.add(target)
            target = args[target]
        return target

    for pc, op in enumerate(ops):
        if op in _THREADED:
            if isinstance(args[pc], list):
                args[pc][-1] = final(args[pc][-1])
            else:
                args[pc] = final(args[pc])
    for pc, op in enumerate(ops):
        if op == jump and ops[args[pc]] in takes_along:
            ops[pc] = takes_along[ops[args[pc]]]
