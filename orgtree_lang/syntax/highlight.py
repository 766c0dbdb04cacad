"""A module's source as classed pieces (keyword, string, number, comment, definition, call) from the real lexer.

The run viewer colours generated modules with these, so what it shows as a keyword is what the parser reads as one.
Text the lexer cannot read (a module with a syntax error) is returned unclassed from that point on."""

from __future__ import annotations

from typing import NamedTuple

from lark.exceptions import LarkError

from orgtree_lang.syntax.parser import lark_parser, source_comments

_CLASSES = {"STRING": "string", "LONG_STRING": "string", "FSTRING": "string", "INT": "number", "FLOAT": "number"}
_DEFINERS = ("pipeline", "record", "ambiguous")


class Piece(NamedTuple):
    """A stretch of source text and its class ("" for text to show plainly)."""

    text: str
    kind: str


def highlighted(source: str) -> list[Piece]:
    """Cut `source` into pieces that join back into it exactly, each with the class of the token it belongs to."""
    marks: list[tuple[int, int, str]] = []
    offsets = _line_offsets(source)
    for line, col, text, _own_line in source_comments(source):
        start = offsets[line - 1] + col - 1
        marks.append((start, start + len(text), "comment"))
    tokens = [token for token in _tokens(source) if not token.type.startswith("_")]
    for index, token in enumerate(tokens):
        before = tokens[index - 1] if index else None
        after = tokens[index + 1] if index + 1 < len(tokens) else None
        kind = _CLASSES.get(token.type, "")
        if token.type != "NAME" and token.value.isidentifier():
            kind = "keyword"
        elif token.type == "NAME" and before is not None and before.type != "NAME" and before.value in _DEFINERS:
            kind = "definition"
        elif token.type == "NAME" and after is not None and after.value == "(":
            kind = "call"
        if kind:
            marks.append((token.start_pos, token.end_pos, kind))
    marks.sort()
    pieces, at = [], 0
    for start, end, kind in marks:
        if start < at:  # a `#` inside a string is no comment; source_comments already skips those
            continue
        if start > at:
            pieces.append(Piece(source[at:start], ""))
        pieces.append(Piece(source[start:end], kind))
        at = end
    if at < len(source):
        pieces.append(Piece(source[at:], ""))
    return pieces


def _tokens(source: str):
    """The lexer's tokens, up to the first text it cannot read."""
    try:
        yield from lark_parser().lex(source if source.endswith("\n") else source + "\n")
    except LarkError:
        return


def _line_offsets(source: str) -> list[int]:
    offsets, at = [0], 0
    for line in source.splitlines(keepends=True):
        at += len(line)
        offsets.append(at)
    return offsets
