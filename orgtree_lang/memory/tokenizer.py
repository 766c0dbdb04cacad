"""Token counts and token-boundary cuts for one model, offline (tiktoken via models.tokens, else ~4 chars a token)."""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from concurrent.futures import ThreadPoolExecutor, wait
from functools import lru_cache
from typing import Callable, Iterator

from orgtree_lang.models.tokens import tiktoken_encoding

# Encodings whose split pattern puts a newline and the whitespace before it in a pre-token that ends at the
# newline whenever the next line starts (after spaces or tabs) with a character that is neither whitespace nor
# "/": `\s*[\r\n]+` comes before every other whitespace rule, no rule has a lookbehind, and only the punctuation
# rule's `[\r\n/]*` tail can run on past a newline. Counts of such lines simply add up (see Ruler). GPT-2 style
# patterns (p50k_base) try `\s+(?!\S)` first, which leaves the newline to the next pre-token: not additive.
_LINE_ADDITIVE = frozenset({"o200k_base", "cl100k_base"})
# A newline after which counts add up; group 1 (the next line's indent) ends at the character that proves it.
_BREAK = re.compile(r"\n(?!/)([ \t]*)(?=\S)")


class Tokenizer:
    """Counts a model's tokens in a text and cuts texts only between whole tokens and whole characters."""

    def __init__(self, model_name: str) -> None:
        self.model_name = model_name
        self.encoding = tiktoken_encoding(model_name)

    def count(self, text: str) -> int:
        if self.encoding is None:
            return (len(text) + 3) // 4
        return len(self.encoding.encode_ordinary(text))

    def count_many(self, texts: list[str]) -> list[int]:
        if self.encoding is None:
            return [(len(t) + 3) // 4 for t in texts]
        # Not encode_ordinary_batch: it starts a thread pool on every call, which costs more than it saves for
        # the short lists of pieces counted here (it made tree builds several times slower).
        encode = self.encoding.encode_ordinary
        return [len(encode(t)) for t in texts]

    def ids(self, text: str):
        """The token ids of `text` as a numpy array (tiktoken writes them into it: no list of ints is made), or
        None without tiktoken. The same ids as `encode_ordinary`: no special token is allowed, none is refused."""
        if self.encoding is None:
            return None
        if hasattr(self.encoding, "encode_to_numpy"):
            return self.encoding.encode_to_numpy(text, disallowed_special=())
        import numpy

        return numpy.asarray(self.encoding.encode_ordinary(text), dtype=numpy.int64)

    def ids_ahead(self, texts: list[str]) -> Iterator:
        """`ids` of each text, in order, made in batches of about BATCH_CHARS characters, each batch tokenized on
        two threads while the caller waits (see _in_batches for why it waits)."""
        if self.encoding is None or len(texts) < 2:
            return map(self.ids, texts)
        return _in_batches(self.ids, texts)

    def ruler(self, text: str, ids=None) -> Ruler:
        """Exact counts of ranges of `text`, each line tokenized once (see Ruler); `ids` if already tokenized."""
        return Ruler(self, text, ids)

    def head(self, text: str, limit: int, ids: list[int] | None = None) -> str:
        """The longest prefix of `text` that ends between two tokens and two characters and has <= `limit` tokens
        (`ids`: the text's tokens, when the caller has them)."""
        if limit <= 0:
            return ""
        if self.encoding is None:
            return text[: limit * 4]
        if ids is None:
            ids = self.encoding.encode_ordinary(text)
        if len(ids) <= limit:
            return text
        try:  # the usual case, in one call: the first `limit` tokens end on a whole character
            prefix = self.encoding.decode_bytes(ids[:limit]).decode("utf-8")
        except UnicodeDecodeError:
            pieces = self.encoding.decode_tokens_bytes(ids[:limit])
            data = b"".join(pieces)
            # Drop whole tokens from the end until the bytes are whole UTF-8 characters.
            while pieces:
                try:
                    prefix = data.decode("utf-8")
                    break
                except UnicodeDecodeError:
                    data = data[: len(data) - len(pieces.pop())]
            else:
                return ""
        # Re-encoding a cut text can merge differently; shrink until the count is really within the limit.
        while prefix and self.count(prefix) > limit:
            prefix = self.head(prefix, max(0, limit - (self.count(prefix) - limit)))
        return prefix

    def cut_points(self, text: str, limit: int) -> list[int]:
        """Character offsets that cut `text` into runs of <= `limit` tokens, each cut between whole tokens."""
        if self.encoding is None:
            return list(range(limit * 4, len(text), limit * 4))
        cuts: list[int] = []
        done = 0  # characters of `text` already in runs
        token_bytes = self.encoding.decode_tokens_bytes(self.encoding.encode_ordinary(text))
        i = 0
        while i < len(token_bytes):
            run, take = _whole_characters(token_bytes, i, limit)
            if self.count(run) > limit:
                # Re-encoded on its own the run merges differently (rare): shorten it, then re-read the rest.
                run = self.head(run, limit) or run[:1]
                done += len(run)
                token_bytes = self.encoding.decode_tokens_bytes(self.encoding.encode_ordinary(text[done:]))
                i = 0
            else:
                done += len(run)
                i += take
            if i < len(token_bytes):
                cuts.append(done)
        return cuts


class Ruler:
    """Token counts of character ranges `text[a:b]`, each equal to `Tokenizer.count(text[a:b])`, made by tokenizing
    the whole text once and reading off how many of its tokens end before each "break" (a newline at which
    counts add up, see _LINE_ADDITIVE: no token crosses one).

    A range is counted as its head up to the first break inside it, the tokens between that break and the last
    one whose proving character is inside the range (or that ends it), and the tail after that. Head and tail
    are parts of a line or a few lines, tokenized on their own; ranges cut on lines usually have neither.
    """

    def __init__(self, tokenizer: Tokenizer, text: str, ids=None) -> None:
        self.tokenizer = tokenizer
        self.text = text
        self.points = [0, len(text)]   # 0, the breaks in order, len(text)
        self.proofs = [-1, len(text)]  # for a break, the first character after it that is not a space or tab
        self.tokens_before: list[int] | None = None  # tokens of text[:point] for each point
        self.at: dict[int, int] = {}  # point -> tokens_before
        encoding = tokenizer.encoding
        if encoding is None or encoding.name not in _LINE_ADDITIVE:
            return
        import numpy

        spans = [m.span(1) for m in _BREAK.finditer(text)]
        starts, ends = zip(*spans) if spans else ((), ())
        self.points = [0, *starts, len(text)]
        self.proofs = [-1, *ends, len(text)]
        if text.isascii():
            offsets = numpy.asarray(self.points[1:-1], dtype=numpy.int64)
        else:
            sizes = [len(text[a:b].encode("utf-8")) for a, b in zip(self.points, self.points[1:-1])]
            offsets = numpy.cumsum(numpy.asarray(sizes, dtype=numpy.int64))
        tokens = tokenizer.ids(text) if ids is None else ids
        ends = numpy.cumsum(_token_sizes(encoding)[tokens])
        before = numpy.searchsorted(ends, offsets, side="right")
        self.tokens_before = [0] + before.tolist() + [len(tokens)]
        self.at = dict(zip(self.points, self.tokens_before))

    def count(self, a: int, b: int) -> int:
        if a >= b:
            return 0
        if self.tokens_before is None:
            return self.tokenizer.count(self.text[a:b])
        at = self.at
        if a in at and b in at:  # cut on lines, as most ranges are: the general case below says the same
            return at[b] - at[a]
        first = bisect_left(self.points, a)
        last = bisect_right(self.points, b) - 1
        if self.points[last] != b and self.proofs[last] >= b:
            last -= 1  # the range ends in the indent after that break: counts might not add up there
        if first > last:
            return self.tokenizer.count(self.text[a:b])
        start, stop = self.points[first], self.points[last]
        head = self.tokenizer.count(self.text[a:start]) if a < start else 0
        tail = self.tokenizer.count(self.text[stop:b]) if stop < b else 0
        return head + self.tokens_before[last] - self.tokens_before[first] + tail


def consecutive_runs(sizes: list[int], share: float) -> list[tuple[int, int]]:
    """(start, end) of consecutive runs of items, each closed once its sizes reach `share` (the last may be smaller):
    ids_ahead's batches, and the runs of texts extractive summary workers take."""
    runs: list[tuple[int, int]] = []
    start, total = 0, 0
    for i, size in enumerate(sizes):
        total += size
        if total >= share:
            runs.append((start, i + 1))
            start, total = i + 1, 0
    if start < len(sizes):
        runs.append((start, len(sizes)))
    return runs


# ids_ahead's batches: big enough that the two threads are rarely left with one long text, small enough that the ids
# of a batch (4 bytes a token) stay a few MB.
BATCH_CHARS = 4_000_000


def _in_batches(work: Callable, items: list, workers: int = 2, batch: int = BATCH_CHARS) -> Iterator:
    """`map(work, items)`, made a batch of about `batch` characters at a time on `workers` threads, each batch given
    out once it is whole; an exception is raised where its item would have been taken. Closing the iterator early
    cancels the rest.

    The caller waits while a batch is made because tiktoken lets go of the GIL to encode and needs it back after:
    a thread that finishes while the caller runs Python waits for the interpreter's switch interval (5 ms), a
    text at a time, and tokenizing ahead of the caller's cutting was slower than tokenizing in bursts."""
    pool = ThreadPoolExecutor(workers, thread_name_prefix="pipe-tokenize")
    try:
        for start, end in consecutive_runs([len(item) if isinstance(item, str) else 1 for item in items], batch):
            futures = [pool.submit(work, item) for item in items[start:end]]
            wait(futures)
            for future in futures:
                yield future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@lru_cache(maxsize=None)
def _token_sizes(encoding):
    """The byte length of every token of `encoding`, indexable by token id (a numpy array)."""
    import numpy

    sizes = numpy.zeros(encoding.max_token_value + 1, dtype=numpy.int64)
    ranks = getattr(encoding, "_mergeable_ranks", None)
    if ranks is not None:
        sizes[numpy.fromiter(ranks.values(), numpy.int64, len(ranks))] = numpy.fromiter(map(len, ranks), numpy.int64,
                                                                                         len(ranks))
        return sizes
    for token in range(encoding.max_token_value + 1):  # no private table in this tiktoken: slower, once
        try:
            sizes[token] = len(encoding.decode_single_token_bytes(token))
        except KeyError:
            continue
    return sizes


def _whole_characters(token_bytes: list[bytes], start: int, limit: int) -> tuple[str, int]:
    """The text of up to `limit` tokens from `start`, fewer if needed to end on a whole UTF-8 character."""
    end = min(start + limit, len(token_bytes))
    for stop in range(end, start, -1):
        try:
            return b"".join(token_bytes[start:stop]).decode("utf-8"), stop - start
        except UnicodeDecodeError:
            continue
    # One character spread over more tokens than `limit` (only for tiny limits): take it whole.
    for stop in range(end + 1, len(token_bytes) + 1):
        try:
            return b"".join(token_bytes[start:stop]).decode("utf-8"), stop - start
        except UnicodeDecodeError:
            continue
    return b"".join(token_bytes[start:]).decode("utf-8", errors="replace"), len(token_bytes) - start
