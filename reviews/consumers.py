"""Live pages over one websocket each: the inbox, a review item, a thread.

A consumer refuses the handshake (closes before accepting) unless the session's user may
review and may see what the page shows, and joins only the groups of that page. Messages
from the channel layer are hints: the consumer reloads the rows from Postgres, re-checks
that its user is still allowed, and sends the same template partials the HTTP views
render, as htmx out-of-band swaps on stable element ids. On every (re)connect it sends
the page's live parts again, so a page that missed hints catches up.

Clients send nothing that changes state: the only frame read is a presence ping
(`{"type": "presence.ping"}`); decisions are HTTP only.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from importlib import import_module
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.contrib.auth import SESSION_KEY, get_user_model
from django.utils import timezone

from beamweaver_core.runtime.groups import INBOX_GROUP, review_item_group, thread_group
from beamweaver_core.webserver import WEBSOCKET_MAX_MESSAGE
from reviews import inbox, partials, realtime, threads
from reviews.models import ReviewItem, ReviewPresence
from reviews.permissions import can_review, visible_threads

logger = logging.getLogger(__name__)

MAX_FRAME = 4096
ROW_HINTS = frozenset(
    {realtime.CREATED, realtime.UPDATED, realtime.DECIDED, realtime.CANCELLED, realtime.EXPIRED}
)
"""The hints an inbox answers by re-rendering the row (every one through `review_created`)."""
CLOSE_FORBIDDEN = 4403
FRAME_BUDGET = WEBSOCKET_MAX_MESSAGE // 2
"""Bytes of rows one inbox frame carries (a burst is sent as several frames)."""


class LiveConsumer(AsyncWebsocketConsumer):
    """What every live page shares: authentication, re-checks, and ignoring clients."""

    def page_groups(self) -> list[str]:
        """The groups to join (after `allowed` said yes)."""
        raise NotImplementedError

    def allowed(self) -> bool:
        """Whether the user may open this page (runs in a worker thread)."""
        raise NotImplementedError

    def snapshot(self) -> str:
        """The page's live parts as out-of-band fragments (runs in a worker thread)."""
        raise NotImplementedError

    async def connect(self) -> None:
        self.user = self.scope.get("user")
        self.joined: list[str] = []
        if not await database_sync_to_async(self._allowed)():
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.joined = self.page_groups()
        for group in self.joined:
            await self.channel_layer.group_add(group, self.channel_name)
        await self.accept()
        await self.opened()
        await self.push(await database_sync_to_async(self.snapshot)())

    async def opened(self) -> None:
        """Called after accepting (presence registers here)."""

    async def disconnect(self, code: int) -> None:
        for group in self.joined:
            await self.channel_layer.group_discard(group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if text_data is None or len(text_data) > MAX_FRAME:
            return
        try:
            frame = json.loads(text_data)
        except ValueError:
            return
        if isinstance(frame, dict) and frame.get("type") == "presence.ping":
            await self.ping()

    async def ping(self) -> None:
        """A presence ping (only the item page cares)."""

    async def push(self, html: str) -> None:
        if html:
            await self.send(text_data=html)

    async def refresh(self, render: Any, *args: Any) -> None:
        """Re-check the user, then render and send `render(*args)` (in a worker thread)."""
        html = await database_sync_to_async(self._checked)(render, *args)
        if html is None:
            await self.close(code=CLOSE_FORBIDDEN)
            return
        await self.push(html)

    def _checked(self, render: Any, *args: Any) -> str | None:
        if not self._still_allowed():
            return None
        return str(render(*args))

    def _allowed(self) -> bool:
        return can_review(self.user) and self.allowed()

    def _still_allowed(self) -> bool:
        """The session still logs this user in, and the user may still see the page."""
        user = self.user
        session = self.scope.get("session")
        key = getattr(session, "session_key", None)
        if user is None or not getattr(user, "pk", None) or not key:
            return False
        store = import_module(settings.SESSION_ENGINE).SessionStore(session_key=key)
        if str(store.get(SESSION_KEY)) != str(user.pk):
            return False
        fresh = get_user_model().objects.filter(pk=user.pk).first()
        if fresh is None or not can_review(fresh):
            return False
        self.user = fresh
        return self.allowed()

    # Hints with nothing to do on a page are ignored (every group message needs a handler).
    async def review_created(self, message: dict[str, Any]) -> None:
        pass

    async def review_updated(self, message: dict[str, Any]) -> None:
        await self.review_created(message)

    async def review_decided(self, message: dict[str, Any]) -> None:
        await self.review_created(message)

    async def review_cancelled(self, message: dict[str, Any]) -> None:
        await self.review_created(message)

    async def review_expired(self, message: dict[str, Any]) -> None:
        await self.review_created(message)

    async def review_presence(self, message: dict[str, Any]) -> None:
        pass

    async def run_event(self, message: dict[str, Any]) -> None:
        pass

    async def run_status(self, message: dict[str, Any]) -> None:
        pass


def _item_id(message: dict[str, Any]) -> int | None:
    try:
        return int(message.get("item_id"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


class InboxConsumer(LiveConsumer):
    """An inbox page: its filters and page number come in the query string."""

    def page_groups(self) -> list[str]:
        return [INBOX_GROUP]

    def allowed(self) -> bool:
        raw = self.scope.get("query_string", b"").decode("latin-1")
        params = {k: v[0] for k, v in parse_qs(raw).items() if v}
        self.query = inbox.InboxQuery.from_params(params)
        return True

    def _items(self) -> Any:
        return ReviewItem.objects.visible_to(self.user)

    def snapshot(self) -> str:
        context = partials.inbox_context(self._items(), self.query)
        return partials.render(partials.INBOX, "inbox-list", context)

    async def dispatch(self, message: dict[str, Any]) -> None:
        # A row hint only notes which row changed, on the event loop: channels' own
        # dispatch would first queue `close_old_connections` on the one database thread
        # (behind every render of every consumer of this process), one hint at a time, so
        # hints could never gather while a render runs. The render itself still closes
        # stale connections around its work (`database_sync_to_async`).
        if message.get("type") in ROW_HINTS:
            await self.review_created(message)
            return
        await super().dispatch(message)

    async def review_created(self, message: dict[str, Any]) -> None:
        item_id = _item_id(message)
        if item_id is None:
            return
        # Hints that arrive while a render is under way wait for the next one, which
        # renders them all with one page, one count and one pager. One render per hint
        # (several queries each) fell behind at 50 interrupts/s with a few inboxes open,
        # until the channel layer's expiry dropped hints (bench.hostile case 25).
        dirty: dict[int, str] = self.__dict__.setdefault("_dirty", {})
        if dirty.get(item_id) != realtime.CREATED:
            dirty[item_id] = str(message.get("type"))
        flushing = getattr(self, "_flushing", None)
        if flushing is None or flushing.done():
            self._flushing = asyncio.ensure_future(self._flush())

    async def _flush(self) -> None:
        try:
            while self.__dict__.get("_dirty"):
                batch, self._dirty = self._dirty, {}
                frames = await database_sync_to_async(self._checked_frames)(batch)
                if frames is None:
                    await self.close(code=CLOSE_FORBIDDEN)
                    return
                for frame in frames:
                    await self.push(frame)
        except Exception:
            # As a failing handler would: the page reconnects and resyncs from Postgres.
            logger.warning("Inbox push failed; closing the socket", exc_info=True)
            await self.close()

    async def disconnect(self, code: int) -> None:
        flushing = getattr(self, "_flushing", None)
        if flushing is not None:
            flushing.cancel()
        await super().disconnect(code)

    def _checked_frames(self, batch: dict[int, str]) -> list[str] | None:
        return self._rows_frames(batch) if self._still_allowed() else None

    def _rows_frames(self, batch: dict[int, str]) -> list[str]:
        """The rows of `batch`, then the counts and the pager, in frames of at most
        `FRAME_BUDGET` bytes each (daphne refuses to send a message over its limit)."""
        items = self._items()
        context = partials.inbox_context(items, self.query)
        parts = []
        for item_id, event in batch.items():
            parts += self._row_parts(items, context, item_id, event)
        context["oob"] = True
        parts.append(partials.render(partials.INBOX, "inbox-counts", context))
        parts.append(partials.render(partials.INBOX, "inbox-pager", context))
        frames: list[str] = []
        size = FRAME_BUDGET
        for part in parts:
            part_size = len(part.encode())
            if size + part_size > FRAME_BUDGET:
                frames.append("")
                size = 0
            frames[-1] += part
            size += part_size
        return frames

    def _row_parts(
        self, items: Any, context: dict[str, Any], item_id: int, event: str
    ) -> list[str]:
        item = items.select_related("thread", "claimed_by", "assignee").filter(pk=item_id).first()
        if item is None:
            return []
        listed_on = inbox.page_number_of(items, self.query, item)
        row = {"item": item}
        if listed_on is None or listed_on != context["page"].number:
            return [partials.render(partials.INBOX, "inbox-row", {**row, "oob": "delete"})]
        if event == realtime.CREATED:
            # Delete first: appending twice (a poll raced the push) never duplicates.
            html = partials.render(partials.INBOX, "inbox-row", row)
            return [
                partials.render(partials.INBOX, "inbox-row", {**row, "oob": "delete"}),
                f'<div hx-swap-oob="beforeend:#inbox-rows">{html}</div>',
            ]
        return [partials.render(partials.INBOX, "inbox-row", {**row, "oob": "true"})]


class ItemConsumer(LiveConsumer):
    """A review item page: its status as it changes, and who else is looking."""

    def page_groups(self) -> list[str]:
        return [review_item_group(self.item_id)]

    def allowed(self) -> bool:
        self.item_id = int(self.scope["url_route"]["kwargs"]["pk"])
        raw = self.scope.get("query_string", b"").decode("latin-1")
        self.digest = (parse_qs(raw).get("digest") or [""])[0][:64]
        return ReviewItem.objects.visible_to(self.user).filter(pk=self.item_id).exists()

    def snapshot(self) -> str:
        return self._status() + self._presence()

    async def opened(self) -> None:
        await database_sync_to_async(self._here)()
        realtime.announce_presence(self.item_id)

    async def disconnect(self, code: int) -> None:
        await super().disconnect(code)
        if self.joined:
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
        if _item_id(message) == self.item_id:
            await self.refresh(self._status)

    async def review_presence(self, message: dict[str, Any]) -> None:
        if _item_id(message) == self.item_id:
            await self.refresh(self._presence)


class ThreadConsumer(LiveConsumer):
    """A thread page: run events as they happen, status, state, items, decisions."""

    def page_groups(self) -> list[str]:
        return [thread_group(self.thread_id)]

    def allowed(self) -> bool:
        self.thread_id = str(self.scope["url_route"]["kwargs"]["thread_id"])
        return visible_threads(self.user).filter(id=self.thread_id).exists()

    def _context(self) -> dict[str, Any]:
        thread = visible_threads(self.user).get(id=self.thread_id)
        context = partials.thread_context(thread, self.user)
        context["oob"] = True
        return context

    def snapshot(self) -> str:
        context = self._context()
        del context["oob"]
        # A top-level fragment without hx-swap-oob replaces the element with its id.
        return partials.render(partials.THREAD, "thread-live", context)

    def _parts(self, *names: str) -> str:
        context = self._context()
        return "".join(partials.render(partials.THREAD, name, context) for name in names)

    async def review_created(self, message: dict[str, Any]) -> None:
        await self.refresh(self._parts, "thread-items", "thread-decisions")

    async def run_status(self, message: dict[str, Any]) -> None:
        if message.get("thread_id") != self.thread_id:
            return
        names = ["thread-status"]
        if message.get("status") != "running":
            names += ["thread-items", "thread-decisions", "thread-state", "thread-history"]
        await self.refresh(self._parts, *names)

    async def run_event(self, message: dict[str, Any]) -> None:
        record = message.get("event")
        if message.get("thread_id") != self.thread_id or not isinstance(record, dict):
            return
        try:
            run_id = uuid.UUID(str(message.get("run_id")))
            event = threads.event_view(
                run_id,
                int(record.get("seq")),  # type: ignore[arg-type]
                event=record.get("event", ""),
                node=record.get("node", ""),
                data=record.get("data"),
                at=record.get("at"),
            )
        except (TypeError, ValueError):
            return
        await self.refresh(self._event_fragment, event)

    def _event_fragment(self, event: dict[str, Any]) -> str:
        html = partials.render(partials.THREAD, "run-event", {"event": event})
        # Delete first so that a replayed event never appears twice.
        return (
            f'<li id="{event["dom_id"]}" hx-swap-oob="delete"></li>'
            f'<div hx-swap-oob="beforeend:#thread-events">{html}</div>'
        )


__all__ = ["InboxConsumer", "ItemConsumer", "LiveConsumer", "ThreadConsumer"]
