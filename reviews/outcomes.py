"""What the decision service takes and gives back: a `DecisionRequest` (an answer as a
reviewer or a command sent it) and its `DecisionOutcome` (`reviews.services.decide`),
and the audit event every outcome appends (`audit`; a refusal: `refuse`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from beamweaver_core.users import User
from reviews import answers, quorum
from reviews.models import AuditEvent, Decision, ReviewItem


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


@dataclass(frozen=True)
class DecisionOutcome:
    """What happened to a decision request; `status` is the HTTP status to answer with."""

    status: int
    code: str
    message: str
    item: ReviewItem | None = None
    decision: Decision | None = None
    problems: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    replayed: bool = False

    @property
    def accepted(self) -> bool:
        return self.status == 200

    @property
    def recorded(self) -> bool:
        """The answer was stored: a decision, or one approval of several."""
        return self.status in (200, 202)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (for commands and APIs)."""
        data: dict[str, Any] = {
            "status": self.status,
            "code": self.code,
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
    status: int,
    code: str,
    message: str,
    *,
    problems: Sequence[Mapping[str, Any]] = (),
    decision: Decision | None = None,
    audited: ReviewItem | None = None,
) -> DecisionOutcome:
    """The refusal, audited against `item` (or `audited`, an item the caller must not
    be told about)."""
    audit(
        request,
        item or audited,
        AuditEvent.Action.REFUSED,
        status,
        f"{code}: {message}",
        summary=code,
        decision=answers.jsonable_or_none(request.answer),
        problems=problems,
    )
    return DecisionOutcome(
        status,
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
    status: int,
    message: str,
    *,
    summary: str = "",
    decision: Any = None,
    diff: Any = None,
    problems: Sequence[Mapping[str, Any]] = (),
    note: str = "",
) -> None:
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
        status_code=status,
        note=note,
    )


__all__ = ["DecisionOutcome", "DecisionRequest", "audit", "refuse"]
