"""Critical review: an independent reviewer in a fresh conversation, a concern ledger, scope fixed by the spec.

See docs/review.md. Reused by the decomposer (and later by insights and skill promotion).
"""

from orgtree_lang.review.concerns import VERDICT_SCHEMA, Concern, Verdict
from orgtree_lang.review.errors import ReviewError, SelfReviewError
from orgtree_lang.review.ledger import ConcernLedger
from orgtree_lang.review.reviewer import ReviewOutcome, review_loop

__all__ = ["VERDICT_SCHEMA", "Concern", "ConcernLedger", "ReviewError", "ReviewOutcome", "SelfReviewError",
           "Verdict", "review_loop"]
