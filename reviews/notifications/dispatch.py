"""Who hears about an item's event, and the message they get: `notify` writes one outbox
row per channel and target, in the caller's transaction."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, overload

from beamweaver_core.users import User
from reviews import permissions
from reviews.item_json import item_json
from reviews.models import NotificationEvent, ReviewItem
from reviews.notifications import channels, outbox
from reviews.permissions import policy_allows
from reviews.roles import reviewer_list


def audience(event: str, item: ReviewItem, actor: User | None = None) -> list[User]:
    """The users an event concerns (each may see the item), read in one statement, less
    `actor`, the user whose act the event reports (who decided, who assigned): nobody is
    told of what they just did. None, and nothing read, for an event addressed to the
    users the item names when it names none but the actor (a decision on an item nobody
    else held, was assigned or requested)."""
    actor_id = getattr(actor, "pk", None)
    named = _named(event, item)
    if named is not None:
        named = [pk for pk in named if pk != actor_id]
    if named is not None and not any(named):
        return []
    reviewers = reviewer_list()
    if named is not None:
        by_id: dict[int | None, User] = {u.pk: u for u in reviewers}
        chosen = [by_id.get(pk) for pk in named]
    elif event == NotificationEvent.ESCALATED:
        chosen = [u for u in reviewers if item.escalation_group_id in permissions.group_ids(u)]
    else:
        chosen = [u for u in reviewers if policy_allows(u, item)]
    unique = {u.pk: u for u in chosen if u is not None and u.pk != actor_id}
    # Every user here is one of `reviewers()`, which read their groups and whether they
    # manage: the policy decides, without asking each user's permissions again.
    return [
        u
        for u in unique.values()
        if u.bw_manager or policy_allows(u, item)  # type: ignore[attr-defined]  # reviewers() annotates it
    ]


def _named(event: str, item: ReviewItem) -> list[int | None] | None:
    """The ids of the users `event` is addressed to, by the item's own columns; `None`
    for an event addressed to the reviewers the policy or the escalation chooses."""
    holders = [item.claimed_by_id, item.assignee_id]
    if event == NotificationEvent.ASSIGNED:
        return [item.assignee_id]
    if event == NotificationEvent.REMINDER and any(holders):
        return holders
    if event in (NotificationEvent.EXPIRED, NotificationEvent.DECIDED):
        return [*holders, item.requested_by_id]
    return None


def summary(event: str, item: ReviewItem) -> str:
    """One line saying what happened, for subjects and chat messages."""
    what = ", ".join(item.tool_names) or item.get_kind_display().lower()
    due = f" (due {item.due_at:%Y-%m-%d %H:%M} UTC)" if item.due_at else ""
    lines: dict[str, str] = {
        NotificationEvent.CREATED: f"Review needed: item #{item.pk} {what}{due}",
        NotificationEvent.ASSIGNED: f"Assigned to you: item #{item.pk} {what}{due}",
        NotificationEvent.REMINDER: f"Reminder: item #{item.pk} {what} is due soon{due}",
        NotificationEvent.ESCALATED: f"Escalated to your group: item #{item.pk} {what}{due}",
        NotificationEvent.EXPIRED: f"Expired without a decision: item #{item.pk} {what}",
        NotificationEvent.DECIDED: f"Decided: item #{item.pk} {what}",
    }
    return lines.get(event, f"{event}: item #{item.pk} {what}")


def payload(event: str, item: ReviewItem) -> dict[str, Any]:
    """What every channel's message is made of (JSON; no argument values: a webhook or an
    inbox outside the product is not where a tool's arguments should travel: `item_json`)."""
    return {
        "event": event,
        "summary": summary(event, item),
        "item": item_json(item),
    }


class _Audience(Sequence[User]):
    """`audience(event, item)`, read when a channel first looks at it: a channel that
    addresses no user (the webhooks) reads no reviewer, so with no channel that does,
    the event reads none."""

    def __init__(self, event: str, item: ReviewItem, actor: User | None) -> None:
        self._event, self._item, self._actor = event, item, actor

    @functools.cached_property
    def _users(self) -> list[User]:
        return audience(self._event, self._item, self._actor)

    @overload
    def __getitem__(self, index: int) -> User: ...

    @overload
    def __getitem__(self, index: slice) -> list[User]: ...

    def __getitem__(self, index: int | slice) -> User | list[User]:
        return self._users[index]

    def __len__(self) -> int:
        return len(self._users)


def notify(event: str, item: ReviewItem, actor: User | None = None) -> int:
    """Queue `event` about `item` on every channel (in the current transaction); returns
    how many messages were queued. `actor`, the user whose act this is, hears nothing of
    it from the channels that address reviewers; the webhooks, addressed to the operator's
    endpoints, still carry it."""
    users = _Audience(event, item, actor)
    body = payload(event, item)
    queued = 0
    for name, channel in channels.configured().items():
        for target in channel.targets(event, item, users):
            outbox.enqueue(name, target, event, item, body)
            queued += 1
    return queued


__all__ = ["audience", "notify", "payload", "summary"]
