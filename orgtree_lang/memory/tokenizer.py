"""Token counts and token-boundary cuts for one model, offline (tiktoken via models.tokens, else ~4 chars a token)."""

from __future__ import annotations

from orgtree_lang.models.tokens import tiktoken_encoding


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

    def head(self, text: str, limit: int) -> str:
        """The longest prefix of `text` that ends between two tokens and two characters and has <= `limit` tokens."""
        if limit <= 0:
            return ""
        if self.encoding is None:
            return text[: limit * 4]
        ids = self.encoding.encode_ordinary(text)
        if len(ids) <= limit:
            return text
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
