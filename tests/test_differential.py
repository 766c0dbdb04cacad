"""Differential testing against CPython: random expressions evaluate to the same value in the VM and in Python.

Hypothesis builds expressions over ints, floats, strings, lists, bools and none with `+ - * / // % **`,
comparisons (chained, with `in`/`not in`), `and`/`or`/`not`, indexing, slicing and `len`, written with the
fewest parentheses the precedence rules allow (so precedence is compared too). Each expression is rendered
twice, as .pipe (`true`/`false`/`none`) and as Python, then evaluated as `pipeline main() -> any: return EXPR`
in the VM and with Python's `eval`. The outcomes must agree: the same value (same types, floats equal or both
nan), or both an error. A Python ZeroDivisionError must be a .pipe `division by zero`, an IndexError an
`out of range` error.

Intended differences, each checked rather than skipped:

- Integer powers with an exponent above 10,000 in size (and a base other than -1, 0 or 1) are refused by the
  VM, and so is a repetition (`*` of a str or list) of more than 10,000,000 items, where Python computes
  them. The reference evaluator below detects these cases and the VM must then fail with its message.
- A negative number to a fractional power is an error in .pipe (no complex numbers); Python gives a complex.
- .pipe is statically typed: an expression with an ill-typed part is rejected at compile time even when
  Python would never evaluate that part (`false and 1 + "a"`, `2 < 1 < "a"`). A compile error where Python
  gives a value is accepted only if evaluating every part eagerly, without short-circuits, hits a TypeError.
- Equality is strict across kinds in .pipe: `true == 1` and `[true] == [1]` are false, `1 == 1.0` stays true, and
  `in`/`not in` on a list use that equality. Python's side is evaluated with `==`, `!=`, `in` and `not in` on
  lists rewritten to calls of `strict_eq` below, an implementation of that rule written independently of the VM's.
- `str % value` is Python's printf formatting in both, so it is not a difference here, though it shows
  `True`/`None` in Python's spelling (noted in the language docs as Python's formatting).
"""

from __future__ import annotations

import ast
import json
import math
import operator
import warnings
from dataclasses import dataclass

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from orgtree_lang.compile.api import compile_source
from orgtree_lang.runtime.builtins import MAX_SEQUENCE
from orgtree_lang.runtime.errors import PipeRuntimeError
from orgtree_lang.run.registries import default_registry
from orgtree_lang.syntax.diagnostics import CompileError
from orgtree_lang.vm.budget import Budget
from orgtree_lang.run.factory import plain_machine

REGISTRY = default_registry(plugins=False)

# ---- expressions rendered in both languages -------------------------------------------------

# Precedence levels shared by .pipe and Python (the test checks that they are shared).
OR, AND, NOT, CMP, SUM, TERM, UNARY, POWER, POSTFIX, ATOM = range(1, 11)
LEVEL = {"+": SUM, "-": SUM, "*": TERM, "/": TERM, "//": TERM, "%": TERM}


@dataclass(frozen=True)
class Expr:
    pipe: str
    py: str
    level: int


def atom(pipe: str, py: str | None = None) -> Expr:
    return Expr(pipe, pipe if py is None else py, ATOM)


def wrap(e: Expr, min_level: int, extra: bool = False) -> Expr:
    """Parenthesize `e` if its precedence is below `min_level` (or if `extra` asks for redundant parens)."""
    if e.level < min_level or extra:
        return Expr(f"({e.pipe})", f"({e.py})", ATOM)
    return e


def binary(op: str, a: Expr, b: Expr, extra: tuple[bool, bool] = (False, False)) -> Expr:
    if op == "**":
        a, b = wrap(a, POSTFIX, extra[0]), wrap(b, UNARY, extra[1])
        return Expr(f"{a.pipe} ** {b.pipe}", f"{a.py} ** {b.py}", POWER)
    if op in ("and", "or"):
        level = AND if op == "and" else OR
        a, b = wrap(a, level, extra[0]), wrap(b, level + 1, extra[1])
        return Expr(f"{a.pipe} {op} {b.pipe}", f"{a.py} {op} {b.py}", level)
    level = LEVEL[op]
    a, b = wrap(a, level, extra[0]), wrap(b, level + 1, extra[1])
    return Expr(f"{a.pipe} {op} {b.pipe}", f"{a.py} {op} {b.py}", level)


def compare(first: Expr, rest: list[tuple[str, Expr]]) -> Expr:
    pipe, py = [wrap(first, SUM).pipe], [wrap(first, SUM).py]
    for op, e in rest:
        e = wrap(e, SUM)
        pipe.append(f"{op} {e.pipe}")
        py.append(f"{op} {e.py}")
    return Expr(" ".join(pipe), " ".join(py), CMP)


def unary(op: str, e: Expr) -> Expr:
    if op == "not":
        e = wrap(e, NOT)
        return Expr(f"not {e.pipe}", f"not {e.py}", NOT)
    e = wrap(e, UNARY)
    return Expr(f"{op}{e.pipe}", f"{op}{e.py}", UNARY)


def index(target: Expr, i: Expr) -> Expr:
    target = wrap(target, POSTFIX)
    return Expr(f"{target.pipe}[{i.pipe}]", f"{target.py}[{i.py}]", POSTFIX)


def slice_(target: Expr, lower: Expr | None, upper: Expr | None, step: Expr | None) -> Expr:
    target = wrap(target, POSTFIX)

    def part(e: Expr | None, which: str) -> str:
        return "" if e is None else getattr(e, which)

    def text(which: str) -> str:
        inner = f"{part(lower, which)}:{part(upper, which)}"
        if step is not None:
            inner += f":{part(step, which)}"
        return f"{getattr(target, which)}[{inner}]"

    return Expr(text("pipe"), text("py"), POSTFIX)


def call_len(e: Expr) -> Expr:
    return Expr(f"len({e.pipe})", f"len({e.py})", POSTFIX)


def list_of(items: list[Expr]) -> Expr:
    return atom("[" + ", ".join(i.pipe for i in items) + "]", "[" + ", ".join(i.py for i in items) + "]")


# ---- strategies ---------------------------------------------------------------------------

small_ints = st.one_of(st.integers(0, 12), st.integers(0, 2**70))
ints_lit = small_ints.map(lambda n: atom(str(n)))
floats_lit = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False).map(
    lambda x: atom(repr(x)))
tiny_floats = st.sampled_from([0.0, 0.5, 1.5, 2.0, 0.1, 1e-7, 3.25, 1e16]).map(lambda x: atom(repr(x)))
strings_lit = st.text(alphabet="ab%é\n\"\\ ", max_size=4).map(lambda s: atom(json.dumps(s)))
bools_lit = st.sampled_from([atom("true", "True"), atom("false", "False")])
none_lit = st.just(atom("none", "None"))
extra_parens = st.tuples(st.booleans(), st.booleans()).map(lambda t: (t[0] and t[1], t[1] and not t[0]))


@st.composite
def int_expr(draw, depth: int = 3) -> Expr:
    if depth <= 0 or draw(st.integers(0, 3)) == 0:
        return draw(ints_lit)
    kind = draw(st.sampled_from(["arith", "arith", "pow", "neg", "len", "index", "boolop"]))
    if kind == "arith":
        op = draw(st.sampled_from(["+", "-", "*", "//", "%"]))
        return binary(op, draw(int_expr(depth - 1)), draw(int_expr(depth - 1)), draw(extra_parens))
    if kind == "pow":
        exponent = draw(st.one_of(st.integers(0, 4).map(lambda n: atom(str(n))), int_expr(depth - 1)))
        return binary("**", draw(int_expr(depth - 1)), exponent, draw(extra_parens))
    if kind == "neg":
        return unary(draw(st.sampled_from(["-", "+"])), draw(int_expr(depth - 1)))
    if kind == "len":
        return call_len(draw(st.one_of(str_expr(depth - 1), list_expr(depth - 1))))
    if kind == "index":
        items = draw(st.lists(int_expr(depth - 1), min_size=1, max_size=3))
        return index(list_of(items), draw(int_expr(depth - 1)))
    return binary(draw(st.sampled_from(["and", "or"])), draw(int_expr(depth - 1)), draw(int_expr(depth - 1)))


@st.composite
def float_expr(draw, depth: int = 3) -> Expr:
    if depth <= 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.one_of(floats_lit, tiny_floats))
    kind = draw(st.sampled_from(["arith", "div", "pow", "neg"]))
    number = st.one_of(float_expr(depth - 1), int_expr(depth - 1))
    if kind == "arith":
        op = draw(st.sampled_from(["+", "-", "*", "//", "%"]))
        return binary(op, draw(float_expr(depth - 1)), draw(number), draw(extra_parens))
    if kind == "div":
        return binary("/", draw(number), draw(number), draw(extra_parens))
    if kind == "pow":
        exponent = draw(st.one_of(tiny_floats, st.integers(-2, 3).map(lambda n: atom(str(n)))))
        return binary("**", draw(number), exponent, draw(extra_parens))
    return unary("-", draw(float_expr(depth - 1)))


@st.composite
def str_expr(draw, depth: int = 3) -> Expr:
    if depth <= 0 or draw(st.integers(0, 3)) == 0:
        return draw(strings_lit)
    kind = draw(st.sampled_from(["concat", "repeat", "index", "slice", "format"]))
    if kind == "concat":
        return binary("+", draw(str_expr(depth - 1)), draw(str_expr(depth - 1)), draw(extra_parens))
    if kind == "repeat":
        count = draw(st.one_of(st.integers(-1, 4).map(lambda n: atom(str(n))), int_expr(depth - 1)))
        if draw(st.booleans()):
            return binary("*", draw(str_expr(depth - 1)), count)
        return binary("*", count, draw(str_expr(depth - 1)))
    if kind == "index":
        return index(draw(str_expr(depth - 1)), draw(int_expr(depth - 1)))
    if kind == "slice":
        return draw(sliced(str_expr(depth - 1), depth))
    return binary("%", draw(str_expr(depth - 1)), draw(any_expr(depth - 1)))


@st.composite
def sliced(draw, target, depth: int) -> Expr:
    bound = st.one_of(st.none(), st.integers(-5, 5).map(lambda n: unary("-", atom(str(-n))) if n < 0 else atom(str(n))),
                      int_expr(depth - 1), none_lit)
    return slice_(draw(target), draw(bound), draw(bound), draw(st.one_of(st.none(), bound)))


@st.composite
def list_expr(draw, depth: int = 3) -> Expr:
    element = st.one_of(int_expr(depth - 1), str_expr(depth - 1), bools_lit, none_lit, float_expr(depth - 1))
    if depth <= 0 or draw(st.integers(0, 3)) == 0:
        return list_of(draw(st.lists(element if depth > 0 else ints_lit, max_size=3)))
    kind = draw(st.sampled_from(["concat", "repeat", "slice", "nested"]))
    if kind == "concat":
        return binary("+", draw(list_expr(depth - 1)), draw(list_expr(depth - 1)), draw(extra_parens))
    if kind == "repeat":
        count = draw(st.one_of(st.integers(-1, 3).map(lambda n: atom(str(n))), int_expr(depth - 1)))
        return binary("*", draw(list_expr(depth - 1)), count)
    if kind == "slice":
        return draw(sliced(list_expr(depth - 1), depth))
    return list_of(draw(st.lists(st.one_of(element, list_expr(depth - 1)), max_size=3)))


@st.composite
def bool_expr(draw, depth: int = 3) -> Expr:
    if depth <= 0 or draw(st.integers(0, 4)) == 0:
        return draw(bools_lit)
    kind = draw(st.sampled_from(["cmp", "cmp", "chain", "in", "not", "boolop"]))
    if kind == "cmp":
        typed = draw(st.sampled_from([int_expr, float_expr, str_expr, list_expr]))
        op = draw(st.sampled_from(["<", "<=", ">", ">=", "==", "!="]))
        left = draw(st.one_of(typed(depth - 1), int_expr(depth - 1)) if typed is float_expr else typed(depth - 1))
        return compare(left, [(op, draw(typed(depth - 1)))])
    if kind == "chain":
        typed = draw(st.sampled_from([int_expr, str_expr]))
        rest = draw(st.lists(st.tuples(st.sampled_from(["<", "<=", ">", ">=", "==", "!="]), typed(depth - 1)),
                             min_size=2, max_size=3))
        return compare(draw(typed(depth - 1)), rest)
    if kind == "in":
        op = draw(st.sampled_from(["in", "not in"]))
        if draw(st.booleans()):
            return compare(draw(str_expr(depth - 1)), [(op, draw(str_expr(depth - 1)))])
        return compare(draw(any_expr(depth - 1)), [(op, draw(list_expr(depth - 1)))])
    if kind == "not":
        return unary("not", draw(any_expr(depth - 1)))
    return binary(draw(st.sampled_from(["and", "or"])), draw(bool_expr(depth - 1)), draw(bool_expr(depth - 1)))


@st.composite
def mixed_expr(draw, depth: int = 3) -> Expr:
    """Any operator over any operands, typed or not: mostly errors, which must agree too."""
    a, b = draw(any_expr(depth - 1)), draw(any_expr(depth - 1))
    op = draw(st.sampled_from(["+", "-", "*", "/", "//", "%", "**", "and", "or", "<", "==", "in", "index"]))
    if op in ("<", "==", "in"):
        return compare(a, [(op, b)])
    if op == "index":
        return index(a, b)
    return binary(op, a, b, draw(extra_parens))


def any_expr(depth: int = 3):
    if depth <= 0:
        return st.one_of(ints_lit, strings_lit, bools_lit, none_lit, tiny_floats)
    return st.one_of(int_expr(depth), float_expr(depth), str_expr(depth), bool_expr(depth), list_expr(depth),
                     none_lit, mixed_expr(depth))


# ---- the reference evaluator ----------------------------------------------------------------


class Refused(Exception):
    """Python would compute this, but the VM refuses it on purpose (documented above)."""


class Unknown:
    """The value of a part whose evaluation failed, in eager mode."""


UNKNOWN = Unknown()

_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}


def strict_eq(a, b) -> bool:
    """.pipe's `==`: bools equal only bools; ints and floats compare as numbers; containers item by item."""
    numbers = (int, float)
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, numbers) and isinstance(b, numbers):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(strict_eq(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def strict_in(item, container) -> bool:
    if isinstance(container, list):
        return any(strict_eq(item, x) for x in container)
    return item in container


_CMP = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Eq: strict_eq,
        ast.NotEq: lambda a, b: not strict_eq(a, b), ast.In: strict_in, ast.NotIn: lambda a, b: not strict_in(a, b)}
_STRICT = {ast.Eq: "strict_eq", ast.NotEq: "strict_ne", ast.In: "strict_in", ast.NotIn: "strict_not_in"}


class _StrictComparisons(ast.NodeTransformer):
    """Rewrites `a == b` (and !=, in, not in) into calls of the strict functions; chains become `and`s of pairs,
    which is the same for these side-effect-free expressions."""

    def visit_Compare(self, node: ast.Compare):
        self.generic_visit(node)
        operands = [node.left, *node.comparators]
        pairs = []
        for op, left, right in zip(node.ops, operands, operands[1:]):
            if type(op) in _STRICT:
                pairs.append(ast.Call(ast.Name(_STRICT[type(op)], ast.Load()), [left, right], []))
            else:
                pairs.append(ast.Compare(left, [op], [right]))
        result = pairs[0] if len(pairs) == 1 else ast.BoolOp(ast.And(), pairs)
        return ast.copy_location(result, node)


def _check_limits(op, a, b) -> None:
    if op is ast.Pow and isinstance(a, int) and isinstance(b, int) and abs(b) > 10_000 and abs(a) > 1:
        raise Refused("too large to compute")
    if op is ast.Mult:
        for seq, count in ((a, b), (b, a)):
            if isinstance(seq, (str, list)) and isinstance(count, int) and len(seq) * count > MAX_SEQUENCE:
                raise Refused("exceeds the limit")


class Reference:
    """Walks Python's own syntax tree of the expression with CPython's operators.

    Lazily (as Python evaluates) it only decides whether the VM is allowed to refuse the expression; eagerly
    (every part, no short-circuits) it finds type errors hidden behind a short-circuit."""

    def __init__(self, eager: bool) -> None:
        self.eager = eager
        self.type_error = False
        self.failed_part = False  # a part failed at run time: what it would have been (its type) is unknown

    def run(self, source: str):
        return self.eval(ast.parse(source, mode="eval").body)

    def apply(self, func, *args):
        if any(a is UNKNOWN for a in args):
            return UNKNOWN
        if not self.eager:
            return func(*args)
        try:
            return func(*args)
        except TypeError:
            self.type_error = True
        except (Refused, ArithmeticError, LookupError, ValueError):
            self.failed_part = True
        return UNKNOWN

    def eval(self, node):  # noqa: C901 - one case per node type
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.List):
            items = [self.eval(e) for e in node.elts]
            return UNKNOWN if any(i is UNKNOWN for i in items) else items
        if isinstance(node, ast.BinOp):
            a, b = self.eval(node.left), self.eval(node.right)
            op = type(node.op)

            def compute(x, y):
                _check_limits(op, x, y)
                result = _BIN[op](x, y)
                if isinstance(result, complex):
                    raise Refused("not a real number")
                return result

            return self.apply(compute, a, b)
        if isinstance(node, ast.UnaryOp):
            funcs = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_}
            return self.apply(funcs[type(node.op)], self.eval(node.operand))
        if isinstance(node, ast.BoolOp):
            is_and = isinstance(node.op, ast.And)
            if self.eager:
                values = [self.eval(v) for v in node.values]
                if any(v is UNKNOWN for v in values):
                    return UNKNOWN
            else:
                values = []
            value = None
            for i, sub in enumerate(node.values):
                value = values[i] if self.eager else self.eval(sub)
                if bool(value) != is_and:
                    return value
            return value
        if isinstance(node, ast.Compare):
            left = self.eval(node.left)
            result = True
            for op, comp in zip(node.ops, node.comparators):
                right = self.eval(comp)
                outcome = self.apply(_CMP[type(op)], left, right)
                if outcome is UNKNOWN:
                    result = UNKNOWN
                elif not outcome and result is not UNKNOWN:
                    result = False
                    if not self.eager:
                        return False
                left = right
            return result
        if isinstance(node, ast.Subscript):
            target = self.eval(node.value)
            if isinstance(node.slice, ast.Slice):
                parts = [None if p is None else self.eval(p)
                         for p in (node.slice.lower, node.slice.upper, node.slice.step)]
                return self.apply(lambda t, lo, up, st: t[lo:up:st], target, *parts)
            return self.apply(operator.getitem, target, self.eval(node.slice))
        if isinstance(node, ast.Call):
            return self.apply(len, self.eval(node.args[0]))
        raise AssertionError(f"unexpected node {ast.dump(node)}")


# ---- running both sides -----------------------------------------------------------------


@dataclass
class Outcome:
    value: object = None
    error: BaseException | None = None
    compile_error: bool = False


def run_pipe(text: str) -> Outcome:
    source = f"pipeline main() -> any:\n    return {text}\n"
    try:
        program = compile_source(source, "diff.pipe", REGISTRY).program
    except CompileError:
        return Outcome(compile_error=True)
    machine = plain_machine(program, registry=REGISTRY, budget=Budget(max_steps=100))
    machine.start()
    try:
        machine.run()
    except PipeRuntimeError as err:
        return Outcome(error=err)
    return Outcome(machine.state.result)


def run_python(text: str) -> Outcome:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. SyntaxWarning for `5[0]`
        tree = ast.fix_missing_locations(_StrictComparisons().visit(ast.parse(text, mode="eval")))
        code = compile(tree, "<expr>", "eval")
        names = {"__builtins__": {}, "len": len, "strict_eq": strict_eq, "strict_in": strict_in,
                 "strict_ne": lambda a, b: not strict_eq(a, b), "strict_not_in": lambda a, b: not strict_in(a, b)}
        try:
            return Outcome(eval(code, names))  # noqa: S307 - generated arithmetic
        except Exception as err:  # noqa: BLE001 - any Python error counts as "an error"
            return Outcome(error=err)


def same_value(a, b) -> bool:
    """Equal with equal types all the way down (True is not 1); floats equal (same sign of zero) or both nan."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    return a == b


def check_agreement(e: Expr) -> None:
    refusal = None
    try:
        Reference(eager=False).run(e.py)
    except Refused as why:
        refusal = str(why)
    except Exception:  # noqa: BLE001 - Python fails too; the real eval below says how
        pass
    python = Outcome(error=Refused(refusal)) if refusal else run_python(e.py)
    vm = run_pipe(e.pipe)

    def context() -> str:  # built only when an assertion fails: huge ints make repr() slow or raise
        def show(o: Outcome) -> str:
            try:
                return repr(o)
            except ValueError:
                return f"Outcome(<an int too long to show>, error={o.error!r})"

        return f"\n.pipe:   {e.pipe}\nPython:  {e.py}\nVM:      {show(vm)}\nPython:  {show(python)}"

    if refusal:
        assert vm.compile_error or (vm.error is not None and refusal in vm.error.message), \
            "the VM must refuse what it documents refusing" + context()
        return
    if vm.compile_error:
        if python.error is None:
            eager = Reference(eager=True)
            eager.run(e.py)
            # A part that fails at run time (`""[0]` in `1 or true + ""[0]`) hides the type the checker saw.
            assert eager.type_error or eager.failed_part, \
                "compile error, but Python evaluates every part without a type error" + context()
        return
    if python.error is not None:
        assert vm.error is not None, "Python fails but the VM gives a value" + context()
        if isinstance(python.error, ZeroDivisionError):
            assert "division by zero" in vm.error.message, context()
        elif isinstance(python.error, IndexError):
            assert "out of range" in vm.error.message, context()
        return
    assert vm.error is None, "the VM fails but Python gives a value" + context()
    assert same_value(vm.value, python.value), "different values" + context()


def scaled(n: int):
    """At least `n` examples, more under the thorough profile."""
    return settings(max_examples=max(n, settings.default.max_examples))


# ---- the tests ------------------------------------------------------------------------------


@scaled(200)
@given(int_expr(4))
def test_integer_expressions_agree(e):
    check_agreement(e)


@scaled(150)
@given(float_expr(3))
def test_float_expressions_agree(e):
    check_agreement(e)


@scaled(150)
@given(st.one_of(str_expr(3), list_expr(3)))
def test_string_and_list_expressions_agree(e):
    check_agreement(e)


@scaled(200)
@given(bool_expr(3))
def test_boolean_and_comparison_expressions_agree(e):
    check_agreement(e)


@scaled(250)
@example(atom("(-8) ** 0.5"))
@example(atom('"ab" * 20000000'))
@example(atom("7 ** 20000"))
@example(atom('false and 1 + "a"', 'False and 1 + "a"'))
@example(atom('2 < 1 < "a"'))
@example(atom('"%s|%d" % true', '"%s|%d" % True'))
@example(atom("-2 ** 2 - -3 * 4 // -5 % 3"))
@example(atom("not 1 == 2 or 3 in [3] and 0 < 1 < 2"))
@example(atom('1 or true + ""[0]', '1 or True + ""[0]'))
@given(mixed_expr(3))
def test_mixed_expressions_agree_or_both_fail(e):
    check_agreement(e)


@pytest.mark.parametrize("pipe_text,py_text", [
    ("1 + 2 * 3 ** 2", None), ("(1 + 2) * 3", None), ("-3 ** 2", None), ("2 ** -1", None),
    ("7 // -2", None), ("-7 % 3", None), ("1 < 2 == 2 > 1", None), ("[1, 2][1:] + [3] * 2", None),
    ('"abc"[::-1]', None), ("len([1, [2, 3]]) ** 2", None), ("none == false", "None == False"),
    ("true + true", "True + True"), ('"a" in "cat" and not [] or 5', None),
    ("true == 1", "True == 1"), ("[1, 2.0] == [1.0, 2]", None), ("1 in [true]", "1 in [True]"),
    ("0 != false", "0 != False"), ("1 < 2 == true", "1 < 2 == True"),
])
def test_hand_picked_expressions_agree(pipe_text, py_text):
    check_agreement(atom(pipe_text, py_text))


@pytest.mark.parametrize("pipe_text,py_text", [
    ("1 + 1", "1 + 2"),  # different values
    ("1", "True"),  # equal in Python, but a different type
    ("0.0", "-0.0"),  # equal floats with different signs
    ("1 // 1", "1 // 0"),  # Python fails, the VM does not
    ('"a" + 1', "1 + 1"),  # a compile error where Python's eager evaluation finds no type error
])
def test_the_comparison_catches_disagreements(pipe_text, py_text):
    with pytest.raises(AssertionError):
        check_agreement(atom(pipe_text, py_text))


def test_the_python_side_compares_strictly_across_kinds():
    assert run_python("True == 1").value is False
    assert run_python("1 == 1.0 == 1").value is True
    assert run_python("[1, True] != [1, 1]").value is True
    assert run_python("1 in [True, 2.0]").value is False
    assert run_python("2 in [True, 2.0]").value is True
