"""Review items and decisions as the API's JSON (the shapes `reviews.api.openapi` documents)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from beamweaver_core.redaction import redact, withheld
from beamweaver_core.users import User
from reviews import quorum
from reviews.models import Decision, ReviewItem
from reviews.notifications.dispatch import item_url


def _name(user: User | None) -> str | None:
    return user.get_username() if user is not None else None


def _time(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def item_summary(item: ReviewItem) -> dict[str, Any]:
    """What the list shows of an item: enough to decide whether and how to answer it."""
    return {
        "id": item.pk,
        "url": item_url(item),
        "thread_id": item.thread_id,
        "graph": item.graph,
        "kind": item.kind,
        "tools": list(item.tool_names),
        "status": item.status,
        "interrupt_id": item.interrupt_id,
        "digest": item.digest,
        "created_at": _time(item.created_at),
        "due_at": _time(item.due_at),
        "assignee": _name(item.assignee),
        "claimed_by": _name(item.claimed_by),
        "required_approvals": item.required_approvals,
        "approvals": len(quorum.counted(item)) if item.needs_quorum else 0,
        "policy_version": item.policy_version,
    }


def item_detail(item: ReviewItem, *, reveal: bool = False) -> dict[str, Any]:
    """An item with its payload (redacted by the one redaction policy, with the paths of
    what it withheld, unless `reveal`: the caller checked and audited that), approvals so
    far and decision."""
    data = item_summary(item)
    decision = Decision.objects.select_related("user").filter(item=item).first()
    payload = item.payload
    data.update(
        {
            "payload": payload if reveal else redact(payload),
            "withheld": [] if reveal else withheld(payload),
            "status_reason": item.status_reason,
            "approved_by": [a.user.get_username() for a in quorum.counted(item)],
            "decision": None
            if decision is None
            else {
                "by": decision.user.get_username(),
                "at": decision.created_at.isoformat(),
                "summary": decision.summary,
                "types": list(decision.decision_types),
                "source": decision.source,
            },
        }
    )
    return data


__all__ = ["item_detail", "item_summary"]
