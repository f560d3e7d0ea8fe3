"""What the review services give back and what the decision service takes: `Code` (every
outcome's machine name), `Outcome` (the one outcome type of deciding, claiming,
cancelling and extending; `DecisionOutcome` is its name in `reviews.services`), the
`DecisionRequest` the decision service answers, and the audit event every decision
outcome appends (`audit`; a refusal: `refuse`).

Outcomes are domain values: they name what happened (`code`), never an HTTP status. The
ways in map codes to their statuses at the edge (`reviews.http_statuses`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any
from uuid import UUID

from django.utils import timezone

from beamweaver_core.models import Run
from beamweaver_core.users import User
from reviews import answers, quorum
from reviews.models import AuditEvent, Decision, ReviewItem


class Code(StrEnum):
    """What happened to a request; stored with decisions and audit events."""

    ACCEPTED = "accepted"  # the decision was recorded; the run resumes
    APPROVAL_RECORDED = "approval_recorded"  # one approval of several; the item waits
    CLAIM_TAKEN = "claim_taken"  # the user holds the item now
    UNCLAIMED = "unclaimed"
    REASSIGNED = "reassigned"
    EXTENDED = "extended"  # the deadline moved
    CANCELLED = "cancelled"  # the run was cancelled
    NOT_FOUND = "not_found"  # no such item, or the user may not see it
    KEY_REUSED = "key_reused"  # the client decision id names another answer
    ALREADY_DECIDED = "already_decided"
    GONE = "gone"  # cancelled, expired, or the run was cancelled
    NOT_ALLOWED = "not_allowed"  # the review policy (or a role) does not let the user
    SELF_APPROVAL = "self_approval"  # the user started the run and the answer lets it run
    CLAIMED = "claimed"  # another reviewer holds the item
    QUORUM = "quorum"  # an item needing several approvals cannot be claimed
    STALE = "stale"  # the answer names another interrupt than the pending one
    PAYLOAD_CHANGED = "payload_changed"
    ALREADY_APPROVED = "already_approved"
    INVALID = "invalid"  # the request fails validation (`problems`)
    BUSY = "busy"  # the thread could not take the resume
    QUESTION_PENDING = "question_pending"  # a run would go past an unanswered question
    NO_ACTIVE_RUN = "no_active_run"
    NOT_CANCELLABLE = "not_cancellable"


DONE = frozenset(
    {
        Code.ACCEPTED,
        Code.APPROVAL_RECORDED,
        Code.CLAIM_TAKEN,
        Code.UNCLAIMED,
        Code.REASSIGNED,
        Code.EXTENDED,
        Code.CANCELLED,
    }
)
"""The codes of a request that was carried out; every other code is a refusal."""


@dataclass(frozen=True)
class DecisionRequest:
    """An answer to a review item, as a reviewer (or a command) sent it.

    `answer` is `{"decisions": [...]}` (or the bare list) for a tool review, any JSON value
    for a plain interrupt, and `None` for a breakpoint (continuing takes no value; any
    other value is refused, as the engine refuses it).
    `problems` carries what the caller's parsing already refused (form fields, JSON text),
    reported together with the validator's problems if nothing else refuses first.
    `note` is the reviewer's private note (kept for the audit, never sent to the run);
    `reason` a preset rejection reason code (`reviews.reasons`).
    `minted_id`: the caller made `client_decision_id` up for this request alone (the
    protocol's answers, `lg-<uuid4>`), so it names no earlier decision or approval to
    replay and none is looked up (the unique constraints still stand behind it).
    `run_id`: the run the item paused on, as the caller read it with the item just before,
    so the service takes that run's lock without reading the item first. It is a hint:
    the service reads the item under the lock among those the user may see (404
    otherwise), and reads again where it is if it moved to another run meanwhile.
    """

    item_id: int | str | None
    user: User
    client_decision_id: str
    digest: str
    answer: Any = None
    interrupt_id: str | None = None
    problems: Sequence[Mapping[str, Any]] = ()
    source: str = Decision.Source.WEB
    note: str = ""
    reason: str = ""
    minted_id: bool = False
    run_id: UUID | None = None


@dataclass(frozen=True)
class Outcome:
    """What a request to the review services did: `code` names it, `message` says it to a
    person, `problems` lists what failed validation (`index`, `field`, `message`)."""

    code: Code
    message: str
    item: ReviewItem | None = None
    decision: Decision | None = None
    problems: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    replayed: bool = False
    run: Run | None = None

    @property
    def done(self) -> bool:
        """The request was carried out (not refused)."""
        return self.code in DONE

    @property
    def accepted(self) -> bool:
        """The decision was recorded and the run resumes."""
        return self.code == Code.ACCEPTED

    @property
    def waiting(self) -> bool:
        """The approval was counted; the item waits for more."""
        return self.code == Code.APPROVAL_RECORDED

    @property
    def recorded(self) -> bool:
        """The answer was stored: a decision, or one approval of several."""
        return self.accepted or self.waiting

    @property
    def correctable(self) -> bool:
        """Refused for what was sent (invalid fields, a reused decision id): the sender
        can correct it and send again."""
        return self.code in (Code.INVALID, Code.KEY_REUSED)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (for commands and APIs, which add their status)."""
        data: dict[str, Any] = {
            "code": str(self.code),
            "message": self.message,
            "replayed": self.replayed,
        }
        if self.item is not None:
            data["item"] = {
                "id": self.item.pk,
                "thread_id": self.item.thread_id,
                "interrupt_id": self.item.interrupt_id,
                "status": self.item.status,
                "required_approvals": self.item.required_approvals,
                "approvals": len(quorum.counted(self.item)),
            }
        if self.decision is not None:
            data["decision"] = {
                "summary": self.decision.summary,
                "by": self.decision.user.get_username(),
                "at": self.decision.created_at.isoformat(),
                "resume_run": str(self.decision.resume_run_id or ""),
            }
        if self.problems:
            data["problems"] = list(self.problems)
        return data


def refuse(
    request: DecisionRequest,
    item: ReviewItem | None,
    code: Code,
    message: str,
    *,
    problems: Sequence[Mapping[str, Any]] = (),
    decision: Decision | None = None,
    audited: ReviewItem | None = None,
) -> Outcome:
    """The refusal, audited against `item` (or `audited`, an item the caller must not
    be told about)."""
    audit(
        request,
        item or audited,
        AuditEvent.Action.REFUSED,
        code,
        f"{code}: {message}",
        summary=code,
        decision=answers.jsonable_or_none(request.answer),
        problems=problems,
    )
    return Outcome(
        code,
        message,
        item=item,
        decision=decision,
        problems=tuple(dict(p) for p in problems),
    )


def audit(
    request: DecisionRequest,
    item: ReviewItem | None,
    action: str,
    code: Code,
    message: str,
    *,
    summary: str = "",
    decision: Any = None,
    diff: Any = None,
    problems: Sequence[Mapping[str, Any]] = (),
    note: str = "",
) -> None:
    """Append the audit event of a decision request's outcome `code`."""
    user = request.user if getattr(request.user, "pk", None) is not None else None
    if problems:
        message += "\n" + "\n".join(str(p.get("message", "")) for p in problems)
    AuditEvent.objects.about(
        item,
        action,
        message[:10_000],
        actor=user,
        source=request.source,
        at=timezone.now(),
        item_ref=str(item.pk if item is not None else request.item_id)[:40],
        digest_seen=(request.digest or "")[:64],
        client_decision_id=(request.client_decision_id or "")[:64],
        summary=summary[:200],
        decision=decision,
        diff=diff,
        outcome=code,
        note=note,
    )


DecisionOutcome = Outcome
"""The outcome of `reviews.services.decide` (its public name)."""

__all__ = ["DONE", "Code", "DecisionOutcome", "DecisionRequest", "Outcome", "audit", "refuse"]
