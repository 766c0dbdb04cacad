"""The dispatch loop: runs the current frame's prepared instructions (vm/dispatch.py) until the run ends or stops.

One flat loop over integer loop codes, the hot instructions inline, the others through their handler. It leaves its
fast path only at the step count the machine's `next_stop` gives (a budget, a pause, an observer, the end of a
task's turn), where `at_stop` decides; with tasks, the organization picks which task's frame it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.runtime.values import UNBOUND
from orgtree_lang.vm import calls
from orgtree_lang.vm.dispatch import HANDLED, HANDLERS_BY_LOOP_CODE, LOCALS, LOOP_CODE, OTHER
from orgtree_lang.vm.errors import handle_error, translate, unbound_error as _unbound
from orgtree_lang.vm.organization import MOVED, RELOAD

if TYPE_CHECKING:
    from orgtree_lang.vm.machine import Machine

SWITCH = object()  # Machine.at_stop: the current task's turn is over and another task is current now


def dispatch(m: Machine) -> None:  # noqa: C901 - one flat loop is the fast shape for a dispatch loop
    """Run `m`'s current task until the run ends, stops or pauses (an error no try block catches is raised)."""
    state = m.state
    right = None  # the operands of the last operator, for error messages (vm/errors.translate)
    left = None
    unbound = UNBOUND
    # The loop's own instruction codes (vm/dispatch.py), bound to locals once so the loop compares plain ints.
    c = LOOP_CODE
    JUMP_STMT, JUMP_FOR_ITER_STORE, FOR_ITER_STORE = c["JUMP_STMT"], c["JUMP_FOR_ITER_STORE"], c["FOR_ITER_STORE"]
    STMT_ASSIGN = c["STMT_ASSIGN"]
    COMPARE_LOCALS_JUMP_IF_FALSE, COMPARE_LOCAL_CONST_JUMP_IF_FALSE = (
        c["COMPARE_LOCALS_JUMP_IF_FALSE"], c["COMPARE_LOCAL_CONST_JUMP_IF_FALSE"])
    COMPARE_CONST_JUMP_IF_FALSE, COMPARE_JUMP_IF_FALSE = c["COMPARE_CONST_JUMP_IF_FALSE"], c["COMPARE_JUMP_IF_FALSE"]
    BINARY_LOCAL_CONST_STORE, LOAD_LOCAL2, BINARY_CONST, BINARY_STORE = (
        c["BINARY_LOCAL_CONST_STORE"], c["LOAD_LOCAL2"], c["BINARY_CONST"], c["BINARY_STORE"])
    LOAD_LOCAL, LOAD_CONST, STORE_LOCAL, BINARY_LOCALS_STORE = (
        c["LOAD_LOCAL"], c["LOAD_CONST"], c["STORE_LOCAL"], c["BINARY_LOCALS_STORE"])
    BINARY_LOCAL_CONST, BINARY_LOCALS, BINARY_CONST_STORE, BINARY, COMPARE = (
        c["BINARY_LOCAL_CONST"], c["BINARY_LOCALS"], c["BINARY_CONST_STORE"], c["BINARY"], c["COMPARE"])
    JUMP_IF_FALSE, JUMP, POP, FOR_ITER, CALL_BUILTIN = (
        c["JUMP_IF_FALSE"], c["JUMP"], c["POP"], c["FOR_ITER"], c["CALL_BUILTIN"])
    CALL_PIPELINE, RETURN = c["CALL_PIPELINE"], c["RETURN"]
    handlers = HANDLERS_BY_LOOP_CODE
    call_builtin = calls.call_builtin
    prepared = m.prepared
    org = m.org
    while True:
        if state.tasks:  # the organization may make another task current, or the run may be over
            try:
                if org.pick():
                    return
            except PipeRuntimeError as err:
                handle_error(m, err)
                continue
        steps = state.steps
        stop_at = m.next_stop(steps)
        moved = False  # the loop must start over: another task, a budget or turn to recompute, an error handled
        while not moved:  # a frame: a call or a return only loads the next one, where the loop stops stays the same
            frame = state.frames[-1]
            code = frame.code
            instructions, consts = prepared.get(code) or m.prepare(code), code.consts
            stack, locals_, pc = frame.stack, frame.locals, frame.pc
            push, pop = stack.append, stack.pop
            try:
                while True:
                    op, arg = instructions[pc]
                    pc += 1
                    if op < LOCALS:  # statement boundaries, loops, compare-and-jump
                        if op <= STMT_ASSIGN:  # STMT (0), JUMP_STMT (1): a JUMP and the STMT at its target in
                            # one, or STMT_ASSIGN (2): a STMT and its arithmetic assignment in one (vm/assignments.py)
                            if op == JUMP_STMT:
                                pc = arg + 1
                            if steps >= stop_at:
                                frame.pc = pc - 1  # a stop leaves the frame at the STMT
                                state.steps = steps
                                stop = m.at_stop(frame)
                                if stop:
                                    if stop is SWITCH:
                                        moved = True
                                        break
                                    return
                                stop_at = m.next_stop(steps)
                            steps += 1
                            if op == STMT_ASSIGN:
                                try:
                                    locals_[arg[1]] = arg[0](locals_)
                                    pc = arg[2]
                                except Exception:  # noqa: S110 - the statement's own instructions follow: they
                                    pass  # raise the error, naming its operands and place
                        elif op == COMPARE_LOCALS_JUMP_IF_FALSE:
                            left, right = locals_[arg[0]], locals_[arg[1]]
                            if left is unbound or right is unbound:
                                raise _unbound(code, arg[0] if left is unbound else arg[1])
                            if not arg[2](left, right):
                                pc = arg[3]
                        elif op == COMPARE_LOCAL_CONST_JUMP_IF_FALSE:
                            left = locals_[arg[0]]
                            if left is unbound:
                                raise _unbound(code, arg[0])
                            right = arg[1]
                            if not arg[2](left, right):
                                pc = arg[3]
                        elif op == COMPARE_CONST_JUMP_IF_FALSE:
                            left = pop()
                            right = arg[0]
                            if not arg[1](left, right):
                                pc = arg[2]
                        elif op == JUMP_FOR_ITER_STORE:
                            # JUMP and the FOR_ITER_STORE at its target in one.
                            items, i = stack[-2], stack[-1]
                            if i < len(items):
                                stack[-1] = i + 1
                                locals_[instructions[arg][1][0]] = items[i]
                                pc = arg + 1
                            else:
                                del stack[-2:]
                                pc = instructions[arg][1][1]
                        elif op == FOR_ITER_STORE:
                            items, i = stack[-2], stack[-1]
                            if i < len(items):
                                stack[-1] = i + 1
                                locals_[arg[0]] = items[i]
                            else:
                                del stack[-2:]
                                pc = arg[1]
                        elif op == COMPARE_JUMP_IF_FALSE:
                            right = pop()
                            left = pop()
                            if not arg[0](left, right):
                                pc = arg[1]
                        else:
                            raise AssertionError(f"loop code {op} is not in dispatch.FLOW")
                    elif op < OTHER:  # locals, constants, arithmetic into a local
                        if op == BINARY_LOCAL_CONST_STORE:
                            # An unbound local makes every operator raise TypeError: translate names the local.
                            left = locals_[arg[0]]
                            right = arg[1]
                            locals_[arg[3]] = arg[2](left, right)
                        elif op == LOAD_LOCAL2:
                            left, right = locals_[arg[0]], locals_[arg[1]]
                            if left is unbound or right is unbound:
                                raise _unbound(code, arg[0] if left is unbound else arg[1])
                            push(left)
                            push(right)
                        elif op == BINARY_CONST:
                            left = stack[-1]
                            right = arg[0]
                            stack[-1] = arg[1](left, right)
                        elif op == BINARY_STORE:
                            right = pop()
                            left = pop()
                            locals_[arg[1]] = arg[0](left, right)
                        elif op == LOAD_LOCAL:
                            value = locals_[arg]
                            if value is unbound:
                                raise _unbound(code, arg)
                            push(value)
                        elif op == LOAD_CONST:
                            push(consts[arg])
                        elif op == STORE_LOCAL:
                            locals_[arg] = pop()
                        elif op == BINARY_LOCALS_STORE:
                            left, right = locals_[arg[0]], locals_[arg[1]]
                            if left is unbound or right is unbound:
                                raise _unbound(code, arg[0] if left is unbound else arg[1])
                            locals_[arg[3]] = arg[2](left, right)
                        else:
                            raise AssertionError(f"loop code {op} is not in dispatch.LOCALS_GROUP")
                    elif op < HANDLED:
                        if op == BINARY_LOCAL_CONST:
                            left = locals_[arg[0]]
                            right = arg[1]
                            push(arg[2](left, right))
                        elif op == BINARY_LOCALS:
                            left, right = locals_[arg[0]], locals_[arg[1]]
                            if left is unbound or right is unbound:
                                raise _unbound(code, arg[0] if left is unbound else arg[1])
                            push(arg[2](left, right))
                        elif op == BINARY_CONST_STORE:
                            left = pop()
                            right = arg[0]
                            locals_[arg[2]] = arg[1](left, right)
                        elif op == BINARY or op == COMPARE:
                            right = pop()
                            left = stack[-1]
                            stack[-1] = arg(left, right)
                        elif op == JUMP_IF_FALSE:
                            if not pop():
                                pc = arg
                        elif op == JUMP:
                            pc = arg
                        elif op == POP:
                            pop()
                        elif op == FOR_ITER:
                            items, i = stack[-2], stack[-1]
                            if i < len(items):
                                stack[-1] = i + 1
                                push(items[i])
                            else:
                                del stack[-2:]
                                pc = arg
                        elif op == CALL_BUILTIN:
                            call_builtin(m, code.calls[arg], stack)
                        elif op == CALL_PIPELINE or op == RETURN:
                            frame.pc = pc
                            state.steps = steps
                            if op == RETURN:
                                if calls.return_from(m, frame, stack.pop()):
                                    return
                            else:
                                calls.call_pipeline(m, code.calls[arg], stack)
                            if state.tasks:  # the organization may pick another task
                                moved = True
                            break
                        else:
                            raise AssertionError(f"loop code {op} is not in dispatch.OTHERS")
                    else:
                        # The handled instructions may read the run state (a skill's node, a block's step).
                        frame.pc = pc
                        state.steps = steps
                        new_pc = handlers[op](m, frame, stack, arg)
                        if new_pc is not None:
                            if new_pc < 0:  # RELOAD, WAIT (run this instruction again) or MOVED (frame.pc set)
                                if new_pc != MOVED:
                                    frame.pc = pc if new_pc == RELOAD else pc - 1
                                moved = True
                                break
                            pc = new_pc
            except Exception as exc:  # a Python error inside an instruction becomes a located .pipe error
                frame.pc = pc
                state.steps = steps
                moved = True
                handle_error(m, exc if isinstance(exc, PipeRuntimeError) else
                             translate(exc, code, pc - 1, stack, left, right))
