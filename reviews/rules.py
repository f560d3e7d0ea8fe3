"""The decision policy's rules: what a user may answer on an item now, and why not.

The rules are written once, in `RULES`; `decision_offer` (what the item page offers) and
`decision_refusal` (what the decision service enforces, `reviews.services.decide`) both
read them, so what is offered is exactly what is not refused. The one exception is
stated by the rule itself: a claim by someone else (`offered_anyway`) is left to the
refusal, since it changes while the page is open.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from beamweaver_core.users import User
from reviews import quorum
from reviews.models import ReviewItem
from reviews.outcomes import Code, Outcome
from reviews.permissions import is_decider


@dataclass(frozen=True)
class Rule:
    """One rule of the decision policy: `holds(user, item)` says it stands in the way of
    the user's answer, `explain(user, item)` says why. `executing_only`: it holds back only
    answers that let something run (an approve or edit, continuing a breakpoint);
    `offered_anyway`: the page offers the answer all the same (the service refuses it)."""

    code: Code
    holds: Callable[[User, ReviewItem], bool]
    explain: Callable[[User, ReviewItem], str]
    executing_only: bool = False
    offered_anyway: bool = False


def _started_the_run(user: User, item: ReviewItem) -> bool:
    return item.requested_by_id is not None and item.requested_by_id == user.pk


def _approved_already(user: User, item: ReviewItem) -> bool:
    return quorum.applies(item) and any(a.user_id == user.pk for a in quorum.counted(item))


def _claimed_by_another(user: User, item: ReviewItem) -> bool:
    return item.claimed_by_id is not None and item.claimed_by_id != user.pk


def _claimer(item: ReviewItem) -> str:
    return item.claimed_by.get_username() if item.claimed_by else "another reviewer"


RULES: tuple[Rule, ...] = (
    Rule(
        Code.NOT_ALLOWED,
        lambda user, item: not is_decider(user, item),
        lambda user, item: (
            "The review policy of this item does not let you decide it; a manager can "
            "reassign it to you."
        ),
    ),
    Rule(
        Code.SELF_APPROVAL,
        _started_the_run,
        lambda user, item: "You started this run, so you cannot approve it; another reviewer must.",
        executing_only=True,
    ),
    Rule(
        Code.ALREADY_APPROVED,
        _approved_already,
        lambda user, item: (
            f"You already approved this item; it needs {quorum.missing(item)} more "
            "approval(s) from other reviewers."
        ),
        executing_only=True,
    ),
    Rule(
        Code.CLAIMED,
        _claimed_by_another,
        lambda user, item: (
            f"{_claimer(item)} claimed this item; ask them or a manager to release it."
        ),
        offered_anyway=True,
    ),
)
"""The decision policy, in the order its refusals are reported."""


def can_execute(item: ReviewItem) -> bool:
    """Whether any answer to `item` lets something run (a question's answers never do)."""
    return item.kind != ReviewItem.Kind.INTERRUPT


def holds_back(code: Code, user: User, item: ReviewItem) -> bool:
    """Whether the rule `code` holds back some answer of `user` to `item` (a rule that
    holds back only executing answers, only on an item some answer lets run)."""
    rule = next(rule for rule in RULES if rule.code == code)
    return (can_execute(item) or not rule.executing_only) and rule.holds(user, item)


def decision_refusal(user: User, item: ReviewItem, *, executes: bool) -> Outcome | None:
    """Why `user` may not answer `item` now (`None`: they may). `executes` says whether the
    answer lets something run (`reviews.quorum.executes`)."""
    for rule in RULES:
        if (executes or not rule.executing_only) and rule.holds(user, item):
            return Outcome(rule.code, rule.explain(user, item), item=item)
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
    """What the item page offers `user`: every answer `decision_refusal` would not refuse
    (a rule `offered_anyway` aside)."""
    shown = [rule for rule in RULES if not rule.offered_anyway]
    for rule in shown:
        if not rule.executing_only and rule.holds(user, item):
            return DecisionOffer(False, False, False, rule.code)
    if can_execute(item):
        for rule in shown:
            if rule.executing_only and rule.holds(user, item):
                return DecisionOffer(True, False, False, rule.code)
    return DecisionOffer(True, True, not quorum.applies(item))


__all__ = [
    "RULES",
    "DecisionOffer",
    "Rule",
    "can_execute",
    "decision_offer",
    "decision_refusal",
    "holds_back",
]
