"""Review items and decisions as the API's JSON (the shapes `reviews.api.openapi` documents)."""

from __future__ import annotations

from typing import Any

from beamweaver_core.redaction import redact, withheld
from reviews import quorum
from reviews.item_json import item_json
from reviews.models import Decision, ReviewItem


def _name(user: Any) -> str | None:
    return user.get_username() if user is not None else None


def item_summary(item: ReviewItem) -> dict[str, Any]:
    """What the list shows of an item: enough to decide whether and how to answer it (the
    fields notifications send too, `item_json`, and who holds it, what it answers)."""
    return {
        **item_json(item),
        "interrupt_id": item.interrupt_id,
        "digest": item.digest,
        "assignee": _name(item.assignee),
        "claimed_by": _name(item.claimed_by),
        "approvals": len(quorum.counted(item)) if item.needs_quorum else 0,
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
