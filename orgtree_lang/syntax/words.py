"""The language's words: keywords (never names), soft keywords (names except where they open a statement) and
reserved words (kept for later versions)."""

from __future__ import annotations

KEYWORDS = frozenset(
    {"use", "record", "pipeline", "if", "elif", "else", "while", "for", "in", "break", "continue",
     "pass", "try", "except", "fail", "return", "ambiguous", "and", "or", "not", "is", "true", "false", "none",
     "parallel", "spawn", "await", "cancel", "send", "on", "assume", "expect"}
)
SOFT_KEYWORDS = ("label", "goto", "route")
# Words kept for constructs of later versions; using them as names is an error now.
RESERVED = frozenset({"import"})
