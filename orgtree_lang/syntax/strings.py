"""Read string literals: a plain one to its value, an f-string into its literal text and parsed fields."""

from __future__ import annotations

import ast
import re

from lark import Token

from orgtree_lang.syntax import nodes as n
from orgtree_lang.syntax.spans import Span

def string_value(literal: str) -> str:
    """The value of a string literal as Python reads it; the quotes are cut off directly when nothing inside
    needs reading (no escape, no carriage return, no NUL), which is most literals and far cheaper."""
    if "\\" in literal or "\r" in literal or "\x00" in literal:
        return ast.literal_eval(literal)
    quotes = 3 if literal.startswith(('"""', "'''")) else 1
    return literal[quotes:-quotes]


_CONVERSION = re.compile(r"!\s*([rsa])\s*$")  # `{x!r}`: Python's conversions, which .pipe has not


class FStringReader:
    """Splits `f"a {x:>3} b"` into literal text and parsed expression fields."""

    def __init__(self, builder, token: Token) -> None:
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
        expr = self.builder.parse_field(expr_text, self.builder.file, line, col, self.builder.sink)
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
