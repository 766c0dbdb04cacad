"""The calls that ask the human node: their signatures (read by the checker) and the answers they accept."""

from __future__ import annotations

from dataclasses import dataclass

from orgtree_lang.syntax import types as t

HUMAN = "human"  # the only node `ask` reaches so far; other nodes get messages (docs/org.md)


@dataclass(frozen=True)
class HumanCall:
    """`ask` or `approve`: the parameters it takes (all positional), what it returns, and how it reads."""

    name: str
    params: tuple[tuple[str, t.PipeType], ...]
    returns: t.PipeType
    signature: str


HUMAN_CALLS: dict[str, HumanCall] = {
    "ask": HumanCall("ask", (("node", t.STR), ("question", t.STR)), t.STR, 'ask("human", question: str) -> str'),
    "approve": HumanCall("approve", (("question", t.STR),), t.BOOL, "approve(question: str) -> bool"),
}

# The answers `approve` takes (in any case, spaces around ignored); nothing else counts as a yes or a no.
APPROVALS = {"yes": True, "true": True, "no": False, "false": False}
APPROVAL_WORDS = "yes, no, true or false"


def parse_approval(text: str) -> bool | None:
    """The bool an answer to `approve` means, or None when it is not one of APPROVAL_WORDS."""
    return APPROVALS.get(text.strip().lower())
