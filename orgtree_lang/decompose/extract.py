"""Pull the one .pipe module out of a model's answer (code fences and prose around it are tolerated)."""

from __future__ import annotations

import re

from orgtree_lang.runtime.errors import PipeError

_FENCE = re.compile(r"```([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```", re.S)
_MODULE_START = re.compile(r"^\s*(#|use\b|record\b|pipeline\b)", re.M)


class ExtractError(PipeError):
    """The answer holds no module, or more than one; `kind` says which, the message says what to send back."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


def extract_module(answer: str) -> str:
    """The module's source: the single fenced block (a `pipe` block wins over others), or a bare module."""
    text = answer.strip()
    if not text:
        raise ExtractError("the answer is empty; reply with one ```pipe block holding the module", "empty")
    blocks = _FENCE.findall(text)
    if blocks:
        pipe_blocks = [body for lang, body in blocks if lang.lower() == "pipe"]
        if len(pipe_blocks) == 1:
            return pipe_blocks[0].strip() + "\n"
        if len(blocks) == 1:
            return blocks[0][1].strip() + "\n"
        raise ExtractError(f"the answer has {len(blocks)} code blocks; reply with exactly one ```pipe block "
                           "holding the whole module", "several")
    first_line = text.splitlines()[0]
    if _MODULE_START.match(first_line):
        return text + "\n"
    raise ExtractError("the answer is prose with no code; reply with one ```pipe block holding the module",
                       "no_code")
