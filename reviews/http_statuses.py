"""The HTTP status of every outcome code (`reviews.outcomes.Code`): the one table the
inbox's views, the review API and the `resume` command answer with. The services name
what happened; only the edge turns it into a status."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from reviews.outcomes import Code, Outcome

HTTP_STATUS: Mapping[Code, int] = MappingProxyType(
    {
        Code.ACCEPTED: 200,
        Code.APPROVAL_RECORDED: 202,
        Code.CLAIM_TAKEN: 200,
        Code.UNCLAIMED: 200,
        Code.REASSIGNED: 200,
        Code.EXTENDED: 200,
        Code.CANCELLED: 200,
        Code.NOT_FOUND: 404,
        Code.KEY_REUSED: 422,
        Code.ALREADY_DECIDED: 409,
        Code.GONE: 410,
        Code.NOT_ALLOWED: 403,
        Code.SELF_APPROVAL: 403,
        Code.CLAIMED: 409,
        Code.QUORUM: 409,
        Code.STALE: 409,
        Code.PAYLOAD_CHANGED: 409,
        Code.ALREADY_APPROVED: 409,
        Code.INVALID: 422,
        Code.BUSY: 409,
        Code.QUESTION_PENDING: 409,
        Code.NO_ACTIVE_RUN: 409,
        Code.NOT_CANCELLABLE: 409,
    }
)


def http_status(outcome: Outcome | str) -> int:
    """The status to answer `outcome` (or a bare code) with; `LookupError` for a code
    the table does not know, so a new code cannot go out with a guessed status."""
    code = outcome.code if isinstance(outcome, Outcome) else outcome
    try:
        return HTTP_STATUS[Code(code)]
    except (KeyError, ValueError):
        raise LookupError(
            f"No HTTP status for the outcome code {code!r}: add it to reviews.outcomes.Code "
            "and reviews.http_statuses.HTTP_STATUS."
        ) from None


__all__ = ["HTTP_STATUS", "http_status"]
