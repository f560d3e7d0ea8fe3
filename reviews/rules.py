"""The decision policy's rules: what a user may answer on an item now, and why not.

`decision_offer` is what the item page offers; `decision_refusal` what the decision
service enforces (`reviews.services.decide`). Both read the same rules of
`reviews.permissions` and `reviews.quorum`.
"""

from __future__ import annotations

from dataclasses import dataclass

from beamweaver_core.users import User
from reviews import quorum
from reviews.models import ReviewItem
from reviews.permissions import is_decider


@dataclass(frozen=True)
class Refusal:
    """Why a user may not do something to an item; `status` is the HTTP status."""

    status: int
    code: str
    message: str


def decision_refusal(user: User, item: ReviewItem, *, executes: bool) -> Refusal | None:
    """Why `user` may not answer `item` now (`None`: they may). `executes` says whether the
    answer lets something run (an approve or edit, or continuing past a breakpoint)."""
    if not is_decider(user, item):
        return Refusal(
            403,
            "not_allowed",
            "The review policy of this item does not let you decide it; a manager can "
            "reassign it to you.",
        )
    if executes and item.requested_by_id is not None and item.requested_by_id == user.pk:
        return Refusal(
            403,
            "self_approval",
            "You started this run, so you cannot approve it; another reviewer must.",
        )
    if item.claimed_by_id is not None and item.claimed_by_id != user.pk:
        claimer = item.claimed_by.get_username() if item.claimed_by else "another reviewer"
        return Refusal(
            409,
            "claimed",
            f"{claimer} claimed this item; ask them or a manager to release it.",
        )
    return None


@dataclass(frozen=True)
class DecisionOffer:
    """Which kinds of answer `decision_offer` lets a user give on an item now.

    `decide`: any answer at all; `execute`: answers that let something run (approve,
    edit, continue a breakpoint); `edit`: an edit. `why` names the rule that holds
    something back ("" when nothing is): `not_allowed`, `self_approval` (the user started
    the run) or `already_approved` (their approval counts towards a quorum already); an
    item that needs several approvals never offers an edit."""

    decide: bool
    execute: bool
    edit: bool
    why: str = ""


def decision_offer(user: User, item: ReviewItem) -> DecisionOffer:
    """What the item page offers `user` (the same rules `decision_refusal` enforces; a
    claim by someone else is left to the refusal, since it changes while the page is
    open)."""
    if not is_decider(user, item):
        return DecisionOffer(False, False, False, "not_allowed")
    if item.kind == "interrupt":  # answers, never approvals
        return DecisionOffer(True, True, True)
    edit = not quorum.applies(item)
    if item.requested_by_id is not None and item.requested_by_id == user.pk:
        return DecisionOffer(True, False, False, "self_approval")
    if quorum.applies(item) and any(a.user_id == user.pk for a in quorum.counted(item)):
        return DecisionOffer(True, False, False, "already_approved")
    return DecisionOffer(True, True, edit)


__all__ = ["DecisionOffer", "Refusal", "decision_offer", "decision_refusal"]
