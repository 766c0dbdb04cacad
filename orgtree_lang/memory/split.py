"""Cut a text into consecutive pieces of at most N tokens, on its structure: headings, paragraphs, lines,
sentences, words, and only then between tokens (never inside one)."""

from __future__ import annotations

import re
from typing import NamedTuple

from orgtree_lang.memory.tokenizer import Ruler, Tokenizer

# Where a text may be cut, coarsest first; a cut goes right after the match, so a separator stays with the
# text before it and the pieces, joined, are the text again. A heading is a Markdown `#` line, a line
# underlined with === / --- / ~~~ (reStructuredText), or a top-level `def` / `class` in Python source.
STRUCTURE = (
    ("heading", re.compile(r"\n(?=#{1,6} |(?:async )?def |class |[^\n]+\n(?:={3,}|-{3,}|~{3,})[ \t]*\n)")),
    ("paragraph", re.compile(r"\n[ \t]*\n+")),
    ("line", re.compile(r"\n")),
    ("sentence", re.compile(r"[.!?][\"')\]]*[ \t]+")),
    ("word", re.compile(r"[ \t]+")),
)


class Cut(NamedTuple):
    """One piece: characters `start:end` of the text, and its token count (a tuple: made by the hundred thousand)."""

    start: int
    end: int
    tokens: int


def split_text(text: str, limit: int, tokenizer: Tokenizer, ids=None) -> list[Cut]:
    """Consecutive pieces covering `text` exactly, each of at most `limit` tokens (counted on its own); `ids` are
    its token ids when they were made already (`Tokenizer.ids`)."""
    if limit < 1:
        raise ValueError(f"a piece needs at least 1 token, got a limit of {limit}")
    if len(text) <= 16 * limit or ids is not None:
        tokens = tokenizer.count(text) if ids is None else len(ids)
        if tokens <= limit:
            return [Cut(0, len(text), tokens)]
    # Every count below is of a range of this one text: the ruler tokenizes it once and adds up line counts,
    # where counting each range on its own re-tokenized the text once per structure level and again to pack.
    ruler = tokenizer.ruler(text) if ids is None else tokenizer.ruler(text, ids)
    out: list[Cut] = []
    _split(text, 0, len(text), limit, ruler, 0, out)
    return _absorb_blank(text, out, limit, ruler)


def _absorb_blank(text: str, cuts: list[Cut], limit: int, ruler: Ruler) -> list[Cut]:
    """Join a piece of nothing but whitespace to the piece before it when they fit together (a blank piece
    cannot be searched for and only lengthens views)."""
    merged: list[Cut] = []
    for cut in cuts:
        if merged and not text[cut.start:cut.end].strip():
            tokens = ruler.count(merged[-1].start, cut.end)
            if tokens <= limit:
                merged[-1] = Cut(merged[-1].start, cut.end, tokens)
                continue
        merged.append(cut)
    return merged


def _split(text: str, start: int, end: int, limit: int, ruler: Ruler, depth: int, out: list[Cut]) -> None:
    for level in range(depth, len(STRUCTURE)):
        # Every match is at least a character long and lies within start:end, so only the last can end at `end`.
        cuts = [m.end() for m in STRUCTURE[level][1].finditer(text, start, end)]
        if cuts and cuts[-1] == end:
            cuts.pop()
        if cuts:
            break
    else:
        bounds = [start] + [start + c for c in ruler.tokenizer.cut_points(text[start:end], limit)] + [end]
        out.extend(Cut(a, b, ruler.count(a, b)) for a, b in zip(bounds, bounds[1:]))
        return
    bounds = [start] + cuts + [end]
    parts = list(zip(bounds, bounds[1:]))
    counts = [ruler.count(a, b) for a, b in parts]
    group: list[Cut] = []
    total = 0
    for (a, b), count in zip(parts, counts):
        if count > limit:
            _pack(text, group, limit, ruler, out)
            group, total = [], 0
            _split(text, a, b, limit, ruler, level + 1, out)
            continue
        if group and total + count > limit:
            _pack(text, group, limit, ruler, out)
            group, total = [], 0
        group.append(Cut(a, b, count))
        total += count
    _pack(text, group, limit, ruler, out)


def _pack(text: str, group: list[Cut], limit: int, ruler: Ruler, out: list[Cut]) -> None:
    """Emit consecutive parts as one piece, checked by counting the joined text (joins can merge tokens)."""
    if not group:
        return
    if len(group) == 1:
        out.append(group[0])
        return
    start, end = group[0].start, group[-1].end
    tokens = ruler.count(start, end)
    if tokens <= limit:
        out.append(Cut(start, end, tokens))
        return
    half = len(group) // 2
    _pack(text, group[:half], limit, ruler, out)
    _pack(text, group[half:], limit, ruler, out)


def byte_ranges(text: str, cuts: list[Cut]) -> list[tuple[int, int]]:
    """The UTF-8 byte range of each piece."""
    ranges = []
    offset = 0
    for cut in cuts:
        size = len(text[cut.start:cut.end].encode("utf-8"))
        ranges.append((offset, offset + size))
        offset += size
    return ranges
