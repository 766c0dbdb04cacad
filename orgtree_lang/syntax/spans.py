"""Source positions: a Span names a file and a 1-based line/column range within it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Span:
    """A region of a source file; lines and columns are 1-based, end_col is exclusive."""

    file: str
    line: int
    col: int
    end_line: int
    end_col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    def to_list(self) -> list[int]:
        return [self.line, self.col, self.end_line, self.end_col]

    @classmethod
    def from_list(cls, file: str, data: list[int]) -> Span:
        return cls(file, *data)

    def merge(self, other: Span) -> Span:
        """The smallest span covering both."""
        start = min((self.line, self.col), (other.line, other.col))
        end = max((self.end_line, self.end_col), (other.end_line, other.end_col))
        return Span(self.file, start[0], start[1], end[0], end[1])


UNKNOWN = Span("<unknown>", 0, 0, 0, 0)
