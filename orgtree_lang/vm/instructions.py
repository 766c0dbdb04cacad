"""The handler of every instruction the dispatch loop does not inline, and the operator functions arithmetic applies."""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, Callable

from orgtree_lang.runtime.artifacts import BytesValue
from orgtree_lang.runtime.builtins import MAX_SEQUENCE, range_of
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.values import RecordValue, display, is_kind, strict_contains, strict_equal
from orgtree_lang.syntax import types as t
from orgtree_lang.vm.blocks import resolve_block
from orgtree_lang.vm.calls import call_args, call_skill
from orgtree_lang.vm.checks import op_check
from orgtree_lang.vm.memory import check_value
from orgtree_lang.vm.organization import ORG_OPCODES

if TYPE_CHECKING:
    from orgtree_lang.vm.machine import Machine

# Each handler takes (machine, frame, stack, arg) and returns a new pc to jump to, None, or one of RELOAD, WAIT
# and MOVED (vm/organization.py).


def _power(a, b):
    if isinstance(a, int) and isinstance(b, int) and abs(b) > 10_000 and abs(a) > 1:
        raise PipeRuntimeError(f"{display(a)} ** {display(b)} is too large to compute", kind="type")
    result = a**b
    if isinstance(result, complex):  # a negative base to a fractional power; .pipe has no complex numbers
        base = f"({display(a)})" if a < 0 else display(a)
        raise PipeRuntimeError(f"{base} ** {display(b)} is not a real number", kind="type")
    return result


def _repeat(a, b):
    if type(a) is int and type(b) is int:  # the common case first: a number cannot outgrow the limit
        return a * b
    if isinstance(a, (str, list)) and isinstance(b, int) and len(a) * b > MAX_SEQUENCE:
        times = f"{b}" if b < 10**18 else "that many"  # a huge count has too many digits to print
        raise PipeRuntimeError(f"repeating a {type(a).__name__} {times} times exceeds the limit of "
                               f"{MAX_SEQUENCE} items", kind="type")
    if isinstance(b, (str, list)) and isinstance(a, int) and len(b) * a > MAX_SEQUENCE:
        return _repeat(b, a)
    return a * b


def _not_in(a, b):
    return not strict_contains(b, a)


BINARY_FUNCS: dict[str, Callable] = {
    "+": operator.add, "-": operator.sub, "*": _repeat, "/": operator.truediv, "//": operator.floordiv,
    "%": operator.mod, "**": _power,
}
COMPARE_FUNCS: dict[str, Callable] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": strict_equal,
    "!=": lambda a, b: not strict_equal(a, b), "in": lambda a, b: strict_contains(b, a), "not in": _not_in,
    "is": is_kind, "is not": lambda value, tag: not is_kind(value, tag),
}
UNARY_FUNCS: dict[str, Callable] = {"-": operator.neg, "+": operator.pos, "not": operator.not_}


def _op_dup(m: Machine, frame, stack, arg):
    stack.append(stack[-1])


def _op_rot2(m: Machine, frame, stack, arg):
    stack[-1], stack[-2] = stack[-2], stack[-1]


def _op_rot3(m: Machine, frame, stack, arg):
    stack[-3], stack[-2], stack[-1] = stack[-1], stack[-3], stack[-2]


def _op_unary(m: Machine, frame, stack, arg):
    stack[-1] = arg(stack[-1])


def _op_jump_if_false_or_pop(m: Machine, frame, stack, arg):
    if not stack[-1]:
        return arg
    stack.pop()
    return None


def _op_jump_if_true_or_pop(m: Machine, frame, stack, arg):
    if stack[-1]:
        return arg
    stack.pop()
    return None


def _op_build_list(m: Machine, frame, stack, arg):
    items = stack[len(stack) - arg:] if arg else []
    if arg:
        del stack[-arg:]
    stack.append(items)


def _op_build_dict(m: Machine, frame, stack, arg):
    flat = stack[len(stack) - 2 * arg:] if arg else []
    if arg:
        del stack[-2 * arg:]
    result = {}
    for key, value in zip(flat[0::2], flat[1::2]):
        if not isinstance(key, str):
            raise PipeRuntimeError(f"dict keys must be str, got {t.type_of_value(key)} {display(key, True)}",
                                   kind="type", hint="convert the key with str(...)")
        result[key] = value
    stack.append(result)


def _op_build_string(m: Machine, frame, stack, arg):
    parts = stack[len(stack) - arg:]
    del stack[-arg:]
    text = "".join(parts)
    if m.budget.max_memory is not None:
        check_value(text, m.budget.max_memory, "an f-string")
    stack.append(text)


def _op_format(m: Machine, frame, stack, arg):
    spec = frame.code.consts[arg]
    value = stack[-1]
    if not spec:
        stack[-1] = display(value)
        return
    shown = value
    if value is None or isinstance(value, (bool, list, dict, RecordValue)):
        shown = display(value)  # format specs apply to the text .pipe shows, not Python's view of it
    try:
        stack[-1] = format(shown, spec)
    except (ValueError, TypeError):
        raise PipeRuntimeError(f"cannot format {t.a(t.type_of_value(value))} with `:{spec}`", kind="type",
                               hint="number specs like `.2f` need an int or float; `>10` and `<10` work on anything"
                               ) from None


def _op_index(m: Machine, frame, stack, arg):
    key = stack.pop()
    container = stack[-1]
    if isinstance(container, dict):
        if key not in container:
            raise _missing_key(container, key)
        stack[-1] = container[key]
        return
    if isinstance(container, (list, str)):
        if not isinstance(key, int):
            raise PipeRuntimeError(f"{t.a(t.type_of_value(container).kind)} index must be an int, got "
                                   f"{t.type_of_value(key)}", kind="type")
        if not -len(container) <= key < len(container):
            what = "list" if isinstance(container, list) else "str"
            raise PipeRuntimeError(f"index {display(key)} is out of range for a {what} of length {len(container)}",
                                   kind="index")
        stack[-1] = container[key]
        return
    raise PipeRuntimeError(f"cannot index {t.a(t.type_of_value(container))}", kind="type")


def _missing_key(container: dict, key) -> PipeRuntimeError:
    from orgtree_lang.syntax.diagnostics import did_you_mean

    keys = [k for k in container if isinstance(k, str)]
    hint = did_you_mean(str(key), keys) if isinstance(key, str) else None
    return PipeRuntimeError(f"key {display(key, True)} is not in the dict", kind="key",
                            hint=hint or "use dicts.get(d, key, default) when a key may be missing")


def _op_slice(m: Machine, frame, stack, arg):
    step = stack.pop()
    upper = stack.pop()
    lower = stack.pop()
    value = stack[-1]
    if not isinstance(value, (list, str)):
        raise PipeRuntimeError(f"cannot slice {t.a(t.type_of_value(value))}", kind="type")
    if step == 0:
        raise PipeRuntimeError("slice step cannot be zero", kind="type")
    stack[-1] = value[lower:upper:step]


def _op_get_attr(m: Machine, frame, stack, arg):
    value = stack[-1]
    if isinstance(value, RecordValue):
        if arg not in value.fields:
            raise PipeRuntimeError(f"record {value.record_name} has no field `{arg}`", kind="key")
        stack[-1] = value.fields[arg]
    elif isinstance(value, dict):
        if arg not in value:
            raise _missing_key(value, arg)
        stack[-1] = value[arg]
    elif isinstance(value, BytesValue):
        if arg not in t.BYTES_FIELDS:
            raise PipeRuntimeError(f"a bytes value has no field `{arg}`", kind="type",
                                   hint=f"its fields are: {', '.join(t.BYTES_FIELDS)}")
        stack[-1] = value.field(arg)
    else:
        raise PipeRuntimeError(f"{t.a(t.type_of_value(value))} has no field `{arg}`", kind="type")


def _op_unpack(m: Machine, frame, stack, arg):
    value = stack.pop()
    if not isinstance(value, list):
        raise PipeRuntimeError(f"cannot unpack {t.a(t.type_of_value(value))} into {arg} names", kind="type",
                               hint="the value must be a list")
    if len(value) != arg:
        raise PipeRuntimeError(f"cannot unpack a list of {len(value)} item{'' if len(value) == 1 else 's'} into {arg} names", kind="type")
    stack.extend(reversed(value))


def _op_get_iter(m: Machine, frame, stack, arg):
    value = stack[-1]
    if isinstance(value, list):
        pass
    elif isinstance(value, (str, dict)):
        stack[-1] = list(value)
    else:
        raise PipeRuntimeError(f"cannot loop over {t.a(t.type_of_value(value))}", kind="type",
                               hint="`for` needs a list, str or dict")
    stack.append(0)


def _op_get_range_iter(m: Machine, frame, stack, arg):
    bounds = stack[-arg:]
    del stack[-arg:]
    stack.append(range_of(bounds))
    stack.append(0)


def _op_make_record(m: Machine, frame, stack, arg):
    site = frame.code.calls[arg]
    args, kwargs = call_args(site, stack)
    stack.append(m.records.build(site.name, args, kwargs))


def _op_setup_try(m: Machine, frame, stack, arg):
    frame.handlers.append([arg, len(stack)])


def _op_pop_try(m: Machine, frame, stack, arg):
    frame.handlers.pop()


def _op_fail(m: Machine, frame, stack, arg):
    raise PipeRuntimeError(display(stack.pop()), kind="fail")


def _delegate(name: str) -> Callable:
    """The machine's entry for org opcode `name`: it runs in the machine's Org (org/), or fails saying what is missing."""

    def org_opcode(m: Machine, frame, stack: list, arg: Any) -> int | None:
        return m.org.execute(name, frame, stack, arg)

    org_opcode.__name__ = f"_op_{name.lower()}"
    return org_opcode


# By opcode name; the dispatch loop (vm/machine.py) runs the opcodes in its INLINE set itself.
HANDLERS: dict[str, Callable] = {
    "DUP": _op_dup, "ROT2": _op_rot2, "ROT3": _op_rot3, "UNARY": _op_unary,
    "JUMP_IF_FALSE_OR_POP": _op_jump_if_false_or_pop, "JUMP_IF_TRUE_OR_POP": _op_jump_if_true_or_pop,
    "BUILD_LIST": _op_build_list, "BUILD_DICT": _op_build_dict, "BUILD_STRING": _op_build_string,
    "FORMAT": _op_format, "INDEX": _op_index, "SLICE": _op_slice, "GET_ATTR": _op_get_attr, "UNPACK": _op_unpack,
    "GET_ITER": _op_get_iter, "GET_RANGE_ITER": _op_get_range_iter, "CALL_SKILL": call_skill, "MAKE_RECORD": _op_make_record,
    "AMBIGUOUS": resolve_block, "SETUP_TRY": _op_setup_try, "POP_TRY": _op_pop_try, "FAIL": _op_fail,
    "CHECK": op_check,
    **{name: _delegate(name) for name in ORG_OPCODES},
}
