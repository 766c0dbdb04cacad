"""The language card (grammar/card.md): the one short description of .pipe that author and reviewer models read."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources

_BLOCK = re.compile(r"```pipe\n(.*?)```", re.S)
_EXPECT = re.compile(r"#\s*->\s*(.*)$")


@dataclass(frozen=True)
class CardExample:
    """One ```pipe block of the card: a whole module and the lines its `# -> X` comments say it prints."""

    source: str
    line: int  # of the block's first line in the card
    output: list[str]


@functools.lru_cache(maxsize=1)
def language_card() -> str:
    """The card's text, as the prompts include it."""
    return resources.files("orgtree_lang.grammar").joinpath("card.md").read_text(encoding="utf-8").strip()


def card_examples(card: str | None = None) -> list[CardExample]:
    """Every example module of the card, with its expected output in order."""
    card = language_card() if card is None else card
    examples = []
    for match in _BLOCK.finditer(card):
        source = match.group(1)
        output = [m.group(1).rstrip() for m in map(_EXPECT.search, source.splitlines()) if m]
        examples.append(CardExample(source, card.count("\n", 0, match.start(1)) + 1, output))
    return examples
