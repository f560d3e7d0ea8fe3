"""The review forms: what the item page renders for each kind of item, and how a posted
form becomes a `DecisionRequest`.

A tool review renders one card per action request: a decision choice limited to the
allowed decisions, a message (reject / respond), and an edit form generated from the
tool's JSON Schema (one input per property, JSON text for nested values) with a raw-JSON
fallback. Element ids and field names are built from indexes only, never from argument
names or other untrusted text. Values shown are redacted by the one redaction policy
(`beamweaver_core.redaction`: credentials only); each card lists what was withheld
(`withheld`), and a reviewer who revealed the secrets (`reviews.reveal`) gets the card
unredacted. An edited value left at `[redacted]` keeps the original, so a reviewer never
types a secret back in.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.http import QueryDict

from beamweaver_core.agent import HITL
from beamweaver_core.agent.review import EXECUTING_TYPES, ActionRequest, ReviewConfig
from beamweaver_core.exceptions import NotAReviewError
from beamweaver_core.redaction import redact, withheld
from beamweaver_core.users import User
from reviews import payloads, quorum
from reviews.answers import problem
from reviews.arg_fields import (
    MISSING,
    ArgField,
    FieldError,
    arg_fields,
    parse_arg,
    restore_redacted,
)
from reviews.diffs import args_diff
from reviews.models import ReviewItem
from reviews.permissions import can_reveal
from reviews.rules import DecisionOffer, decision_offer
from reviews.services import DecisionRequest

DECISION_LABELS = {
    "approve": "Approve",
    "edit": "Edit, then run",
    "reject": "Reject",
    "respond": "Respond instead",
}
_LONG_TEXT = 80
_MISSING = object()


@dataclass
class ActionForm:
    """One action request's card."""

    index: int
    action: ActionRequest
    config: ReviewConfig
    shown_args: Any
    allowed: list[tuple[str, str]]
    chosen: str = ""
    message: str = ""
    mode: str = "fields"
    fields: list[ArgField] = field(default_factory=list)
    json_text: str = ""
    problems: list[str] = field(default_factory=list)
    diff: list[dict[str, Any]] | None = None
    withheld: list[str] = field(default_factory=list)

    @property
    def prefix(self) -> str:
        return f"d{self.index}"

    @property
    def offered(self) -> list[str]:
        """The decisions this reviewer may choose for the action."""
        return [value for value, _ in self.allowed]


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
            card = _action_form(index, action, config, data, reveal=reveal)
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


def _action_form(
    index: int,
    action: ActionRequest,
    config: ReviewConfig,
    data: QueryDict | None,
    *,
    reveal: bool = False,
) -> ActionForm:
    args = payloads.plain(action.args)
    shown = args if reveal else redact(args)
    card = ActionForm(
        index=index,
        action=action,
        config=config,
        shown_args=shown,
        allowed=[(d, DECISION_LABELS[d]) for d in config.allowed_decisions],
        fields=arg_fields(config.args_schema, shown),
        json_text=json.dumps(shown, indent=2, sort_keys=True, ensure_ascii=False),
        withheld=withheld(args),
    )
    if data is not None:
        prefix = card.prefix
        card.chosen = data.get(f"{prefix}-type", "")
        card.message = data.get(f"{prefix}-message", "")
        card.mode = "json" if data.get(f"{prefix}-mode") == "json" else "fields"
        card.json_text = data.get(f"{prefix}-json", card.json_text)
        for arg in card.fields:
            posted = data.get(f"{prefix}-arg{arg.index}")
            if posted is not None:
                arg.value = posted
    return card


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
        card = form.actions[index]
        arg = _field_for(card, name)
        if arg is not None:
            arg.problems.append(message)
        else:
            card.problems.append(message)


def _field_for(card: ActionForm, name: str) -> ArgField | None:
    prefix = "edited_action.args."
    if not name.startswith(prefix):
        return None
    path = name[len(prefix) :]
    for arg in card.fields:
        if path == arg.name or path.startswith(arg.name + "."):
            return arg
    return None


def _edited_args(card: ActionForm, data: QueryDict) -> tuple[Any, list[dict[str, Any]]]:
    prefix = card.prefix
    original = payloads.plain(card.action.args)
    if data.get(f"{prefix}-mode") == "json":
        try:
            parsed = payloads.parse_json(
                data.get(f"{prefix}-json", ""), what="The edited arguments"
            )
        except payloads.PayloadError as exc:
            return None, [problem(card.index, "edited_action.args", str(exc))]
        return restore_redacted(parsed, original), []
    args: dict[str, Any] = {}
    problems = []
    for arg in card.fields:
        raw = data.get(f"{prefix}-arg{arg.index}")
        if raw is None:
            continue
        try:
            value = parse_arg(arg, raw)
        except FieldError as exc:
            problems.append(problem(card.index, f"edited_action.args.{arg.name}", str(exc)))
            continue
        if value is not MISSING:
            args[arg.name] = value
    return restore_redacted(args, original), problems


def decision_request(
    item: ReviewItem, data: QueryDict, user: User, form: ReviewForm
) -> DecisionRequest:
    """The `DecisionRequest` a posted item form makes (parse problems included)."""
    answer: Any = None
    problems: list[dict[str, Any]] = []
    if item.kind == ReviewItem.Kind.TOOL_REVIEW:
        decisions = []
        approve_all = "approve_all" in data
        for card in form.actions:
            kind = "approve" if approve_all else data.get(f"{card.prefix}-type", "")
            if not kind:
                problems.append(problem(card.index, "type", "Choose a decision for this action."))
                continue
            chosen: dict[str, Any] = {"type": kind}
            message = data.get(f"{card.prefix}-message", "")
            if kind in ("reject", "respond") and message.strip():
                chosen["message"] = message
            elif kind == "respond":
                chosen["message"] = ""
            if kind == "edit":
                args, found = _edited_args(card, data)
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
        user=user,
        client_decision_id=data.get("client_decision_id", ""),
        digest=data.get("digest", ""),
        interrupt_id=data.get("interrupt_id"),
        answer=answer,
        problems=problems,
        note=data.get("note", "").replace("\r\n", "\n").strip(),
        reason=data.get("reason", "") if item.kind == ReviewItem.Kind.TOOL_REVIEW else "",
    )


def preview(card: ActionForm, data: QueryDict) -> None:
    """Fill `card.diff` and field problems for the edit in `data` (nothing is decided)."""
    args, problems = _edited_args(card, data)
    if problems or not isinstance(args, Mapping):
        for problem in problems:
            arg = _field_for(card, problem["field"])
            (arg.problems if arg else card.problems).append(problem["message"])
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
        for problem in getattr(exc, "problems", ()):
            text = str(problem.get("message", "")).replace(
                "decisions[0]", f"decisions[{card.index}]"
            )
            arg = _field_for(card, str(problem.get("field", "")))
            (arg.problems if arg else card.problems).append(text)


__all__ = [
    "DECISION_LABELS",
    "ActionForm",
    "ReviewForm",
    "decision_request",
    "preview",
    "review_form",
]
