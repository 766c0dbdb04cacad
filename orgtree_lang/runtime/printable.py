"""Program-controlled text made safe to show a person: control characters become visible escapes.

A program (or a model, or a message a run received) chooses the text of its questions, printed lines, values
and names. Shown raw on a terminal, a carriage return plus an erase sequence rewrites the question a person
reads before `pipe reply`, and OSC sequences act on the terminal (set its title, write its clipboard, make
links); in a server-sent event a bare carriage return ends a line. Every human-facing print of such text goes
through `printable`, so what the person sees is what the program sent, spelled out.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls; the Unicode line and paragraph separators; the bidirectional
# embeddings, overrides and isolates (which reorder what a terminal or browser shows: "Trojan source").
_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_HIDDEN_OR_NEWLINE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\r": "\\r", "\n": "\\n", "\x1b": "\\x1b", "\x00": "\\0", "\b": "\\b", "\f": "\\f", "\v": "\\v"}


def _escape(match: re.Match) -> str:
    char = match.group(0)
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object, *, one_line: bool = False) -> str:
    """`text` with every control character shown as an escape (`\\r`, `\\x1b`, `\\u202e`); tabs stay, and newlines
    too unless `one_line` (a hint, a table cell, a status line)."""
    text = "" if text is None else str(text)
    return (_HIDDEN_OR_NEWLINE if one_line else _HIDDEN).sub(_escape, text)
