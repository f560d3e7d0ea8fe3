"""A review item as JSON: the fields every outside reader gets, built in one place.

The token API's item (`reviews.api.representations`, which adds who holds it, its
interrupt id, digest and approvals) and every notification's `item`
(`reviews.notifications.dispatch.payload`, sent to webhooks and mail) both start from
`item_json`. No argument values here: a webhook or an inbox outside the product is not
where a tool's arguments should travel (the API's detail adds the payload, redacted).
"""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from beamweaver_core.conf import conf
from reviews.models import ReviewItem


def item_url(item: ReviewItem) -> str:
    """The deep link to the item's page (`BEAMWEAVER["BASE_URL"]` + its path)."""
    base = conf.base_url.rstrip("/")
    return base + reverse("reviews:item", args=[item.pk])


def item_json(item: ReviewItem) -> dict[str, Any]:
    """What the item is, where it is, what it asks for and by when."""
    return {
        "id": item.pk,
        "url": item_url(item),
        "thread_id": item.thread_id,
        "graph": item.graph,
        "kind": item.kind,
        "tools": list(item.tool_names),
        "status": item.status,
        "created_at": item.created_at.isoformat(),
        "due_at": item.due_at.isoformat() if item.due_at else None,
        "required_approvals": item.required_approvals,
        "policy_version": item.policy_version,
    }


__all__ = ["item_json", "item_url"]
