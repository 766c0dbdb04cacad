"""Arithmetic assignment statements of a code object in, one Python function per statement out, for the STMT before it.

A statement such as `total = total + i * 2 % 7` is four or five instructions after its STMT, each a turn of the
dispatch loop. When a code object is prepared (vm/dispatch.py), the STMT of such a statement becomes a
STMT_ASSIGN: it does what STMT does (count the step, stop there when asked), then stores the value of one
generated function of the frame's locals and goes on after the statement. The statement's own instructions stay
in place behind it. They run instead when the function raises (an unbound local, a division by zero, an operand
of the wrong type): evaluated again they raise the error with its operands and its place, and the expression is
pure (locals, constants, arithmetic), so evaluating part of it twice changes nothing. A jump to the statement
(JUMP_STMT does the STMT's work and goes on after it) runs them too.
"""

from __future__ import annotations

from typing import Any, Callable

from orgtree_lang.compile.code import CodeObject
from orgtree_lang.compile.opcodes import OPCODES
from orgtree_lang.runtime.values import UNBOUND

# A statement's instructions that push a value (the expression) and the ones that store the value and end it.
_EXPRESSION = frozenset({"LOAD_LOCAL", "LOAD_CONST", "LOAD_LOCAL2", "BINARY", "BINARY_CONST", "BINARY_LOCAL_CONST",
                         "BINARY_LOCALS"})
_STORES = frozenset({"STORE_LOCAL", "BINARY_STORE", "BINARY_CONST_STORE", "BINARY_LOCALS_STORE",
                     "BINARY_LOCAL_CONST_STORE"})


def assignments(code: CodeObject, binary: dict[str, Callable]) -> dict[int, tuple[Callable, int, int]]:
    """For each STMT whose statement is `local = arithmetic`: (function of the locals, the local it sets, the pc
    after the statement), by the STMT's pc."""
    names = [OPCODES[op].name for op in code.ops]
    targets = _jump_targets(code)
    found = {}
    for pc, name in enumerate(names):
        if name != "STMT":
            continue
        end = pc + 1
        while end < len(names) and names[end] in _EXPRESSION:
            end += 1
        # Whatever follows the store runs next either way: the instructions up to it leave the stack as it was.
        if end >= len(names) or names[end] not in _STORES:
            continue
        if any(pc < target <= end for target in targets):  # something jumps into the statement
            continue
        made = _function(code, range(pc + 1, end + 1), names, binary)
        if made is not None:
            found[pc] = (*made, end + 1)
    return found


def _jump_targets(code: CodeObject) -> set[int]:
    return {OPCODES[op].jump_target(arg) for op, arg in zip(code.ops, code.args) if OPCODES[op].jump_effect is not None}


def _function(code: CodeObject, pcs: range, names: list[str], binary: dict[str, Callable]) -> tuple[Callable, int] | None:
    """The statement's expression as one function of the locals, and the local it stores into (None if the
    instructions are not one expression and one store)."""
    scope: dict[str, Any] = {"U": UNBOUND}
    reads: dict[int, str] = {}  # local index -> the name the function reads it into
    stack: list[str] = []

    def local(index: int) -> str:
        return reads.setdefault(index, f"l{index}")

    def const(index: int) -> str:
        scope[f"c{index}"] = code.consts[index]
        return f"c{index}"

    def apply(operator: str, left: str, right: str) -> str:
        name = f"f{sum(key.startswith('f') for key in scope)}"
        scope[name] = binary[operator]
        return f"{name}({left}, {right})"

    target = None
    for pc in pcs:
        name, arg = names[pc], code.args[pc]
        if name == "LOAD_LOCAL":
            stack.append(local(arg))
        elif name == "LOAD_CONST":
            stack.append(const(arg))
        elif name == "LOAD_LOCAL2":
            stack += [local(arg[0]), local(arg[1])]
        elif name in ("BINARY", "BINARY_STORE"):
            if len(stack) < 2:
                return None
            right, left = stack.pop(), stack.pop()
            stack.append(apply(arg if name == "BINARY" else arg[0], left, right))
            target = arg[1] if name == "BINARY_STORE" else None
        elif name in ("BINARY_CONST", "BINARY_CONST_STORE"):
            if not stack:
                return None
            stack.append(apply(arg[1], stack.pop(), const(arg[0])))
            target = arg[2] if name == "BINARY_CONST_STORE" else None
        elif name in ("BINARY_LOCAL_CONST", "BINARY_LOCAL_CONST_STORE"):
            stack.append(apply(arg[2], local(arg[0]), const(arg[1])))
            target = arg[3] if name == "BINARY_LOCAL_CONST_STORE" else None
        elif name in ("BINARY_LOCALS", "BINARY_LOCALS_STORE"):
            stack.append(apply(arg[2], local(arg[0]), local(arg[1])))
            target = arg[3] if name == "BINARY_LOCALS_STORE" else None
        elif name == "STORE_LOCAL":
            target = arg
        else:
            return None
    if len(stack) != 1 or target is None:
        return None
    loads = "".join(f"    {alias} = l[{index}]\n" for index, alias in reads.items())
    check = f"    if {' or '.join(f'{alias} is U' for alias in reads.values())}:\n        raise NameError\n" if reads \
        else ""
    source = f"def assign(l):\n{loads}{check}    return {stack[0]}\n"
    exec(compile(source, f"<{code.name}: assignment>", "exec"), scope)  # generated from the bytecode alone
    return scope["assign"], target
