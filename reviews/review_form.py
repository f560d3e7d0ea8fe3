"""The review forms: what the item page renders for each kind of item, and how a posted
form becomes a `DecisionRequest`.

A tool review renders one card per action request, each a Django form
(`reviews.action_form.ActionForm`: a decision choice limited to the allowed decisions, a
message, an edit form generated from the tool's JSON Schema with a raw-JSON fallback).
Values shown are redacted by the one redaction policy (`beamweaver_core.redaction`:
credentials only); each card lists what was withheld (`withheld`), and a reviewer who
revealed the secrets (`reviews.reveal`) gets the card unredacted. An edited value left
as shown (or at `[redacted]`) keeps the original, so a reviewer never types a secret
back in, and a changed one still holding `[redacted]` is refused.

The cards are not a Django formset: their number is the interrupt's, never the client's,
so a formset's management form (`d-TOTAL_FORMS` and kin, required in every post) would
only add a way for a post to be refused before the decision service sees and audits it,
and its `d-0-type` names would replace the `d0-type` names of the page, its scripts and
every client posting the form. `ReviewForm` is not a form either: it is what the page
shows of one item's decision (offer, limits, revealed secrets) around the cards and the
few item-level inputs (`note`, `reason`, `answer`) that `decision_request` reads.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.http import QueryDict

from beamweaver_core.agent import HITL
from beamweaver_core.agent.review import EXECUTING_TYPES
from beamweaver_core.exceptions import NotAReviewError
from beamweaver_core.redaction import withheld
from beamweaver_core.users import User
from reviews import payloads, quorum
from reviews.action_form import DECISION_LABELS, ActionForm
from reviews.answers import problem
from reviews.diffs import args_diff
from reviews.models import ReviewItem
from reviews.permissions import can_reveal
from reviews.rules import DecisionOffer, decision_offer
from reviews.services import DecisionRequest


@dataclass
class ReviewForm:
    """Everything the decision form of one item needs."""

    item: ReviewItem
    client_decision_id: str
    actions: list[ActionForm] = field(default_factory=list)
    answer_text: str = ""
    answer_format: str = "json"
    problems: list[str] = field(default_factory=list)
    answer_problems: list[str] = field(default_factory=list)
    invalid_payload: str = ""
    note: str = ""
    reason: str = ""
    offer: DecisionOffer = field(default_factory=lambda: DecisionOffer(True, True, True))
    limits: list[str] = field(default_factory=list)
    revealed: bool = False
    can_reveal: bool = False
    question_withheld: list[str] = field(default_factory=list)

    @property
    def withheld(self) -> bool:
        """Whether redaction withholds something from some card or the question."""
        return bool(self.question_withheld) or any(card.withheld for card in self.actions)

    @property
    def approve_all(self) -> bool:
        return len(self.actions) > 1 and all("approve" in a.offered for a in self.actions)

    @property
    def offered(self) -> set[str]:
        """Every decision offered on some action."""
        return {value for card in self.actions for value in card.offered}

    @property
    def can_submit(self) -> bool:
        """Whether this reviewer can send any answer the service would accept."""
        if not self.offer.decide or self.invalid_payload:
            return False
        if self.item.kind == ReviewItem.Kind.TOOL_REVIEW:
            return bool(self.actions) and all(card.allowed for card in self.actions)
        if self.item.kind == ReviewItem.Kind.BREAKPOINT:
            return self.offer.execute
        return True


def review_form(
    item: ReviewItem,
    user: User,
    data: QueryDict | None = None,
    problems: Sequence[Mapping[str, Any]] = (),
    *,
    reveal: bool = False,
) -> ReviewForm:
    """The form for `item` as `user` may answer it (only the decisions the review policy
    lets them make, and why the others are missing), bound to posted `data` (after a
    refusal) or fresh; `reveal`: unredacted (the caller checked and audited it)."""
    posted_id = data.get("client_decision_id") if data is not None else None
    client_id = posted_id or uuid.uuid4().hex
    form = ReviewForm(
        item=item,
        client_decision_id=str(client_id)[:64],
        offer=decision_offer(user, item),
        revealed=reveal,
        can_reveal=can_reveal(user),
    )
    if data is not None:
        form.note = str(data.get("note", ""))
        form.reason = str(data.get("reason", ""))
    if item.kind == ReviewItem.Kind.TOOL_REVIEW:
        try:
            review = HITL.from_value(item.payload, item.interrupt_id)
        except NotAReviewError as exc:
            form.invalid_payload = str(exc)
            return form
        for index, (action, config) in enumerate(
            zip(review.action_requests, review.review_configs, strict=True)
        ):
            card = ActionForm(index, action, config, data, reveal=reveal)
            card.allowed = [(d, label) for d, label in card.allowed if d not in _held(form.offer)]
            form.actions.append(card)
    elif item.kind == ReviewItem.Kind.INTERRUPT:
        form.question_withheld = withheld(item.payload)
        if data is not None:
            form.answer_text = data.get("answer", "")
            form.answer_format = "text" if data.get("answer_format") == "text" else "json"
    form.limits = _limits(form)
    _attach_problems(form, problems)
    return form


def _held(offer: DecisionOffer) -> set[str]:
    if not offer.decide:
        return set(DECISION_LABELS)
    held = set() if offer.execute else set(EXECUTING_TYPES)
    return held if offer.edit else held | {"edit"}


def _limits(form: ReviewForm) -> list[str]:
    """Why some decisions are not offered, in the words the page shows."""
    item, offer = form.item, form.offer
    if offer.why == "not_allowed":
        return [
            "The review policy of this item does not let you decide it; a manager can "
            "reassign it to you."
        ]
    left = form.offered
    if item.kind == ReviewItem.Kind.BREAKPOINT:
        if offer.why == "self_approval":
            return [
                "You started this run, so another reviewer must continue it; you can still "
                "cancel the run from its thread page."
            ]
        return []
    if item.kind != ReviewItem.Kind.TOOL_REVIEW:
        return []
    still = " or ".join(
        {"reject": "reject", "respond": "respond instead"}[d]
        for d in ("reject", "respond")
        if d in left
    )
    limits = []
    if offer.why == "self_approval":
        text = "You started this run, so another reviewer must approve it"
        limits.append(f"{text}; you can still {still}." if still else f"{text}.")
    elif offer.why == "already_approved":
        text = (
            f"You approved this item; it needs {quorum.missing(item)} more approval(s) from "
            "other reviewers"
        )
        limits.append(f"{text}; you can still {still}." if still else f"{text}.")
    elif not offer.edit and any("edit" in c.config.allowed_decisions for c in form.actions):
        limits.append(
            f"This item needs {item.required_approvals} approvals from different reviewers, "
            "so it cannot be edited: approve it, or reject it with a message saying what "
            "to change."
        )
    return limits


def _attach_problems(form: ReviewForm, problems: Sequence[Mapping[str, Any]]) -> None:
    for found in problems:
        message = str(found.get("message", ""))
        index = found.get("index")
        name = str(found.get("field") or "")
        if name == "answer" and form.item.kind == ReviewItem.Kind.INTERRUPT:
            form.answer_problems.append(message)
            continue
        if not isinstance(index, int) or not 0 <= index < len(form.actions):
            form.problems.append(message)
            continue
        form.actions[index].add_problem(name, message)


def decision_request(
    item: ReviewItem, data: QueryDict, user: User, form: ReviewForm
) -> DecisionRequest:
    """The `DecisionRequest` a posted item form makes (parse problems included)."""
    answer: Any = None
    problems: list[dict[str, Any]] = []
    if item.kind == ReviewItem.Kind.TOOL_REVIEW:
        decisions = []
        approve_all = "approve_all" in data
        for shown in form.actions:
            card = shown if shown.data is data else shown.bound_to(data)
            kind = "approve" if approve_all else card.chosen
            if not kind:
                problems.append(problem(card.index, "type", "Choose a decision for this action."))
                continue
            chosen: dict[str, Any] = {"type": kind}
            message = card.message_text
            if kind in ("reject", "respond") and message.strip():
                chosen["message"] = message
            elif kind == "respond":
                chosen["message"] = ""
            if kind == "edit":
                args, found = card.edited_args()
                problems.extend(found)
                chosen["edited_action"] = {"name": card.action.name, "args": args}
            decisions.append(chosen)
        answer = {"decisions": decisions}
        if form.invalid_payload:
            problems.append(problem(None, "answer", form.invalid_payload))
    elif item.kind == ReviewItem.Kind.INTERRUPT:
        text = data.get("answer", "")
        if data.get("answer_format") == "text":
            answer = text
        else:
            try:
                answer = payloads.parse_json(text)
            except payloads.PayloadError as exc:
                problems.append(problem(None, "answer", str(exc)))
    return DecisionRequest(
        item_id=item.pk,
        run_id=item.run_id,
        user=user,
        client_decision_id=data.get("client_decision_id", ""),
        digest=data.get("digest", ""),
        interrupt_id=data.get("interrupt_id"),
        answer=answer,
        problems=problems,
        note=data.get("note", "").replace("\r\n", "\n").strip(),
        reason=data.get("reason", "") if item.kind == ReviewItem.Kind.TOOL_REVIEW else "",
    )


def preview(card: ActionForm) -> None:
    """Fill `card.diff` and its problems for the edit it was posted with (nothing is
    decided)."""
    args, problems = card.edited_args()
    if problems or not isinstance(args, Mapping):
        for found in problems:
            card.add_problem(found["field"], found["message"])
        card.diff = None
        return
    card.diff = args_diff(payloads.plain(card.action.args), args)
    review = HITL.from_value(
        {"action_requests": [card.action.to_dict()], "review_configs": [card.config.to_dict()]}
    )
    decision = {"type": "edit", "edited_action": {"name": card.action.name, "args": args}}
    try:
        HITL.validate_decisions(review, [decision])
    except Exception as exc:
        for found in getattr(exc, "problems", ()):
            text = str(found.get("message", "")).replace("decisions[0]", f"decisions[{card.index}]")
            card.add_problem(str(found.get("field", "")), text)


__all__ = [
    "DECISION_LABELS",
    "ActionForm",
    "ReviewForm",
    "decision_request",
    "preview",
    "review_form",
]
