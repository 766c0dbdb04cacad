"""Runtime errors in the VM: Python exceptions turned into located .pipe errors, and unwinding to a try block."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from orgtree_lang.syntax import types as t
from orgtree_lang.compile.code import CodeObject
from orgtree_lang.compile.opcodes import OPCODES
from orgtree_lang.runtime.builtins import error_value
from orgtree_lang.runtime.errors import PipeRuntimeError, StackEntry
from orgtree_lang.runtime.values import UNBOUND
from orgtree_lang.vm import events

if TYPE_CHECKING:
    from orgtree_lang.vm.machine import Machine


def unbound_error(code: CodeObject, slot: int) -> PipeRuntimeError:
    """Reading local `slot` before anything was assigned to it."""
    return PipeRuntimeError(f"variable `{code.varnames[slot]}` is used before it is assigned", kind="name",
                            hint="assign it on every path before this line")


def translate(exc: Exception, code: CodeObject, pc: int, stack: list, left: Any, right: Any) -> PipeRuntimeError:
    """Turn a Python exception raised by an instruction into a .pipe error at that instruction. An operator's
    instruction (BINARY, COMPARE and their superinstructions) leaves its operands in `left` and `right`."""
    opcode = OPCODES[code.ops[pc]]
    fields = opcode.fields
    operator = next((i for i, kind in enumerate(fields) if kind in ("binop", "compare")), None)
    if operator is not None:
        arg = code.args[pc] if len(fields) > 1 else [code.args[pc]]
        # The locals an operator reads come before it, left operand first.
        slots = [arg[i] for i in range(operator) if fields[i] == "local"]
        for slot, value in zip(slots, (left, right)):
            if value is UNBOUND:
                err = unbound_error(code, slot)
                err.span = code.span_at(pc)
                return err
    if isinstance(exc, ZeroDivisionError):
        message = "division by zero"
    elif isinstance(exc, TypeError) and operator is not None:
        message = f"cannot apply `{arg[operator]}` to {t.type_of_value(left)} and {t.type_of_value(right)}"
    elif isinstance(exc, TypeError) and opcode.name == "UNARY" and stack:
        message = f"cannot apply unary `{code.args[pc]}` to {t.type_of_value(stack[-1])}"
    elif isinstance(exc, RecursionError):
        message = "value nested too deeply"
    elif isinstance(exc, MemoryError):
        message = "out of memory"
    elif isinstance(exc, OverflowError):
        message = _overflow_message(str(exc))
    elif isinstance(exc, (TypeError, ValueError)):
        message = _python_types_to_pipe(str(exc))
    else:
        raise exc
    kind = "arithmetic" if isinstance(exc, (ZeroDivisionError, OverflowError)) else "type"
    err = PipeRuntimeError(message, kind=kind, span=code.span_at(pc))
    err.__cause__ = exc
    return err


def handle_error(m: Machine, err: PipeRuntimeError) -> None:
    """Locate the error, record the .pipe call stack, and jump to the innermost handler or re-raise."""
    state = m.state
    if err.span is None:
        top = state.frames[-1]
        err.span = top.code.span_at(max(top.pc - 1, 0))
    if not err.stack:
        err.stack = list(err.frames_below) + [StackEntry(f.code.span_at(max(f.pc - 1, 0)), f.pipeline)
                                              for f in reversed(state.frames)]
    if events.ErrorRaised in m.observer.hears:
        m.observer.on(events.ErrorRaised(state=state, error=err,
                                         caught=err.catchable and any((f.handlers for f in state.frames))))
    if not err.catchable:
        raise err
    # Find the innermost open try; if there is none, the frames stay as they are (for resume and reports).
    for index in range(len(state.frames) - 1, -1, -1):
        if state.frames[index].handlers:
            break
    else:
        raise err
    for unwound in state.frames[index + 1:]:
        if events.FrameUnwound in m.observer.hears:
            m.observer.on(events.FrameUnwound(state=state, frame=unwound, error=err))
    del state.frames[index + 1:]
    frame = state.frames[index]
    handler_pc, depth = frame.handlers.pop()
    del frame.stack[depth:]
    frame.stack.append(error_value(err))
    frame.pc = handler_pc


def _overflow_message(message: str) -> str:
    """Python's overflow messages, without the C-level wording some of them use."""
    if message.startswith("(34,"):  # errno ERANGE from float arithmetic, e.g. 2.0 ** 10000
        return "number too large for a float"
    if "C ssize_t" in message or "index-sized" in message:  # e.g. range(10 ** 30)
        return "int too large to use as a size or an index"
    return message


def _python_types_to_pipe(message: str) -> str:
    for py, pipe in (("'str'", "str"), ("'int'", "int"), ("'float'", "float"), ("'list'", "list"),
                     ("'dict'", "dict"), ("'bool'", "bool"), ("'NoneType'", "none"), ("'RecordValue'", "record")):
        message = message.replace(py, pipe)
    return message
