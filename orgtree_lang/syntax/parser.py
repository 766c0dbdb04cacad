"""Parse .pipe source text into a syntax tree (nodes.Module), turning Lark errors into Diagnostics."""

from __future__ import annotations

import dataclasses

import ast
import functools
import inspect
import re
from importlib import resources

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import LarkError, UnexpectedInput
from lark.indenter import DedentError, Indenter

from orgtree_lang.syntax import nodes as n
from orgtree_lang.syntax.contracts import ContractRules, TestDecl, take_contracts
from orgtree_lang.syntax.diagnostics import CompileError, Diagnostic, DiagnosticSink
from orgtree_lang.syntax.lalr import Rejected, Unsupported, parse_with
from orgtree_lang.syntax.parse_errors import RESERVED, parse_error_diagnostic
from orgtree_lang.syntax.python_habits import find_habits
from orgtree_lang.syntax.spans import Span

# Words of the language that can never be names (RESERVED, in parse_errors, holds those kept for later).
KEYWORDS = frozenset(
    {"use", "record", "pipeline", "if", "elif", "else", "while", "for", "in", "break", "continue",
     "pass", "try", "except", "fail", "return", "ambiguous", "and", "or", "not", "is", "true", "false", "none",
     "parallel", "spawn", "await", "cancel", "send", "on", "assume", "expect"}
)
SOFT_KEYWORDS = ("label", "goto", "route")
# Python's names for types, in a type test, with the .pipe name to write instead.
_PYTHON_TYPE_NAMES = {"None": "none", "NoneType": "none", "String": "str", "string": "str",
                      "integer": "int", "Int": "int", "number": "int` or `is float", "boolean": "bool",
                      "Bool": "bool", "List": "list", "Dict": "dict", "tuple": "list", "set": "list"}


# Sources larger than this are refused before parsing: parse, check and codegen take about 0.1 ms a line, so
# a 10 MB file would take most of a minute and gigabytes. docs/language.md states the limit.
MAX_SOURCE_BYTES = 200_000
# Brackets and blocks open at once. Every later pass walks the tree recursively, so a deeper program
# would end in a Python RecursionError; no program written by a person or a model needs this many.
MAX_NESTING = 100


class NestingTooDeep(LarkError):
    """Raised by the indenter at the token that opens one bracket or block too many."""

    def __init__(self, token: Token) -> None:
        super().__init__("nested too deeply")
        self.token = token


_OPENING = frozenset({"LPAR", "LSQB", "LBRACE"})
_CLOSING = frozenset({"RPAR", "RSQB", "RBRACE"})


class PipeIndenter(Indenter):
    """Turns leading whitespace after newlines into _INDENT/_DEDENT; ignores newlines inside brackets."""

    NL_type = "_NL"
    OPEN_PAREN_types = sorted(_OPENING)
    CLOSE_PAREN_types = sorted(_CLOSING)
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8

    def _process(self, stream):
        # Lark's Indenter._process with the depth check folded in (one generator instead of two: every token
        # of every parse passes through here).
        token = None
        indent_level = self.indent_level
        for token in stream:
            kind = token.type
            if kind == "_NL":
                for made in self.handle_NL(token):
                    if self.paren_level + len(indent_level) - 1 > MAX_NESTING:
                        raise NestingTooDeep(made)
                    yield made
            else:
                if self.paren_level + len(indent_level) - 1 > MAX_NESTING:
                    raise NestingTooDeep(token)
                yield token
            if kind in _OPENING:
                self.paren_level += 1
            elif kind in _CLOSING:
                self.paren_level -= 1
                assert self.paren_level >= 0
        while len(indent_level) > 1:
            indent_level.pop()
            made = Token.new_borrow_pos(self.DEDENT_type, "", token) if token else Token(self.DEDENT_type, "", 0, 0, 0, 0, 0, 0)
            if self.paren_level + len(indent_level) - 1 > MAX_NESTING:
                raise NestingTooDeep(made)
            yield made
        assert indent_level == [0], indent_level


@functools.lru_cache(maxsize=1)
def grammar_text() -> str:
    return resources.files("orgtree_lang.grammar").joinpath("pipe.lark").read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def lark_parser() -> Lark:
    """The LALR parser for .pipe, built once per process (Lark caches the tables on disk)."""
    return Lark(
        grammar_text(),
        parser="lalr",
        postlex=PipeIndenter(),
        propagate_positions=True,
        maybe_placeholders=True,
        start=["start", "expr"],
        cache=True,
    )


def parse(source: str, file: str = "<string>") -> n.Module:
    """Parse a whole module; raise CompileError with every diagnostic found."""
    _refuse_huge(source, file)
    if not source.endswith("\n"):
        source += "\n"
    sink = DiagnosticSink(file)
    try:
        module = build(source, "start", _Builder(file, sink))
    except NestingTooDeep as err:
        raise CompileError([_nesting_diagnostic(err, file)], {file: source}) from None
    except (UnexpectedInput, DedentError) as err:
        diagnostic = parse_error_diagnostic(err, source, file)
        # A Python spelling at or before the place the parser stopped is the likely cause: say that instead.
        habits = [h for h in find_habits(source, file) if h.span.line <= diagnostic.span.line]
        raise CompileError(habits or [diagnostic], {file: source}) from None
    if sink.has_errors:
        raise CompileError(_explain_habits(sink.items, source, file), {file: source})
    return module


def build(text: str, start: str, builder: "_Builder"):
    """The nodes of `text` from grammar rule `start`; a text the grammar refuses raises Lark's exception."""
    mark = len(builder.sink.items)
    try:
        return parse_with(lark_parser(), text, start, builder, PipeIndenter())
    except Unsupported:
        del builder.sink.items[mark:]  # Lark's transform below reports them again
    except (Rejected, LarkError):
        pass  # Lark's own parse raises the exception (with its parser state) that diagnostics are made from
    return builder.transform(lark_parser().parse(text, start=start))


def _refuse_huge(source: str, file: str) -> None:
    size = len(source.encode("utf-8", "surrogatepass"))
    if size > MAX_SOURCE_BYTES:
        raise CompileError([Diagnostic(
            "error", f"this source is {size:,} bytes; the limit is {MAX_SOURCE_BYTES:,} bytes",
            Span(file, 1, 1, 1, 1),
            "split it into modules (`use` other .pipe files), or read large data at run time with fs.read")])


def _nesting_diagnostic(err: NestingTooDeep, file: str) -> Diagnostic:
    token = err.token
    line, col = token.line or 1, token.column or 1
    return Diagnostic("error", f"brackets and blocks are nested more than {MAX_NESTING} deep here",
                      Span(file, line, col, line, col + 1),
                      "flatten it: build the value step by step, or move inner blocks into pipelines")


def _explain_habits(diagnostics: list, source: str, file: str) -> list:
    """Replace the errors on a line holding a Python habit by the habit's own diagnostic."""
    error_lines = {d.span.line for d in diagnostics if d.severity == "error"}
    habits = {h.span.line: h for h in find_habits(source, file) if h.span.line in error_lines}
    kept = [d for d in diagnostics if d.span.line not in habits]
    return sorted(kept + list(habits.values()), key=lambda d: (d.span.line, d.span.col))


def parse_expr(text: str, file: str, line: int, col: int, sink: DiagnosticSink) -> n.Expr | None:
    """Parse one expression (an f-string field) located at line/col; report errors into sink."""
    try:
        return build(text, "expr", _Builder(file, sink, line_offset=line - 1, col_offset=col - 1))
    except NestingTooDeep as err:
        diag = _nesting_diagnostic(err, file)
        sink.error(diag.message, Span(file, line, col, line, col + 1), diag.hint)
        return None
    except (UnexpectedInput, DedentError) as err:
        diag = parse_error_diagnostic(err, text, file)
        span = Span(file, line, col + diag.span.col - 1, line, col + diag.span.col)
        sink.error(f"in f-string expression: {diag.message}", span, diag.hint)
        return None


# ---- tree to nodes -------------------------------------------------------

_CONVERSION = re.compile(r"!\s*([rsa])\s*$")  # `{x!r}`: Python's conversions, which .pipe has not


def string_value(literal: str) -> str:
    """The value of a string literal as Python reads it; the quotes are cut off directly when nothing inside
    needs reading (no escape, no carriage return, no NUL), which is most literals and far cheaper."""
    if "\\" in literal or "\r" in literal or "\x00" in literal:
        return ast.literal_eval(literal)
    quotes = 3 if literal.startswith(('"""', "'''")) else 1
    return literal[quotes:-quotes]


@v_args(meta=True)
class _Builder(ContractRules):
    """Builds nodes from Lark's parse tree; collects problems Lark cannot see (reserved words, f-strings)."""

    def __init__(self, file: str, sink: DiagnosticSink, line_offset: int = 0, col_offset: int = 0) -> None:
        super().__init__()
        self.file = file
        self.sink = sink
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

    def route_decl(self, meta, children):
        word, topic, pipeline = children
        if str(word) != "route":
            self.sink.error(f"expected a declaration (use, record, pipeline, test or route), got `{word}`",
                            self._tok(word), 'a route is written `route "topic" -> pipeline_name`')
        last = pipeline if pipeline is not None else topic
        return n.Route(self._tok(word).merge(self._tok(last)), self._string_value(topic), self._tok(topic),
                       self._ident(pipeline) if pipeline is not None else None,
                       self._tok(pipeline) if pipeline is not None else None)

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
        doc, body = _split_doc(body)
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

    def for_parallel(self, meta, children):
        name, limit = children
        if name is not None and str(name) != "limit":
            self.sink.error(f"`parallel(...)` takes only `limit=N`, got `{name}`", self._tok(name),
                            "write `parallel(limit=4):` to run at most 4 iterations at once, or `parallel:`")
        return ("parallel", limit)

    def collect_stmt(self, meta, children):
        name, loop = children
        target = n.Name(self._tok(name), self._ident(name))
        if not loop.parallel:
            self.sink.error("only a parallel loop gives a value: `x = for ... parallel:`", self._span(meta),
                            "add `parallel` before the colon, or assign inside the loop")
        return dataclasses.replace(loop, span=self._span(meta), collect=target)

    def try_stmt(self, meta, children):
        body, name, handler = children
        err_name = n.Name(self._tok(name), self._ident(name)) if name is not None else None
        except_span = self._tok(name) if name is not None else self._span(meta)
        return n.Try(self._span(meta), body, err_name, handler, except_span)

    def parallel_stmt(self, meta, children):
        name, limit, body = children
        if name is not None and str(name) != "limit":
            self.sink.error(f"`parallel(...)` takes only `limit=N`, got `{name}`", self._tok(name),
                            "write `parallel(limit=4):` to run at most 4 branches at once, or `parallel:`")
        return n.Parallel(self._span(meta), limit, body)

    def cancel_stmt(self, meta, children):
        return n.Cancel(self._span(meta), children[0])

    def send_stmt(self, meta, children):
        target, body, word, topic = children
        if word is not None and str(word) != "topic":
            self.sink.error(f"`send` takes only `topic=...` after the body, got `{word}=`", self._tok(word),
                            'write `send target, body, topic="billing"`')
        return n.Send(self._span(meta), target, body, topic)

    def on_stmt(self, meta, children):
        what, name, body = children
        if str(what) != "message":
            self.sink.error(f"expected `on message NAME:`, got `on {what}`", self._tok(what),
                            "a handler is written `on message m:` (messages are the only events so far)")
        return n.OnMessage(self._span(meta), str(name), self._tok(name), body)

    def spawn_expr(self, meta, children):
        call = children[0]
        if not isinstance(call, n.Call):
            self.sink.error("`spawn` needs a pipeline call, like `spawn fetch(url)`", self._span(meta),
                            "spawn starts a call of one of this module's pipelines as a node of its own")
            call = n.Call(self._span(meta), n.Name(self._span(meta), "spawn"), (), ())
        return n.Spawn(self._span(meta), call)

    def await_expr(self, meta, children):
        return n.Await(self._span(meta), children[0])

    def ambiguous_stmt(self, meta, children):
        name, inputs, outputs, body = children
        doc, rest = _split_doc(body)
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
        return _FStringReader(self, token).read()

    def _string_value(self, token: Token) -> str:
        try:
            return string_value(str(token))
        except (ValueError, SyntaxError) as err:
            self.sink.error(f"invalid string literal: {err}", self._tok(token))
            return ""


class _FStringReader:
    """Splits `f"a {x:>3} b"` into literal text and parsed expression fields."""

    def __init__(self, builder: _Builder, token: Token) -> None:
        self.builder = builder
        self.token = token
        self.quote = str(token)[1]
        self.body = str(token)[2:-1]

    def read(self) -> n.FString:
        parts: list[str | n.FormattedValue] = []
        text, pos, body = [], 0, self.body
        while pos < len(body):
            char = body[pos]
            if body.startswith("{{", pos) or body.startswith("}}", pos):
                text.append(char)
                pos += 2
            elif char == "{":
                if text:
                    parts.append(self._literal("".join(text), pos))
                    text = []
                pos = self._field(pos, parts)
            elif char == "}":
                self._error("single `}` in f-string", pos, "write `}}` for a literal brace")
                pos += 1
            else:
                text.append(char)
                pos += 1
        if text:
            parts.append(self._literal("".join(text), pos))
        return n.FString(self.builder._tok(self.token), tuple(parts), str(self.token))

    def _field(self, start: int, parts: list) -> int:
        depth, pos, body = 0, start + 1, self.body
        colon = hash_at = None
        while pos < len(body):
            char = body[pos]
            if char == "#" and hash_at is None:
                hash_at = pos
            if char in "([{":
                depth += 1
            elif char in ")]}":
                if depth == 0 and char == "}":
                    break
                depth -= 1
            elif char == ":" and depth == 0 and colon is None:
                colon = pos
            elif char in "\"'":
                end = body.find(char, pos + 1)
                pos = end if end != -1 else len(body)
            pos += 1
        if pos >= len(body):
            self._error("f-string field is missing its closing `}`", start)
            return len(body)
        expr_text = body[start + 1 : colon if colon is not None else pos]
        spec = body[colon + 1 : pos] if colon is not None else ""
        if not expr_text.strip():
            self._error("empty expression in f-string", start, "put an expression inside `{}`")
            return pos + 1
        if hash_at is not None and (colon is None or hash_at < colon):  # a `#` in the format spec is fine
            self._error("f-string expression cannot contain `#`", hash_at, "move the comment out of the f-string")
            return pos + 1
        conversion = _CONVERSION.search(expr_text)
        if conversion is not None:
            self._error(f"f-strings have no `!{conversion.group(1)}` conversion", start + 1 + conversion.start(),
                        f"drop it: `{{{expr_text[:conversion.start()].strip()}}}` shows the value as `print` does; "
                        "to see a string in quotes, write the quotes around the field: f\"'{x}'\"")
            return pos + 1
        line, col = self.token.line, self.token.column + 2 + start + 1
        expr = parse_expr(expr_text, self.builder.file, line, col, self.builder.sink)
        if expr is not None:
            span = Span(self.builder.file, line, col, line, col + len(expr_text))
            parts.append(n.FormattedValue(span, expr, spec))
        return pos + 1

    def _literal(self, text: str, pos: int) -> str:
        try:
            return string_value(self.quote + text + self.quote)
        except (ValueError, SyntaxError):
            self._error("invalid escape in f-string", pos)
            return text

    def _error(self, message: str, pos: int, hint: str | None = None) -> None:
        col = self.token.column + 2 + pos
        self.builder.sink.error(message, Span(self.builder.file, self.token.line, col, self.token.line, col + 1), hint)


def _split_doc(body: tuple[n.Stmt, ...]) -> tuple[str | None, tuple[n.Stmt, ...]]:
    """Take a leading string-literal statement off a body as its docstring."""
    if body and isinstance(body[0], n.ExprStmt) and isinstance(body[0].expr, n.Const):
        value = body[0].expr.value
        if isinstance(value, str):
            return inspect.cleandoc(value), body[1:]
    return None, body


def source_comments(source: str) -> list[tuple[int, int, str, bool]]:
    """Every comment as (line, col, text, own_line), skipping `#` inside strings."""
    found = []
    pattern = re.compile(
        r'(f?"""([^\\]|\\.)*?""")|(f?\'\'\'([^\\]|\\.)*?\'\'\')|(f?"([^"\\\n]|\\.)*")|(f?\'([^\'\\\n]|\\.)*\')|(#[^\n]*)',
        re.S,
    )
    for match in pattern.finditer(source):
        if match.group(9) is None:
            continue
        start = match.start()
        line = source.count("\n", 0, start) + 1
        line_start = source.rfind("\n", 0, start) + 1
        own_line = source[line_start:start].strip() == ""
        found.append((line, start - line_start + 1, match.group(9), own_line))
    return found
