"""Turn Lark's parse exceptions into one Diagnostic saying what was expected, what was found, and a hint."""

from __future__ import annotations

import re

from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken
from lark.indenter import DedentError

from orgtree_lang.syntax.diagnostics import Diagnostic
from orgtree_lang.syntax.spans import Span
from orgtree_lang.syntax.words import KEYWORDS, RESERVED


TOKEN_NAMES = {
    "NAME": "a name", "INT": "a number", "FLOAT": "a number", "STRING": "a string",
    "LONG_STRING": "a string", "FSTRING": "an f-string", "_NL": "end of line",
    "_INDENT": "an indented block", "_DEDENT": "the end of the block", "$END": "end of file",
    "COLON": "`:`", "LPAR": "`(`", "RPAR": "`)`", "LSQB": "`[`", "RSQB": "`]`", "LBRACE": "`{`",
    "RBRACE": "`}`", "COMMA": "`,`", "EQUAL": "`=`", "DOT": "`.`", "OPTIONAL": "`?`",
    "RARROW": "`->`", "AUG_OP": "an assignment operator",
}


def _describe_token(token: Token) -> str:
    if token.type == "$END":
        return "end of file"
    if token.type == "_NL":
        return "end of line"
    if token.type == "_INDENT":
        return "an indented block"
    if token.type == "_DEDENT":
        return "the end of the block"
    return f"`{token.value}`"


_EXPRESSION_STARTS = {"NAME", "INT", "FLOAT", "STRING", "LONG_STRING", "FSTRING", "LSQB", "LBRACE", "LPAR",
                      "TRUE", "FALSE", "NONE", "NOT", "MINUS", "PLUS"}


def _describe_expected(expected: set[str]) -> str:
    names = []
    if {"NAME", "INT", "STRING"} <= expected:
        names.append("an expression")
        expected = expected - _EXPRESSION_STARTS
    for term in sorted(expected, key=lambda t: (t.startswith("_"), t)):
        label = TOKEN_NAMES.get(term)
        if label is None:
            pattern = None
            try:
                from orgtree_lang.syntax.parser import lark_parser

                pattern = lark_parser().get_terminal(term).pattern
            except KeyError:
                pass
            label = f"`{pattern.value}`" if pattern is not None and pattern.type == "str" else term.lower()
        if label not in names:
            names.append(label)
    if not names:  # Lark reports no expected token where none can follow (e.g. a comment ending an expression)
        return "something else"
    if len(names) > 6:
        return ", ".join(names[:6]) + " or something else"
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def parse_error_diagnostic(err: Exception, source: str, file: str) -> Diagnostic:
    """Turn a Lark exception into one Diagnostic that says what was expected and what was found."""
    if isinstance(err, DedentError):
        line = _line_of_bad_dedent(source)
        return Diagnostic(
            "error", "unindent does not match any outer indentation level", Span(file, line, 1, line, 2),
            "indent blocks consistently, e.g. always 4 spaces per level",
        )
    line, col = getattr(err, "line", 1) or 1, getattr(err, "column", 1) or 1
    if isinstance(err, UnexpectedCharacters):
        char = source[err.pos_in_stream] if err.pos_in_stream < len(source) else ""
        hint = None
        if char in "\"'":
            hint = "strings must close on the same line; use \"\"\"...\"\"\" for text spanning lines"
        elif char == "\t" or char == "$":
            hint = None
        return Diagnostic("error", f"unexpected character `{char}`", Span(file, line, col, line, col + 1), hint)
    if isinstance(err, UnexpectedToken):
        token = err.token
        if token.type == "$END" or line < 0:
            line = source.count("\n")
            col = 1
        end_col = col + max(len(str(token.value).split("\n")[0]), 1)
        expected = set(err.expected) | set(getattr(err, "accepts", None) or ())
        found = _describe_token(token)
        message = f"expected {_describe_expected(expected)}, got {found}"
        hint = _parse_hint(token, expected, source, line)
        if hint == _IMMUTABLE_HINT:
            message = "cannot assign to a field or an item"
        keyword = _keyword_assigned(token, source, line)
        if keyword is not None:
            word, col = keyword
            return Diagnostic("error", f"`{word}` is a keyword and cannot be used as a name",
                              Span(file, line, col, line, col + len(word)), f"choose another name, e.g. `my_{word}`")
        if token.type == "_INDENT":
            line, col, end_col = token.end_line, 1, len(str(token.value)) + 1
            message = "unexpected indentation"
            hint = "this line is indented more than the block it belongs to"
        elif "_INDENT" in expected:
            message = f"expected an indented block, got {found}"
            hint = "the lines of a block after `:` must be indented further than the line with the `:`"
        return Diagnostic("error", message, Span(file, line, col, line, end_col), hint)
    if isinstance(err, UnexpectedEOF):
        last = source.count("\n")
        return Diagnostic("error", "unexpected end of file", Span(file, last, 1, last, 2))
    return Diagnostic("error", str(err), Span(file, line, col, line, col + 1))


_IMMUTABLE_HINT = "values are immutable; build a new one instead, e.g. `d = dicts.set(d, \"key\", value)`"


def _parse_hint(token: Token, expected: set[str], source: str, line: int) -> str | None:
    if expected == {"_INDENT"} or "_INDENT" in expected and len(expected) == 1:
        return "a block after `:` must be indented"
    if "COLON" in expected and token.type == "_NL":
        return "add `:` at the end of the line to start a block"
    unclosed = _unclosed_bracket(source, token)
    if unclosed is not None and (token.type in ("$END", "_DEDENT", "_NL") or token.line > unclosed[1]):
        bracket, opened_on = unclosed
        return f"the `{bracket}` on line {opened_on} is never closed; close it with `{_CLOSERS[bracket]}`"
    before = source.splitlines()[line - 1][: token.column - 1] if 0 < line <= source.count("\n") + 1 else ""
    if token.type == "EQUAL" and re.search(r"[.\]]\s*[A-Za-z_0-9]*\s*$", before):
        return _IMMUTABLE_HINT
    if token.type == "EQUAL" and "EQUAL" not in expected:
        return "use `==` to compare; assignment is a statement of its own"
    if token.type == "NAME" and token.value in RESERVED:
        return f"`{token.value}` is reserved for a future version of .pipe"
    if token.type == "NAME" and "_NL" in expected:
        return "one statement per line; did you forget an operator or a comma?"
    return None


def _keyword_assigned(token: Token, source: str, line: int) -> tuple[str, int] | None:
    """The keyword and its column when the failing statement assigns to a keyword (`record = {}`, `pass = 1`)."""

    text = source.splitlines()[line - 1] if 0 < line <= source.count("\n") + 1 else ""
    match = re.match(r"^(\s*)([A-Za-z_]\w*)\s*(?:[-+*/%]|//)?=(?!=)", text)
    if match is None or match.group(2) not in KEYWORDS:
        return None
    if token.line != line or token.column - 1 > match.end():
        return None
    return match.group(2), len(match.group(1)) + 1


_CLOSERS = {"(": ")", "[": "]", "{": "}"}
_BRACKETS_AND_SKIPS = re.compile(
    r'f?"""(?:[^\\]|\\.)*?"""|f?\'\'\'(?:[^\\]|\\.)*?\'\'\'|f?"(?:[^"\\\n]|\\.)*"|f?\'(?:[^\'\\\n]|\\.)*\''
    r"|#[^\n]*|[()\[\]{}]",
    re.S,
)


def _unclosed_bracket(source: str, token: Token) -> tuple[str, int] | None:
    """The innermost bracket still open where `token` starts, with its line (strings and comments skipped)."""
    end = token.start_pos if isinstance(getattr(token, "start_pos", None), int) else len(source)
    stack: list[tuple[str, int]] = []
    for match in _BRACKETS_AND_SKIPS.finditer(source, 0, end):
        text = match.group()
        if text in _CLOSERS:
            stack.append((text, source.count("\n", 0, match.start()) + 1))
        elif text in ")]}":
            if stack and _CLOSERS[stack[-1][0]] == text:
                stack.pop()
    return stack[-1] if stack else None


def _line_of_bad_dedent(source: str) -> int:
    levels = [0]
    for number, text in enumerate(source.splitlines(), 1):
        stripped = text.lstrip(" \t")
        if not stripped or stripped.startswith("#"):
            continue
        width = len(text.expandtabs(8)) - len(stripped.expandtabs(8))
        if width > levels[-1]:
            levels.append(width)
        while width < levels[-1]:
            levels.pop()
        if width != levels[-1]:
            return number
    return 1
