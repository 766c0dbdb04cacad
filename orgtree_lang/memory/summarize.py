"""Summarizers: a text and a target length in tokens in, a shorter text out (extractive offline, or a Model)."""

from __future__ import annotations

import hashlib
import math
import os
import re
import time
from collections import Counter
from itertools import chain
from typing import Any, Callable, Protocol

from orgtree_lang.memory.tokenizer import Tokenizer, consecutive_runs

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
    """Deterministic and offline: keeps the sentences whose words are most frequent in the text, in text order.

    A round of the context tree with more than PARALLEL_CHARS of text is written by `processes` worker processes
    besides this one (default: one per spare core), since the work is Python and threads would take turns; the
    summaries are the same either way."""

    id = "extractive-1"

    def __init__(self, processes: int | None = None) -> None:
        self.processes = spare_cores() if processes is None else max(0, processes)

    def summarize(self, text: str, target_tokens: int, tokenizer: Tokenizer) -> str:
        return extract(text, target_tokens)

    def summarize_many(self, texts: list[str], target_tokens: int, tokenizer: Tokenizer,
                       keep: Callable[[int, str], None] | None = None) -> list[str]:
        """One summary per text, in order (none can fail, so `keep` is not needed). A subclass that changes
        `summarize` has it called for each text, in this process."""
        own = type(self).summarize is ExtractiveSummarizer.summarize
        if own and self.processes and len(texts) > 1 and sum(map(len, texts)) > PARALLEL_CHARS:
            return extract_on_cores(texts, target_tokens, self.processes)
        return [self.summarize(text, target_tokens, tokenizer) for text in texts]


# Lowering these gives ASCII letters (U+0130 "İ" gives "i" and a combining dot, U+212A the Kelvin sign "k"), so a
# text with one of them is lowered word by word, as found; lowering any other character keeps it out of words
# (tests/test_memory_summary_cores.py checks that over all of Unicode).
LOWERS_TO_ASCII = "\u0130\u212a"


def extract(text: str, target_tokens: int) -> str:
    """ExtractiveSummarizer's summary of `text` in about `target_tokens` tokens (a module function: worker processes
    run it too)."""
    import numpy

    units = text_units(text)
    if not units:
        return ""
    # Words never span the line breaks, whitespace and closing marks the units are cut at, so one scan of the
    # units joined by line breaks finds each unit's words, each unit's end marked by its "\n". Words are ASCII
    # letters, so the scan of the lowered text finds each word lowered (see LOWERS_TO_ASCII for the exceptions).
    joined = "\n".join(units)
    if not any(char in joined for char in LOWERS_TO_ASCII):
        found = _WORDS_AND_ENDS.findall(joined.lower())
    else:  # rare: lowered as found instead
        found = [word.lower() for word in _WORDS_AND_ENDS.findall(joined)]
    counts = Counter(found)
    counts.pop("\n", None)
    weight = {w: 0.0 if w in STOPWORDS else math.log1p(c) for w, c in counts.items()}
    weight["\n"] = math.nan  # marks the ends of units below
    values = numpy.fromiter(map(weight.__getitem__, found), numpy.float64, len(found))
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


# A round of extractive summaries over more characters than this is shared with worker processes: below it, starting
# one (about 0.2 s) costs more than it saves.
PARALLEL_CHARS = 4_000_000
# The texts go out in about this many runs per process, so the processes finish close together.
_RUNS_PER_PROCESS = 8
# Once this process has written its share, it waits this long (or 20 times its slowest run) for the workers' last
# runs before it stops them and writes those runs itself.
WORKER_PATIENCE = 10.0
# What a worker process runs.
WORKER_CODE = "from orgtree_lang.memory.summarize import serve_extracts; serve_extracts()"


def spare_cores() -> int:
    """The cores this process may use, less the one it runs on."""
    try:
        return len(os.sched_getaffinity(0)) - 1
    except AttributeError:  # not on Linux
        return (os.cpu_count() or 1) - 1


def extract_on_cores(texts: list[str], target_tokens: int, processes: int, *, help_out: bool = True) -> list[str]:
    """`extract` of each text, in order, by `processes` worker processes and (with `help_out`) this one.

    The texts are cut into consecutive runs. Each worker (`python -c` of `serve_extracts`, fed by a thread here)
    takes the next run from the front as it is free; this process takes runs from the back, so a worker's start-up
    delays nothing. A run a worker could not write (it did not start, died, or took far longer than the runs here)
    is written here: the summaries never depend on who wrote them."""
    import threading
    from collections import deque

    sizes = [len(text) for text in texts]
    runs = deque(consecutive_runs(sizes, sum(sizes) / ((processes + 1) * _RUNS_PER_PROCESS)))
    out: list[list[str] | None] = [None] * len(texts)
    lock = threading.Lock()
    workers = [_ExtractWorker() for _ in range(processes)]

    def take(front: bool) -> tuple[int, int] | None:
        with lock:
            return (runs.popleft() if front else runs.pop()) if runs else None

    def feed(worker: _ExtractWorker) -> None:
        while (run := take(front=True)) is not None:
            summaries = worker.extract(texts[run[0]:run[1]], target_tokens)
            if summaries is None:
                with lock:
                    runs.appendleft(run)  # this process writes it, when it gets there
                return
            out[run[0]:run[1]] = summaries

    feeders = [threading.Thread(target=feed, args=(w,), name="pipe-extract", daemon=True) for w in workers]
    for feeder in feeders:
        feeder.start()
    slowest = 0.0
    try:
        if help_out:
            while (run := take(front=False)) is not None:
                started = time.perf_counter()
                out[run[0]:run[1]] = [extract(text, target_tokens) for text in texts[run[0]:run[1]]]
                slowest = max(slowest, time.perf_counter() - started)
        patience = time.monotonic() + max(WORKER_PATIENCE, 20 * slowest)
        for feeder in feeders:
            feeder.join(max(0.0, patience - time.monotonic()))
    finally:  # a worker still busy (or left by an interrupt) is killed: its run is written below
        for worker in workers:
            worker.close()
        for feeder in feeders:
            feeder.join()
    return [extract(text, target_tokens) if done is None else done for text, done in zip(texts, out)]


class _ExtractWorker:
    """A Python process that writes extractive summaries for `extract_on_cores` (pickles over its stdin and stdout:
    it is our own child, started from this package)."""

    def __init__(self) -> None:
        import subprocess
        import sys

        import orgtree_lang

        # The worker imports this very package, wherever it was imported from: a checkout's folder goes first on
        # its path; an install's site-packages is on it already, and stays where it is.
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(orgtree_lang.__file__)))
        code = f"import sys\nif {package_root!r} not in sys.path: sys.path.insert(0, {package_root!r})\n{WORKER_CODE}"
        try:
            self.process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        except OSError:
            self.process = None

    def extract(self, texts: list[str], target_tokens: int) -> list[str] | None:
        """The summaries of `texts`, or None if the worker is gone."""
        import pickle

        if self.process is None:
            return None
        try:
            pickle.dump((texts, target_tokens), self.process.stdin, pickle.HIGHEST_PROTOCOL)
            self.process.stdin.flush()
            summaries = pickle.load(self.process.stdout)
        except (OSError, EOFError, pickle.UnpicklingError, ValueError):
            return None
        return summaries if isinstance(summaries, list) and len(summaries) == len(texts) else None

    def close(self) -> None:
        if self.process is None:
            return
        self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except OSError:
                pass


def serve_extracts() -> None:
    """A worker's loop: (texts, target tokens) in on stdin, their `extract` summaries out on stdout, until EOF."""
    import pickle
    import sys

    requests, answers = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            texts, target_tokens = pickle.load(requests)
        except EOFError:
            return
        pickle.dump([extract(text, target_tokens) for text in texts], answers, pickle.HIGHEST_PROTOCOL)
        answers.flush()


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
