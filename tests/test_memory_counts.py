"""Counting each text once: a Ruler's range counts equal tiktoken's count of the range on its own, pieces cut
with it equal pieces cut by counting every range afresh, and the faster extractive summarizer picks the same
sentences as the plain formula."""

from __future__ import annotations

import math
import random
import re
import sysconfig
from collections import Counter
from pathlib import Path

import pytest

from orgtree_lang.memory.split import split_text
from orgtree_lang.memory.summarize import _SENTENCE_END, _WORD, STOPWORDS, ExtractiveSummarizer
from orgtree_lang.memory.tokenizer import Ruler, Tokenizer

# Junctions where a line's count does or does not add up: blank lines, indents, "/" after a newline (the
# punctuation rule's [\r\n/]* tail), CRLF, tabs, non-breaking spaces, a lone \x1c, numbers, contractions.
TRICKY = ("def f(x):\n    return x  \n\n\n  \t\n# heading\n//comment.\n/path/to/x.\n\r\nnext line's end\r\n"
          "   \xa0indent\n\x1cgroup\n12345678 apples\n   \n\tTab-led line.\n\n\nLast line without newline   ")


def corpus() -> list[str]:
    root = Path(sysconfig.get_paths()["stdlib"])
    texts = [TRICKY, TRICKY * 7, "\n".join(["a" * 300] * 5), "héllo wörld\n\nçava?\n  ñ\n" * 40]
    for name in ("textwrap.py", "json/encoder.py", "difflib.py"):
        path = root / name
        if path.exists():
            texts.append(path.read_text(encoding="utf-8"))
    return texts


class FreshCounts(Ruler):
    """Counts every range by tokenizing it on its own: what splitting did before rulers."""

    def __init__(self, tokenizer: Tokenizer, text: str) -> None:
        self.tokenizer, self.text = tokenizer, text

    def count(self, a: int, b: int) -> int:
        return self.tokenizer.count(self.text[a:b])


class FreshTokenizer(Tokenizer):
    def ruler(self, text: str) -> Ruler:
        return FreshCounts(self, text)


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4", "text-davinci-003"])
def test_a_ruler_counts_any_range_as_tokenizing_it_alone(model):
    tokenizer = Tokenizer(model)
    rng = random.Random(7)
    for text in corpus():
        ruler = tokenizer.ruler(text)
        lines = [0] + [m.end() for m in re.finditer("\n", text)] + [len(text)]
        ranges = [(0, len(text))] + [sorted(rng.sample(lines, 2)) for _ in range(60)]
        ranges += [sorted(rng.sample(range(len(text) + 1), 2)) for _ in range(30)]
        for start in rng.sample(lines, min(len(lines), 60)):  # short ranges, where heads and tails matter most
            ranges.append((start, min(len(text), start + rng.randrange(1, 400))))
        for a, b in ranges:
            assert ruler.count(a, b) == tokenizer.count(text[a:b]), (model, a, b, text[a:b][:80])


def test_the_ruler_really_skips_retokenizing_whole_lines():
    tokenizer = Tokenizer("gpt-4o")
    text = "alpha beta\ngamma delta\n" * 50
    ruler = tokenizer.ruler(text)
    assert len(ruler.points) > 90  # nearly every newline is a break: the next line starts with a letter
    calls = []
    tokenizer.count = lambda piece: calls.append(piece) or Tokenizer.count(tokenizer, piece)
    assert ruler.count(0, len(text)) == len(tokenizer.encoding.encode_ordinary(text))
    assert ruler.count(11, 23 * 20 + 11) == len(tokenizer.encoding.encode_ordinary(text[11:23 * 20 + 11]))
    assert calls == []


@pytest.mark.parametrize("limit", [7, 50, 200])
def test_pieces_cut_with_a_ruler_are_the_pieces_cut_by_counting_afresh(limit):
    for text in corpus():
        assert split_text(text, limit, Tokenizer("gpt-4o")) == split_text(text, limit, FreshTokenizer("gpt-4o"))


def plain_summary(text: str, target_tokens: int) -> str:
    """The extractive summarizer's formula written out directly (the faster one must choose the same)."""
    units = [u.strip() for line in text.splitlines() for u in _SENTENCE_END.split(line)]
    units = [u for u in units if u]
    counts = Counter(w.lower() for w in _WORD.findall(text))
    for word in STOPWORDS:
        counts.pop(word, None)

    def score(i: int) -> float:
        words = [w.lower() for w in _WORD.findall(units[i])]
        if not words:
            return 0.0
        return sum(math.log1p(counts.get(w, 0)) for w in words) / math.sqrt(len(words)) + (0.5 if i == 0 else 0.0)

    if not units:
        return ""
    ranked = sorted(range(len(units)), key=lambda i: (-score(i), i))
    chosen, spent, allowance = [], 0, target_tokens * 4
    for i in ranked:
        if spent + len(units[i]) + 1 > allowance:
            continue
        chosen.append(i)
        spent += len(units[i]) + 1
        if spent >= allowance * 0.9:
            break
    return "\n".join(units[i] for i in sorted(chosen or ranked[:1]))


@pytest.mark.parametrize("target", [5, 40, 400])
def test_the_extractive_summarizer_chooses_what_its_formula_says(target):
    odd = "The Kelvin sign \u212aelvin and \u0130stanbul lower to ASCII letters. Ties tie. Ties tie. the the the.\n"
    # Every line break str.splitlines knows, a closing mark at a line's end, and whitespace that is no line break.
    breaks = ("Carriage returns.\r\nForm feed.\x0cNext (paren.)\nTab\x1fsep. \x1e Record sep!\x85Next line?"
              "\u2028Line sep.\u2029Para sep.\x0bVertical tab.  \n\n  Indented \"quote.\"  End")
    for text in corpus() + [odd * 5, breaks * 3, "\n\n", "... \n x"]:
        assert ExtractiveSummarizer().summarize(text, target, Tokenizer("gpt-4o")) == plain_summary(text, target)
