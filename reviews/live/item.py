"""A review item page's socket: its status as it changes, and who else is looking."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from django.utils import timezone

from reviews import partials, realtime
from reviews.groups import review_item_group
from reviews.live.base import LiveConsumer, item_id_of
from reviews.models import ReviewItem, ReviewPresence


class ItemConsumer(LiveConsumer):
    """A review item page (rendered for its own user: the decision panel is theirs)."""

    def page_groups(self) -> list[str]:
        return [review_item_group(self.item_id)]

    def setup(self) -> None:
        self.item_id = int(self.scope["url_route"]["kwargs"]["pk"])
        raw = self.scope.get("query_string", b"").decode("latin-1")
        self.digest = (parse_qs(raw).get("digest") or [""])[0][:64]

    def page(self) -> dict[str, Any]:
        return {"item_id": self.item_id}

    def view(self) -> Hashable:
        # The status part flags a payload changed since the page's `digest`.
        return (type(self), self.user.pk, self.item_id, self.digest)

    def allowed(self) -> bool:
        return ReviewItem.objects.visible_to(self.user).filter(pk=self.item_id).exists()

    def snapshot(self) -> str:
        return self._status() + self._presence()

    def frames(self, batch: dict[str, bool]) -> list[str]:
        html = self._status() if "status" in batch else ""
        if "presence" in batch:
            html += self._presence()
        return [html] if html else []

    async def opened(self) -> None:
        await database_sync_to_async(self._here)()
        realtime.announce_presence(self.item_id)

    async def disconnect(self, code: int) -> None:
        was_here = bool(self.joined)  # an accepted socket (a refused one joined nothing)
        await super().disconnect(code)
        if was_here:
            await database_sync_to_async(self._gone)()
            realtime.announce_presence(self.item_id)

    async def ping(self) -> None:
        await database_sync_to_async(self._here)()

    def _here(self) -> None:
        now = timezone.now()
        # Rows of connections that died without a disconnect (a killed server) expire.
        ReviewPresence.objects.filter(seen_at__lt=now - 10 * partials.PRESENCE_TTL).delete()
        ReviewPresence.objects.update_or_create(
            channel_name=self.channel_name,
            defaults={"item_id": self.item_id, "user": self.user, "seen_at": now},
        )

    def _gone(self) -> None:
        ReviewPresence.objects.filter(channel_name=self.channel_name).delete()

    def _item(self) -> ReviewItem:
        return ReviewItem.objects.select_related(
            "thread", "claimed_by", "assignee", "requested_by", "escalation_group"
        ).get(pk=self.item_id)

    def _status(self) -> str:
        item = self._item()
        context = partials.item_context(item, self.user)
        context["oob"] = True
        routing = partials.render(partials.ITEM, "item-routing", context)
        if item.is_pending:
            context["payload_changed"] = bool(self.digest) and self.digest != item.digest
            return partials.render(partials.ITEM, "item-status", context) + routing
        context["form"] = None
        return partials.render(partials.ITEM, "decision-panel", context) + routing

    def _presence(self) -> str:
        context = {"viewers": partials.viewers(self._item(), self.user), "oob": True}
        return partials.render(partials.ITEM, "presence", context)

    async def review_created(self, message: dict[str, Any]) -> None:
        if item_id_of(message) == self.item_id:
            self.note("status")

    async def review_presence(self, message: dict[str, Any]) -> None:
        if item_id_of(message) == self.item_id:
            self.note("presence")
