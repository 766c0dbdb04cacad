"""Summarizers: a text and a target length in tokens in, a shorter text out (extractive offline, or a Model)."""

from __future__ import annotations

import math
import re
from collections import Counter
from itertools import chain
from typing import Protocol

from orgtree_lang.memory.tokenizer import Tokenizer

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")
# A run of line breaks (those str.splitlines knows), or a sentence end followed by whitespace within a line.
_LINES = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
_UNIT_BREAK = re.compile(f"[{_LINES}]+|(?<=[.!?])[\"')\\]]*[^\\S{_LINES}]+")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_STOPWORDS = frozenset(
    "the and for that this with from are was were not but have has had you your its it's can will would "
    "should could into onto than then them they their there these those what when where which while who "
    "why how all any each other some such only also more most very just over under about after before "
    "between both been being does did doing our out off own same too via per one two self none true false "
    "return def class import".split())


class Summarizer(Protocol):
    """Anything with an `id` (part of the cache key: change it when the output would change) and `summarize`."""

    id: str

    def summarize(self, text: str, target_tokens: int, tokenizer: Tokenizer) -> str:
        """A summary of `text`, aiming at `target_tokens` tokens (longer answers are cut by the caller)."""


class ExtractiveSummarizer:
    """Deterministic and offline: keeps the sentences whose words are most frequent in the text, in text order."""

    id = "extractive-1"

    def summarize(self, text: str, target_tokens: int, tokenizer: Tokenizer) -> str:
        # One split of the whole text at line breaks (str.splitlines' set) and sentence ends, instead of a split
        # per line: the same units after stripping and dropping empty ones, in a few C calls.
        units = [unit for unit in map(str.strip, _UNIT_BREAK.split(text)) if unit]
        if not units:
            return ""
        # Words never span the line breaks, whitespace and closing marks the units are cut at, so the units'
        # words are the text's words: each unit is scanned once, for the counts and for its score.
        # Lowering an ASCII unit first finds the same words; other letters may lower to ASCII ones (K, İ).
        findall = _WORD.findall
        if text.isascii():
            unit_words = [findall(unit) for unit in map(str.lower, units)]
        else:
            unit_words = [findall(unit.lower()) if unit.isascii() else [w.lower() for w in findall(unit)]
                          for unit in units]
        counts = Counter(chain.from_iterable(unit_words))
        weight = {w: 0.0 if w in _STOPWORDS else math.log1p(c) for w, c in counts.items()}
        # Frequent words make a sentence central; the square root keeps long sentences from winning by size.
        # The opening often names the subject: it gets half a point more (when it has words at all).
        lookup = weight.__getitem__
        negated = [-(sum(map(lookup, words)) / math.sqrt(len(words))) if words else -0.0 for words in unit_words]
        if unit_words[0]:
            negated[0] -= 0.5
        # Sorting indexes (in order) by the negated score alone keeps equal scores in text order: the sort is stable.
        ranked = sorted(range(len(units)), key=negated.__getitem__)
        # A unit costs about its characters / 4 tokens; choose by that estimate, the caller cuts to the exact count.
        chosen: list[int] = []
        spent = 0
        allowance = target_tokens * 4
        for index in ranked:
            size = len(units[index]) + 1
            if spent + size > allowance:
                continue
            chosen.append(index)
            spent += size
            if spent >= allowance * 0.9:
                break
        if not chosen:
            chosen = [ranked[0]]
        return "\n".join(units[i] for i in sorted(chosen))


class ModelSummarizer:
    """Asks a Model (orgtree_lang.models) for a summary of at most the target length."""

    def __init__(self, model) -> None:
        self.model = model
        self.id = f"model:{model.name}:1"

    def summarize(self, text: str, target_tokens: int, tokenizer: Tokenizer) -> str:
        from orgtree_lang.models.base import Message

        words = max(1, int(target_tokens * 0.7))
        prompt = (f"Summarize the text below in at most {target_tokens} tokens (about {words} words). Keep names, "
                  f"numbers and decisions; leave out anything else. Answer with the summary only.\n\n"
                  f"<text>\n{text}\n</text>")
        answer = self.model.complete([Message("system", "You write faithful, dense summaries."),
                                      Message("user", prompt)])
        return answer.text.strip()


def fit_to(text: str, target_tokens: int, tokenizer: Tokenizer) -> str:
    """`text` if it has at most `target_tokens` tokens, else cut to fit: after the last whole line or sentence
    that fits when that keeps at least half of the allowance, else between tokens."""
    if tokenizer.count(text) <= target_tokens:
        return text
    head = tokenizer.head(text, target_tokens)
    boundary = max(head.rfind("\n"), head.rfind(". "))
    if boundary >= len(head) // 2:
        head = head[: boundary + 1]
    return head.rstrip() or head
