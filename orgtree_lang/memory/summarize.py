"""Summarizers: a text and a target length in tokens in, a shorter text out (extractive offline, or a Model)."""

from __future__ import annotations

import hashlib
import math
import re
import time
from collections import Counter
from itertools import chain
from typing import Any, Callable, Protocol

from orgtree_lang.memory.tokenizer import Tokenizer

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")
# The line breaks str.splitlines knows.
_LINES = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_WORDS_AND_ENDS = re.compile(r"\n|[A-Za-z_][A-Za-z0-9_]{2,}")
# A sentence end followed by whitespace within a line; the end mark is kept (group 1), closing marks are not.
_SENTENCE_BREAK = re.compile(f"([.!?])[\"')\\]]*[^\\S{_LINES}]+")
STOPWORDS = frozenset(
    "the and for that this with from are was were not but have has had you your its it's can will would "
    "should could into onto than then them they their there these those what when where which while who "
    "why how all any each other some such only also more most very just over under about after before "
    "between both been being does did doing our out off own same too via per one two self none true false "
    "return def class import".split())


def content_words(text: str) -> set[str]:
    """The words of `text` that carry meaning (three letters or more, no stop word), lower-cased, with a plural or
    past-tense ending taken off, for telling whether two short texts are about the same thing."""
    out = set()
    for word in _WORD.findall(text.lower()):
        if word in STOPWORDS or word in ("else", "like", "must", "may"):
            continue
        for ending in ("ing", "ed", "es", "s"):
            if word.endswith(ending) and len(word) - len(ending) >= 4:
                word = word[: -len(ending)]
                break
        out.add(word)
    return out


def text_units(text: str) -> list[str]:
    """The sentences and lines of `text` (cut at every line break str.splitlines knows and at a sentence end
    followed by whitespace), stripped, the empty ones left out. The sentence split's pattern starts with the end
    mark, so the regex engine skips ahead to the next one (a pattern that also matched line breaks, or looked
    behind for the mark, was tried at every character: 4x slower); lines are split by str.splitlines."""
    parts = _SENTENCE_BREAK.split(text)
    chunks = [chunk + end for chunk, end in zip(parts[0::2], parts[1::2])]
    chunks.append(parts[-1])
    return [unit for unit in map(str.strip, chain.from_iterable(map(str.splitlines, chunks))) if unit]


class Summarizer(Protocol):
    """Anything with an `id` (part of the cache key: change it when the output would change) and `summarize`."""

    id: str

    def summarize(self, text: str, target_tokens: int, tokenizer: Tokenizer) -> str:
        """A summary of `text`, aiming at `target_tokens` tokens (longer answers are cut by the caller)."""


class ExtractiveSummarizer:
    """Deterministic and offline: keeps the sentences whose words are most frequent in the text, in text order."""

    id = "extractive-1"

    def summarize(self, text: str, target_tokens: int, tokenizer: Tokenizer) -> str:
        import numpy

        units = text_units(text)
        if not units:
            return ""
        # Words never span the line breaks, whitespace and closing marks the units are cut at, so one scan of the
        # units joined by line breaks finds each unit's words, each unit's end marked by its "\n". Words are ASCII
        # letters: lowering them once found is what lowering an ASCII unit first does, and what the formula does
        # for other units (lowering those first could turn K or İ into ASCII letters).
        found = _WORDS_AND_ENDS.findall("\n".join(units))
        # Counted as spelled, then each spelling lowered once (far fewer than the words) and its count added in.
        spelled = Counter(found)
        spelled.pop("\n", None)
        counts: dict[str, int] = {}
        for word, count in spelled.items():
            lowered = word.lower()
            counts[lowered] = counts.get(lowered, 0) + count
        weight = {w: 0.0 if w in STOPWORDS else math.log1p(c) for w, c in counts.items()}
        by_spelling = {w: weight[w.lower()] for w in spelled}
        by_spelling["\n"] = math.nan  # marks the ends of units below
        values = numpy.fromiter(map(by_spelling.__getitem__, found), numpy.float64, len(found))
        ends = numpy.isnan(values)
        words = ~ends
        unit_of = numpy.cumsum(ends)[words]
        # bincount adds each unit's weights one after another, in text order: the sum `sum()` makes.
        sums = numpy.bincount(unit_of, weights=values[words], minlength=len(units))
        sizes = numpy.bincount(unit_of, minlength=len(units))
        # Frequent words make a sentence central; the square root keeps long sentences from winning by size.
        # The opening often names the subject: it gets half a point more (when it has words at all).
        negated = numpy.zeros(len(units))
        some = sizes > 0
        negated[some] = -(sums[some] / numpy.sqrt(sizes[some]))
        if sizes[0]:
            negated[0] -= 0.5
        # A stable sort of the negated scores keeps equal scores in text order.
        ranked = numpy.argsort(negated, kind="stable").tolist()
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


SUMMARY_SYSTEM = ("You write the summaries of a context tree: other agents read them instead of the original text and "
                  "search them to find the part to open. Be faithful: state only what the text says.")
# Model summaries are written this many at a time (a round of the context tree is one batch): they wait on the
# provider, not on this machine's cores.
SUMMARY_WORKERS = 4


def summary_prompt(text: str, target_tokens: int) -> str:
    """The request for one summary: what it covers first, then the facts a reader would search for."""
    words = max(1, int(target_tokens * 0.7))
    return (f"Summarize the text below in at most {target_tokens} tokens (about {words} words).\n"
            "Begin with one line `Covers: ...` saying what the text is about and where it starts and ends "
            "(sections, dates, ids, line ranges when the text has them). Then keep every fact a reader might search "
            "for: numbers with what they count or measure, names (people, places, files, functions, products), "
            "dates and times, error messages and codes, decisions and their reasons. When the text lists many "
            "similar items, say how many there are and their range instead of dropping them. Leave out wording, "
            "repetition and filler. Answer with the summary only.\n\n"
            f"<text>\n{text}\n</text>")


class SummaryCalls(Protocol):
    """How a batch of summary requests reaches a model: one answer text (or the exception it raised) per request,
    in order. `ThreadedCalls` runs them side by side; a run's version also meters and journals them."""

    def __call__(self, model, requests: list[list]) -> list[str | Exception]: ...


class ThreadedCalls:
    """Up to `workers` requests at a time, on threads of their own or on `submit` (an executor's, see
    vm/executor.py). With `spend` (the run tree's meter: vm.budget ModelSpend or NodeSpend), the batch is checked
    against the budget before it starts and each answer is charged as it is collected, on the calling thread."""

    def __init__(self, workers: int = SUMMARY_WORKERS, *, submit: Callable[[Callable[[], Any]], Any] | None = None,
                 spend: Any = None, what: str = "summarizing for the context tree") -> None:
        self.workers, self.submit, self.spend, self.what = max(1, workers), submit, spend, what

    def __call__(self, model, requests: list[list]) -> list[str | Exception]:
        if self.spend is not None:
            self.spend.check(f"a call of {model.name} for {self.what}")

        def ask(messages):
            started = time.time()
            try:
                return model.complete(messages), started
            except Exception as err:  # noqa: BLE001 - handed back in its place; the caller raises the first
                return err, started

        def run_all() -> list:
            if len(requests) == 1 or (self.workers == 1 and self.submit is None):
                return [ask(messages) for messages in requests]
            if self.submit is not None:
                return [future.result() for future in [self.submit(lambda m=m: ask(m)) for m in requests]]
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(min(self.workers, len(requests)), thread_name_prefix="pipe-summary") as pool:
                return list(pool.map(ask, requests))

        # An ambiguous block's spend lets go of the run lock while its calls wait, so other blocks go on.
        away = getattr(self.spend, "away", None)
        done = away(run_all) if away is not None else run_all()
        return [self._charged(model, answer, started) for answer, started in done]

    def _charged(self, model, answer, started: float) -> str | Exception:
        if isinstance(answer, Exception):
            if self.spend is not None:
                self.spend.ended(model.name, 0, 0, 0.0, started, answer)
            return answer
        if self.spend is not None:
            usage = answer.usage
            self.spend.charge(usage.prompt_tokens + usage.completion_tokens, usage.cost,
                              f"a call of {model.name} for {self.what}")
            self.spend.ended(answer.model or model.name, usage.prompt_tokens, usage.completion_tokens, usage.cost,
                             started, None)
        return answer.text


class ModelSummarizer:
    """Asks a Model (orgtree_lang.models) for each summary: what the text covers, and the facts a reader would
    search for, within the target length. `summarize_many` writes a whole round of the context tree at once
    through `calls` (default: ThreadedCalls, SUMMARY_WORKERS at a time); `journal(digests, ask)` makes each batch
    one journaled step of a durable run (decompose/protocol.py gives it)."""

    VERSION = 2  # part of the cache key: a new prompt makes new summaries

    def __init__(self, model, *, calls: SummaryCalls | None = None,
                 journal: Callable[[list[str], Callable[[], list]], list] | None = None) -> None:
        self.model = model
        self.id = f"model:{model.name}:{self.VERSION}"
        self.calls = calls or ThreadedCalls()
        self.journal = journal

    def summarize(self, text: str, target_tokens: int, tokenizer: Tokenizer) -> str:
        return self.summarize_many([text], target_tokens, tokenizer)[0]

    def summarize_many(self, texts: list[str], target_tokens: int, tokenizer: Tokenizer,
                       keep: Callable[[int, str], None] | None = None) -> list[str]:
        """One summary per text, in order. If a request fails, the summaries that did come are handed to
        `keep(index, text)` first (the context tree caches them: nothing written is lost), then the error is raised."""
        from orgtree_lang.models.base import Message

        requests = [[Message("system", SUMMARY_SYSTEM), Message("user", summary_prompt(text, target_tokens))]
                    for text in texts]

        def ask() -> list[str]:
            answers = self.calls(self.model, requests)
            failed = next((a for a in answers if isinstance(a, Exception)), None)
            if failed is not None:
                for index, answer in enumerate(answers):
                    if keep is not None and not isinstance(answer, Exception):
                        keep(index, answer.strip())
                raise failed
            return [a.strip() for a in answers]

        if self.journal is None:
            return ask()
        digests = [hashlib.sha256(text.encode("utf-8")).hexdigest()[:24] for text in texts]
        return list(self.journal([*digests, f"{target_tokens} tokens"], ask))


def summarize_many(summarizer: Summarizer, texts: list[str], target_tokens: int, tokenizer: Tokenizer,
                   keep: Callable[[int, str], None] | None = None) -> list[str]:
    """`summarizer.summarize_many` when it has one (a model's: written side by side, `keep` as it says), else
    one at a time."""
    many = getattr(summarizer, "summarize_many", None)
    if many is not None:
        return many(texts, target_tokens, tokenizer, keep)
    return [summarizer.summarize(text, target_tokens, tokenizer) for text in texts]


def fit_counted(text: str, target_tokens: int, tokenizer: Tokenizer) -> tuple[str, int]:
    """`text` if it has at most `target_tokens` tokens, else cut to fit: after the last whole line or sentence
    that fits when that keeps at least half of the allowance, else between tokens; and the token count of what it
    gives, the text tokenized once more at most (only when cut)."""
    if tokenizer.encoding is None:
        tokens, ids = tokenizer.count(text), None
    else:
        ids = tokenizer.encoding.encode_ordinary(text)
        tokens = len(ids)
    if tokens <= target_tokens:
        return text, tokens
    head = tokenizer.head(text, target_tokens, ids)
    boundary = max(head.rfind("\n"), head.rfind(". "))
    if boundary >= len(head) // 2:
        head = head[: boundary + 1]
    head = head.rstrip() or head
    return head, tokenizer.count(head)
