"""Examples, expectations, assumptions and tests: their syntax nodes and how the parser builds them."""

from __future__ import annotations

import inspect

from lark import Transformer, v_args

from orgtree_lang.syntax.nodes import Const, Expr, ExprStmt, Keyword, Node, Stmt, node
from orgtree_lang.syntax.spans import Span


@node
class Example(Node):
    """`fib(10) -> 55` or `split("a b") -> first="a", rest="b"`: input values and the outputs they must give."""

    span: Span
    name: str  # the pipeline or block the example calls
    name_span: Span
    args: tuple[Expr, ...]
    keywords: tuple[Keyword, ...]
    result: Expr | None  # the one expected value, or
    outputs: tuple[Keyword, ...] = ()  # one expected value per named output, or
    fails: Expr | None = None  # `-> fails "text"`: the call must raise an error whose message contains the text


@node
class Examples(Stmt):
    """An `examples:` block; the parser moves it into its pipeline or ambiguous block."""

    span: Span
    items: tuple[Example, ...]


@node
class Expect(Stmt):
    """`expect CONDITION, "why"`: a post-condition (pipelines, ambiguous blocks) or a check (tests)."""

    span: Span
    condition: Expr
    reason: Expr


@node
class Assume(Stmt):
    """`assume CONDITION, "why"`: an assumption about inputs or the world, checked where it stands."""

    span: Span
    condition: Expr
    reason: Expr


@node
class ExampleRun(Stmt):
    """The checker's statement for running one pipeline example: call it, compare with the expected value."""

    span: Span
    call: Expr
    expected: Expr
    example: Example


@node
class TestDecl(Node):
    """`test "name":` and its body, run by `pipe test`."""

    span: Span
    name: str
    body: tuple[Stmt, ...]
    doc: str | None = None


def take_contracts(body: tuple[Stmt, ...]) -> tuple[tuple[Example, ...], tuple[Expect, ...], tuple[Stmt, ...]]:
    """Split the `examples:` blocks and `expect` lines that open a body (after its docstring) off the rest."""
    examples: list[Example] = []
    expects: list[Expect] = []
    rest = body
    while rest and isinstance(rest[0], (Examples, Expect)):
        if isinstance(rest[0], Examples):
            examples.extend(rest[0].items)
        else:
            expects.append(rest[0])
        rest = rest[1:]
    return tuple(examples), tuple(expects), rest


@v_args(meta=True)
class ContractRules(Transformer):
    """The parser's rules for contracts, mixed into its tree builder (which supplies _span, _tok, _ident)."""

    def test_decl(self, meta, children):
        name, body = children
        doc = None
        if body and isinstance(body[0], ExprStmt) and isinstance(body[0].expr, Const) \
                and isinstance(body[0].expr.value, str):
            doc, body = inspect.cleandoc(body[0].expr.value), body[1:]
        return TestDecl(self._span(meta), self._string_value(name), tuple(body), doc)

    def examples_stmt(self, meta, children):
        word, *items = children
        if str(word) != "examples":
            self.sink.error(f"expected a statement, got `{word}:`", self._tok(word),
                            "only `examples:` opens a block this way; did you mean `examples:`?")
        return Examples(self._span(meta), tuple(items))

    def example(self, meta, children):
        name, arguments, results = children
        args = tuple(a for a in arguments or () if not isinstance(a, Keyword))
        keywords = tuple(a for a in arguments or () if isinstance(a, Keyword))
        span = self._span(meta)
        named = tuple(r for r in results if isinstance(r, Keyword))
        values = [r for r in results if not isinstance(r, Keyword)]
        if named and values or len(values) > 1:
            self.sink.error("an example gives one expected value, or one `name=value` per output", span,
                            'write `f(1) -> 2`, or for several outputs `f(1) -> label="a", score=0.5`')
        return Example(span, self._ident(name), self._tok(name), args, keywords, values[0] if values else None,
                       named)

    def example_fails(self, meta, children):
        name, arguments, word, text = children
        if str(word) != "fails":
            self.sink.error(f"expected an expected value or `fails \"message\"` after `->`, got `{word}`",
                            self._tok(word), 'to expect an error, write `-> fails "part of its message"`')
        args = tuple(a for a in arguments or () if not isinstance(a, Keyword))
        keywords = tuple(a for a in arguments or () if isinstance(a, Keyword))
        message = Const(self._tok(text), self._string_value(text), str(text))
        return Example(self._span(meta), self._ident(name), self._tok(name), args, keywords, None, (), message)

    def expect_stmt(self, meta, children):
        return Expect(self._span(meta), children[0], children[1])

    def assume_stmt(self, meta, children):
        return Assume(self._span(meta), children[0], children[1])
