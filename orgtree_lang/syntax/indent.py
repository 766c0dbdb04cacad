"""Turn the whitespace after each newline into _INDENT/_DEDENT tokens, and refuse programs nested too deeply."""

from __future__ import annotations

from lark import Token
from lark.exceptions import LarkError
from lark.indenter import Indenter

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
