"""The memory's records: a Node (document, piece or summary) and a Span of original bytes it stands for."""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("document", "piece", "summary")


@dataclass(frozen=True)
class Span:
    """Bytes `start:end` of one stored document (`name` is where its text came from)."""

    document: int
    name: str
    start: int
    end: int

    def __str__(self) -> str:
        return f"{self.name or f'#{self.document}'} bytes {self.start}-{self.end}"


@dataclass(frozen=True)
class Node:
    """One node of the context tree, stored in state.db with its bytes in a blob.

    A document holds a whole text (a byte range of its blob: documents added together share a pack, see
    memory.pack_documents); its pieces (level 0) are consecutive byte ranges of that text that together cover it
    exactly; a summary (level >= 1) stands for its children, in order.
    """

    id: int
    kind: str
    level: int
    blob: str      # sha256 of the blob holding the node's bytes
    start: int     # byte range of the node's text in that blob
    end: int
    tokens: int
    document: int | None   # the document of a document or piece; None for a summary
    name: str = ""         # a document's source (a file name, a label)
    tags: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return f"#{self.id}"
