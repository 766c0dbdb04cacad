"""Build syntax nodes (nodes.Module and below) from the grammar's rules, one constructor per rule."""

from __future__ import annotations

import inspect

from lark import Token, v_args

from orgtree_lang.syntax import nodes as n
from orgtree_lang.syntax.contracts import ContractRules, TestDecl, take_contracts
from orgtree_lang.syntax.diagnostics import DiagnosticSink
from orgtree_lang.syntax.org_rules import OrgRules
from orgtree_lang.syntax.strings import FStringReader, string_value
from orgtree_lang.syntax.spans import Span
from orgtree_lang.syntax.words import KEYWORDS, RESERVED

# Python's names for types, in a type test, with the .pipe name to write instead.
_PYTHON_TYPE_NAMES = {"None": "none", "NoneType": "none", "String": "str", "string": "str",
                      "integer": "int", "Int": "int", "number": "int` or `is float", "boolean": "bool",
                      "Bool": "bool", "List": "list", "Dict": "dict", "tuple": "list", "set": "list"}


@v_args(meta=True)
class NodeBuilder(ContractRules, OrgRules):
    """The grammar's rules as node constructors: each takes a rule's meta (its position) and children and
    gives a node; collects the problems Lark cannot see (reserved words, f-strings, misplaced words).

    `parse_field(text, file, line, col, sink)` parses an f-string's field as an expression (the parser's
    parse_expr): the builder is below the parser, which hands it in."""

    def __init__(self, file: str, sink: DiagnosticSink, parse_field, line_offset: int = 0,
                 col_offset: int = 0) -> None:
        super().__init__()
        self.file = file
        self.sink = sink
        self.parse_field = parse_field
        self.line_offset = line_offset
        self.col_offset = col_offset

    # -- spans and names

    def _span(self, meta) -> Span:
        if getattr(meta, "empty", True):
            return Span(self.file, 0, 0, 0, 0)
        if self.line_offset or self.col_offset:
            return self._shift(meta.line, meta.column, meta.end_line, meta.end_column)
        return Span(self.file, meta.line, meta.column, meta.end_line, meta.end_column)

    def _tok(self, token: Token) -> Span:
        return self._shift(token.line, token.column, token.end_line, token.end_column)

    def _shift(self, line: int, col: int, end_line: int, end_col: int) -> Span:
        if self.line_offset or self.col_offset:
            col = col + self.col_offset if line == 1 else col
            end_col = end_col + self.col_offset if end_line == 1 else end_col
            line += self.line_offset
            end_line += self.line_offset
        return Span(self.file, line, col, end_line, end_col)

    def _ident(self, token: Token) -> str:
        name = str(token)
        if name in KEYWORDS:
            self.sink.error(f"`{name}` is a keyword and cannot be used as a name", self._tok(token))
        if name in RESERVED:
            self.sink.error(
                f"`{name}` is a reserved word", self._tok(token),
                f"`{name}` is kept for a future version of .pipe; choose another name",
            )
        return name

    # -- declarations

    def start(self, meta, items):
        uses = tuple(u for item in items if isinstance(item, list) for u in item)
        flat = []
        for item in items:
            flat.extend(item if isinstance(item, list) else [item])
        records = tuple(i for i in flat if isinstance(i, n.RecordDecl))
        pipelines = tuple(i for i in flat if isinstance(i, n.Pipeline))
        tests = tuple(i for i in flat if isinstance(i, TestDecl))
        routes = tuple(i for i in flat if isinstance(i, n.Route))
        return n.Module(self._span(meta), self.file, uses, records, pipelines, tuple(flat), tests, routes)

    def use_decl(self, meta, names):
        return list(names)

    def dotted_name(self, meta, parts):
        return n.Use(self._span(meta), ".".join(self._ident(p) for p in parts))

    def record_decl(self, meta, children):
        name, (doc, fields) = children
        return n.RecordDecl(self._span(meta), self._ident(name), tuple(fields), doc)

    def record_body(self, meta, children):
        doc = None
        fields = []
        for child in children:
            if isinstance(child, n.FieldDecl):
                fields.append(child)
            elif doc is None and not fields:
                doc = child
            else:
                self.sink.error("a record holds only field declarations after its docstring", self._span(meta))
        return doc, fields

    def string_line(self, meta, children):
        return inspect.cleandoc(self._string_value(children[0]))

    def field_decl(self, meta, children):
        name, type_, default = children
        return n.FieldDecl(self._span(meta), self._ident(name), type_, default)

    def pipeline_decl(self, meta, children):
        name, params, returns, body = children
        doc, body = split_doc(body)
        examples, expects, body = take_contracts(body)
        return n.Pipeline(self._span(meta), self._ident(name), tuple(params or ()), returns, doc, body, self._tok(name),
                          examples, expects)

    def params(self, meta, children):
        return [c for c in children if c is not None]

    def param(self, meta, children):
        name, type_, default = children
        return n.ParamDecl(self._span(meta), self._ident(name), type_, default)

    # -- types

    def type(self, meta, children):
        base, *marks = children
        if len(marks) > 1:
            self.sink.error("a type can be made optional only once", self._span(meta), f"write `{base}?`")
        if marks:
            return n.TypeExpr(base.span.merge(self._tok(marks[-1])), base.name, base.args, True)
        return base

    def simple_type(self, meta, children):
        return n.TypeExpr(self._span(meta), str(children[0]))

    def none_type(self, meta, children):
        return n.TypeExpr(self._span(meta), "none")

    def generic_type(self, meta, children):
        name, *args = children
        return n.TypeExpr(self._span(meta), str(name), tuple(args))

    # -- statements

    def suite(self, meta, children):
        return tuple(children)

    def assign(self, meta, children):
        *targets, value = children
        names = tuple(n.Name(self._tok(t), self._ident(t)) for t in targets)
        return n.Assign(self._span(meta), names, value)

    def aug_assign(self, meta, children):
        target, op, value = children
        return n.AugAssign(self._span(meta), n.Name(self._tok(target), self._ident(target)), str(op)[:-1], value)

    def expr_stmt(self, meta, children):
        return n.ExprStmt(self._span(meta), children[0])

    def break_stmt(self, meta, children):
        return n.Break(self._span(meta))

    def continue_stmt(self, meta, children):
        return n.Continue(self._span(meta))

    def pass_stmt(self, meta, children):
        return n.Pass(self._span(meta))

    def jump_stmt(self, meta, children):
        word, name = children
        span = self._span(meta)
        if word == "label":
            return n.Label(span, self._ident(name))
        if word == "goto":
            return n.Goto(span, self._ident(name), self._tok(name))
        self.sink.error(
            f"expected a statement, got `{word} {name}`", span,
            f"two names in a row only make sense as `label {name}` or `goto {name}`",
        )
        return n.Pass(span)

    def fail_stmt(self, meta, children):
        return n.Fail(self._span(meta), children[0])

    def return_stmt(self, meta, children):
        return n.Return(self._span(meta), children[0])

    def if_stmt(self, meta, children):
        test, body, *rest = children
        tests, bodies, keyword_spans = [test], [body], []
        orelse = None
        for clause in rest:
            if clause is None:
                continue
            kind, span, *parts = clause
            keyword_spans.append(span)
            if kind == "elif":
                tests.append(parts[0])
                bodies.append(parts[1])
            else:
                orelse = parts[0]
        return n.If(self._span(meta), tuple(tests), tuple(bodies), orelse, tuple(keyword_spans))

    def elif_clause(self, meta, children):
        return ("elif", self._span(meta), children[0], children[1])

    def else_clause(self, meta, children):
        return ("else", self._span(meta), children[0])

    def while_stmt(self, meta, children):
        return n.While(self._span(meta), children[0], children[1])

    def for_stmt(self, meta, children):
        *targets, iterable, clause, body = children
        names = tuple(n.Name(self._tok(t), self._ident(t)) for t in targets)
        if clause is None:
            return n.For(self._span(meta), names, iterable, body)
        return n.For(self._span(meta), names, iterable, body, True, clause[1])

    def try_stmt(self, meta, children):
        body, name, handler = children
        err_name = n.Name(self._tok(name), self._ident(name)) if name is not None else None
        except_span = self._tok(name) if name is not None else self._span(meta)
        return n.Try(self._span(meta), body, err_name, handler, except_span)

    def ambiguous_stmt(self, meta, children):
        name, inputs, outputs, body = children
        doc, rest = split_doc(body)
        uses: list[n.Use] = []
        while rest and isinstance(rest[0], n.UseStmt):
            uses.extend(rest[0].names)
            rest = rest[1:]
        examples, expects, rest = take_contracts(rest)
        return n.Ambiguous(self._span(meta), self._ident(name), tuple(inputs or ()), tuple(outputs), doc, rest,
                           tuple(uses), examples, expects)

    def use_stmt(self, meta, names):
        return n.UseStmt(self._span(meta), tuple(names))

    def amb_inputs(self, meta, children):
        return [c for c in children if c is not None]

    def amb_input(self, meta, children):
        name, type_, default = children
        return n.AmbiguousInput(self._span(meta), self._ident(name), type_, default)

    def amb_outputs(self, meta, children):
        return [c for c in children if c is not None]

    def amb_output(self, meta, children):
        name, type_ = children
        return n.AmbiguousOutput(self._span(meta), self._ident(name), type_)

    # -- expressions

    def or_op(self, meta, children):
        return n.BoolOp(self._span(meta), "or", children[0], children[1])

    def and_op(self, meta, children):
        return n.BoolOp(self._span(meta), "and", children[0], children[1])

    def not_op(self, meta, children):
        return n.UnaryOp(self._span(meta), "not", children[0])

    def comparison(self, meta, children):
        left, rest = children[0], children[1:]
        return n.Compare(self._span(meta), left, tuple(rest[0::2]), tuple(rest[1::2]))

    def comp_op(self, meta, children):
        return " ".join(str(c) for c in children)

    is_op = comp_op

    def type_test(self, meta, children):
        value, op, type_ = children
        if type_.args:
            self.sink.error(f"a type test checks the kind of a value, not its items: write `is {type_.name}`",
                            type_.span, "test the items one by one in a loop if they matter")
        elif type_.name in _PYTHON_TYPE_NAMES:
            self.sink.error(f"`{type_.name}` is not a .pipe type", type_.span,
                            f"write `is {_PYTHON_TYPE_NAMES[type_.name]}`")
        return n.TypeTest(self._span(meta), value, type_, op == "is not")

    def add_op(self, meta, children):
        return str(children[0])

    mul_op = add_op
    unary_op = add_op

    def sum(self, meta, children):
        result = children[0]
        for op, right in zip(children[1::2], children[2::2]):
            result = n.BinOp(result.span.merge(right.span), op, result, right)
        return result

    term = sum

    def unary(self, meta, children):
        return n.UnaryOp(self._span(meta), children[0], children[1])

    def power(self, meta, children):
        return n.BinOp(self._span(meta), "**", children[0], children[1])

    def call(self, meta, children):
        func, arguments = children
        args, keywords = [], []
        for arg in arguments or ():
            if isinstance(arg, n.Keyword):
                keywords.append(arg)
            elif keywords:
                self.sink.error("positional argument after a keyword argument", arg.span,
                                "put positional arguments first")
                args.append(arg)
            else:
                args.append(arg)
        return n.Call(self._span(meta), func, tuple(args), tuple(keywords))

    def arguments(self, meta, children):
        return [c for c in children if c is not None]

    def keyword(self, meta, children):
        name, value = children
        return n.Keyword(self._span(meta), self._ident(name), value)

    def index(self, meta, children):
        value, sub = children
        if isinstance(sub, tuple):
            return n.Slice(self._span(meta), value, *sub)
        return n.Index(self._span(meta), value, sub)

    def subscript_index(self, meta, children):
        return children[0]

    def subscript_slice(self, meta, children):
        return tuple(children)

    def attribute(self, meta, children):
        value, name = children
        return n.Attribute(self._span(meta), value, str(name), self._tok(name))

    def name(self, meta, children):
        return n.Name(self._span(meta), self._ident(children[0]))

    def int_lit(self, meta, children):
        digits = str(children[0]).replace("_", "")
        try:
            value = int(digits)
        except ValueError:  # more digits than Python converts from text (sys.get_int_max_str_digits)
            self.sink.error(f"integer literal with {len(digits)} digits is too long", self._span(meta),
                            "compute a number this large instead, e.g. `10 ** 5000`")
            value = 0
        return n.Const(self._span(meta), value, str(children[0]))

    def float_lit(self, meta, children):
        return n.Const(self._span(meta), float(children[0]), str(children[0]))

    def string_lit(self, meta, children):
        return n.Const(self._span(meta), self._string_value(children[0]), str(children[0]))

    def true_lit(self, meta, children):
        return n.Const(self._span(meta), True, "true")

    def false_lit(self, meta, children):
        return n.Const(self._span(meta), False, "false")

    def none_lit(self, meta, children):
        return n.Const(self._span(meta), None, "none")

    def list_lit(self, meta, children):
        return n.ListExpr(self._span(meta), tuple(c for c in children if c is not None))

    def dict_lit(self, meta, children):
        pairs = [c for c in children if c is not None]
        return n.DictExpr(self._span(meta), tuple(k for k, _ in pairs), tuple(v for _, v in pairs))

    def pair(self, meta, children):
        return (children[0], children[1])

    def fstring(self, meta, children):
        token = children[0]
        return FStringReader(self, token).read()

    def _string_value(self, token: Token) -> str:
        try:
            return string_value(str(token))
        except (ValueError, SyntaxError) as err:
            self.sink.error(f"invalid string literal: {err}", self._tok(token))
            return ""


def split_doc(body: tuple[n.Stmt, ...]) -> tuple[str | None, tuple[n.Stmt, ...]]:
    """Take a leading string-literal statement off a body as its docstring."""
    if body and isinstance(body[0], n.ExprStmt) and isinstance(body[0].expr, n.Const):
        value = body[0].expr.value
        if isinstance(value, str):
            return inspect.cleandoc(value), body[1:]
    return None, body
