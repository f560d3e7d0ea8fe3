"""N-of-M approvals: an item whose policy requires several approvals stays pending until
that many distinct eligible reviewers approved the payload it shows now.

Only approving every action (or continuing a breakpoint) is a vote. An answer that runs
nothing (every action rejected or answered) decides the item at once: any reject decides
it. An edit cannot be combined across reviewers, so it is refused on such an item; the
reviewer rejects with a message instead. A vote counts while its reviewer is still a
decider of the item, is not the user who started the run, and saw the current digest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from beamweaver_core.agent.review import EXECUTING_TYPES
from reviews.models import Approval, ReviewItem
from reviews.permissions import is_decider


def executes(item: ReviewItem, answer: Any) -> bool:
    """Whether `answer` lets something run: an approve or edit in a tool review, or
    continuing a breakpoint (read leniently: the answer may not be validated yet)."""
    if item.kind == ReviewItem.Kind.BREAKPOINT:
        return True
    if item.kind != ReviewItem.Kind.TOOL_REVIEW:
        return False
    decisions = answer.get("decisions") if isinstance(answer, dict) else answer
    if not isinstance(decisions, list):
        return False
    return any(
        isinstance(d, dict) and isinstance(d.get("type"), str) and d["type"] in EXECUTING_TYPES
        for d in decisions
    )


def applies(item: ReviewItem) -> bool:
    """Whether votes are counted for the item (tool reviews and breakpoints only)."""
    return item.needs_quorum and item.kind != ReviewItem.Kind.INTERRUPT


def problem(item: ReviewItem, decisions: Sequence[dict[str, Any]]) -> str | None:
    """Why a validated answer cannot be a vote on a quorum item (`None`: it can)."""
    types = {d["type"] for d in decisions}
    if types & EXECUTING_TYPES and types != {"approve"}:
        return (
            f"This item needs {item.required_approvals} approvals from different reviewers: "
            "approve every action, or reject; an edit cannot be combined across reviewers "
            "(reject with a message saying what to change instead)."
        )
    return None


def counted(item: ReviewItem) -> list[Approval]:
    """The approvals that count now, oldest first."""
    approvals = item.approvals.select_related("user").filter(digest_seen=item.digest)
    return [
        a
        for a in approvals
        if a.user.is_active and a.user_id != item.requested_by_id and is_decider(a.user, item)
    ]


def missing(item: ReviewItem) -> int:
    """How many more approvals the item needs."""
    return max(0, item.required_approvals - len(counted(item)))


__all__ = ["applies", "counted", "executes", "missing", "problem"]
