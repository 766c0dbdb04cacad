"""Errors of the review layer."""

from __future__ import annotations

from typing import Any

from orgtree_lang.runtime.errors import PipeError


class ReviewError(PipeError):
    """A review could not finish: malformed reviewer output twice, or blocking concerns left after the last round.

    `open_concerns` lists the blocking concerns still open (ledger rows as dicts); `outcome` is the
    ReviewOutcome so far (accepted=False) when there is one. The ledger keeps everything recorded.
    """

    def __init__(self, message: str, *, open_concerns: list[dict[str, Any]] | None = None,
                 outcome: Any = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.open_concerns = list(open_concerns or [])
        self.outcome = outcome
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class SelfReviewError(ReviewError):
    """Refused: the reviewer's conversation is the author's (or one already used), so it is not a fresh session."""
