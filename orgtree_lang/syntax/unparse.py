"""Write expressions and examples back as canonical .pipe source, with the fewest parentheses they need."""

from __future__ import annotations

from orgtree_lang.syntax import contracts as c
from orgtree_lang.syntax import nodes as n

# Binding strength of each expression form (higher binds tighter), following the grammar's precedence.
_OR, _AND, _NOT, _COMPARE, _SUM, _TERM, _UNARY, _POWER, POSTFIX, _ATOM = range(1, 11)
_BINARY_LEVEL = {"+": _SUM, "-": _SUM, "*": _TERM, "/": _TERM, "//": _TERM, "%": _TERM, "**": _POWER}


def expression_text(e: n.Expr) -> str:
    """One expression in canonical form, with the fewest parentheses precedence needs."""
    if isinstance(e, n.Const):
        return e.raw or constant_text(e.value)
    if isinstance(e, n.Name):
        return e.id
    if isinstance(e, n.FString):
        return e.raw
    if isinstance(e, n.ListExpr):
        return "[" + ", ".join(expression_text(i) for i in e.items) + "]"
    if isinstance(e, n.DictExpr):
        return "{" + ", ".join(f"{expression_text(k)}: {expression_text(v)}" for k, v in zip(e.keys, e.values)) + "}"
    if isinstance(e, n.BinOp):
        mine = _BINARY_LEVEL[e.op]
        if e.op == "**":
            left = parenthesized(e.left, mine + 1)
            right = parenthesized(e.right, _UNARY)
        else:
            left = parenthesized(e.left, mine)
            right = parenthesized(e.right, mine + 1)
        return f"{left} {e.op} {right}"
    if isinstance(e, n.Spawn):
        return f"spawn {expression_text(e.call)}"
    if isinstance(e, n.Await):
        return f"await {parenthesized(e.value, _UNARY)}"
    if isinstance(e, n.UnaryOp):
        if e.op == "not":
            return f"not {parenthesized(e.operand, _NOT)}"
        return f"{e.op}{parenthesized(e.operand, _UNARY)}"
    if isinstance(e, n.BoolOp):
        mine = _OR if e.op == "or" else _AND
        return f"{parenthesized(e.left, mine)} {e.op} {parenthesized(e.right, mine + 1)}"
    if isinstance(e, n.Compare):
        parts = [parenthesized(e.left, _SUM)]
        for op, comparator in zip(e.ops, e.comparators):
            parts.append(f"{op} {parenthesized(comparator, _SUM)}")
        return " ".join(parts)
    if isinstance(e, n.TypeTest):
        return f"{parenthesized(e.value, _SUM)} is {'not ' if e.negated else ''}{e.type}"
    if isinstance(e, n.Call):
        args = [expression_text(a) for a in e.args] + [f"{k.name}={expression_text(k.value)}" for k in e.keywords]
        return f"{parenthesized(e.func, POSTFIX)}({', '.join(args)})"
    if isinstance(e, n.Index):
        return f"{parenthesized(e.value, POSTFIX)}[{expression_text(e.index)}]"
    if isinstance(e, n.Slice):
        lower = expression_text(e.lower) if e.lower is not None else ""
        upper = expression_text(e.upper) if e.upper is not None else ""
        text = f"{lower}:{upper}"
        if e.step is not None:
            text += f":{expression_text(e.step)}"
        return f"{parenthesized(e.value, POSTFIX)}[{text}]"
    if isinstance(e, n.Attribute):
        base = parenthesized(e.value, POSTFIX)
        if isinstance(e.value, n.Const) and isinstance(e.value.value, int) and base[-1:].isdigit():
            base = f"({base})"  # `0.x` would read as the float `0.` followed by `x`
        return f"{base}.{e.attr}"
    raise TypeError(f"cannot format {type(e).__name__}")

def parenthesized(e: n.Expr, needed: int) -> str:
    """The expression's text, in parentheses when it binds less tightly than level `needed` (e.g. POSTFIX)."""
    text = expression_text(e)
    return f"({text})" if level(e) < needed else text


def level(e: n.Expr) -> int:
    if isinstance(e, n.BoolOp):
        return _OR if e.op == "or" else _AND
    if isinstance(e, n.UnaryOp):
        return _NOT if e.op == "not" else _UNARY
    if isinstance(e, (n.Spawn, n.Await)):
        return _UNARY
    if isinstance(e, (n.Compare, n.TypeTest)):
        return _COMPARE
    if isinstance(e, n.BinOp):
        return _BINARY_LEVEL[e.op]
    if isinstance(e, (n.Call, n.Index, n.Slice, n.Attribute)):
        return POSTFIX
    return _ATOM


def example_text(e: c.Example) -> str:
    """An example line, `f(1) -> 2`, in canonical form."""
    args = [expression_text(a) for a in e.args] + [f"{k.name}={expression_text(k.value)}" for k in e.keywords]
    if e.fails is not None:
        results = [f"fails {expression_text(e.fails)}"]
    elif e.result is not None:
        results = [expression_text(e.result)]
    else:
        results = [f"{k.name}={expression_text(k.value)}" for k in e.outputs]
    return f"{e.name}({', '.join(args)}) -> {', '.join(results)}"


def string_text(value: str) -> str:
    """A string literal for `value` in double quotes."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def constant_text(value) -> str:
    """Source text for a constant built without a spelling (the parser always records one)."""
    if value is None or isinstance(value, bool):
        return {None: "none", True: "true", False: "false"}[value]
    return repr(value)
