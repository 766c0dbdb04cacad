"""Render a Program's bytecode as readable text: one line per instruction with its source line and meaning."""

from __future__ import annotations

from orgtree_lang.compile.code import CodeObject, Program
from orgtree_lang.compile.opcodes import OPCODES
from orgtree_lang.runtime.values import display


_NAME_WIDTH = max(len(op.name) for op in OPCODES) + 1


def disassemble(program: Program) -> str:
    parts = []
    for name, record in program.records.items():
        fields = ", ".join(f"{f}: {ft}" for f, ft in record.fields)
        parts.append(f"record {name}({fields})")
    for code in (*program.pipelines.values(), *program.tests.values()):
        parts.append(disassemble_code(code))
    return "\n\n".join(parts) + "\n"


def disassemble_code(code: CodeObject) -> str:
    params = ", ".join(f"{p.name}: {p.type}" + (f" = {display(p.default, True)}" if p.has_default else "")
                       for p in code.params)
    lines = [f"pipeline {code.name}({params}) -> {code.returns}   "
             f"[{len(code.ops)} instructions, {len(code.varnames)} locals, max stack {code.max_stack}]"]
    targets = {OPCODES[op].jump_target(arg) for op, arg in zip(code.ops, code.args)
               if OPCODES[op].jump_effect is not None and OPCODES[op].name != "SETUP_TRY"}
    targets |= {arg for op, arg in zip(code.ops, code.args) if OPCODES[op].name == "SETUP_TRY"}
    targets |= {start for op, arg in zip(code.ops, code.args) if OPCODES[op].operand == "branches" for start, _ in arg}
    targets |= {arg for op, arg in zip(code.ops, code.args) if OPCODES[op].operand == "branch"}
    last_line = None
    for pc, (op, arg) in enumerate(zip(code.ops, code.args)):
        opcode = OPCODES[op]
        line = code.span_at(pc).line
        line_text = f"{line:>5}" if line != last_line else "     "
        last_line = line
        marker = ">>" if pc in targets else "  "
        arg_text = "" if arg is None or opcode.operand == "branches" else \
            " ".join(str(a) for a in arg) if isinstance(arg, list) else str(arg)
        arg_text = f"{arg_text:<6}" if len(arg_text) < 6 else arg_text + " "
        lines.append(f"{line_text} {marker} {pc:>4} {opcode.name:<{_NAME_WIDTH}}{arg_text}{_explain(code, opcode, arg)}".rstrip())
    return "\n".join(lines)


def _explain(code: CodeObject, opcode, arg) -> str:
    if len(opcode.fields) > 1:
        return _fused(code, opcode.fields, arg)
    kind = opcode.operand
    if kind == "const" and arg is not None:
        return f"({display(code.consts[arg], True)})"
    if kind == "local":
        return f"({code.varnames[arg]})"
    if kind == "jump":
        return f"(to {arg})"
    if kind == "call":
        site = code.calls[arg]
        kw = f", keywords {', '.join(site.kwnames)}" if site.kwnames else ""
        return f"({site.kind} {site.name}, {site.nargs} positional{kw})"
    if kind == "branch":
        return f"(body at {arg})"
    if kind == "branches":
        return "(" + "; ".join(f"branch at {start}" + (f" -> {', '.join(code.varnames[i] for i in slots)}" if slots
                                                      else "") for start, slots in arg) + ")"
    if kind == "ambiguous":
        spec = code.ambiguous[arg]
        return f"({spec.name}: {', '.join(n for n, _ in spec.inputs)} -> {', '.join(n for n, _ in spec.outputs)})"
    if kind == "check":
        check = code.checks[arg]
        return f"({check.kind} {check.text})"
    return ""


def _fused(code: CodeObject, fields: tuple[str, ...], arg: list) -> str:
    """A superinstruction's argument as the operation it does: `i < n, else to 16`, `i + 1 -> i`."""
    operator = next((i for i, kind in enumerate(fields) if kind in ("binop", "compare")), None)
    if operator is None:
        if fields == ("local", "jump"):
            return f"({code.varnames[arg[0]]}, done: to {arg[1]})"
        return "(" + ", ".join(_field(code, kind, item) for kind, item in zip(fields, arg)) + ")"
    operands = [_field(code, kind, item) for kind, item in zip(fields[:operator], arg)]
    symbol = arg[operator]
    # With one operand, the left one is the top of the stack.
    text = f"{operands[0]} {symbol} {operands[1]}" if len(operands) == 2 else " ".join([symbol, *operands])
    for kind, item in zip(fields[operator + 1:], arg[operator + 1:]):
        if kind == "local":
            text += f" -> {code.varnames[item]}"
        else:
            text += f", else to {item}" if fields[operator] == "compare" else f", to {item}"
    return f"({text})"

def _field(code: CodeObject, kind: str, item) -> str:
    """One field of a superinstruction's argument, as text: a local's name, a constant, an operator, a target."""
    if kind == "local":
        return code.varnames[item]
    if kind == "const":
        return display(code.consts[item], True)
    if kind == "jump":
        return f"to {item}"
    return str(item)
