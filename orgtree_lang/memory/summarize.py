"""Summarizers: a text and a target length in tokens in, a shorter text out (extractive offline, or a Model)."""

from __future__ import annotations

import math
import re
from collections import Counter
from itertools import chain
from typing import Protocol

from orgtree_lang.memory.tokenizer import Tokenizer

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")
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
        units = [unit.strip() for line in text.splitlines() for unit in _SENTENCE_END.split(line)]
        units = [u for u in units if u]
        if not units:
            return ""
        # Words never span the line breaks, whitespace and closing marks the units are cut at, so the units'
        # words are the text's words: each unit is scanned once, for the counts and for its score.
        # Lowering an ASCII unit first finds the same words; other letters may lower to ASCII ones (K, İ).
        unit_words = [_WORD.findall(unit.lower()) if unit.isascii() else [w.lower() for w in _WORD.findall(unit)]
                      for unit in units]
        counts = Counter(chain.from_iterable(unit_words))
        weight = {w: 0.0 if w in _STOPWORDS else math.log1p(c) for w, c in counts.items()}

        def score(index: int) -> float:
            words = unit_words[index]
            if not words:
                return 0.0
            # Frequent words make a sentence central; the square root keeps long sentences from winning by size.
            value = sum(map(weight.__getitem__, words)) / math.sqrt(len(words))
            return value + (0.5 if index == 0 else 0.0)  # the opening often names the subject

        # Sorting indexes (in order) by the negated score alone keeps equal scores in text order: the sort is stable.
        negated = [-score(i) for i in range(len(units))]
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
