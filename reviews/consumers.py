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
import time
import uuid
import weakref
from importlib import import_module
from typing import Any
from urllib.parse import parse_qs

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.db import close_old_connections
from django.utils import timezone
from django.utils.crypto import constant_time_compare

from beamweaver_core.conf import conf
from beamweaver_core.runtime.groups import thread_group
from reviews import inbox, metrics, partials, realtime, threads
from reviews.converters import ThreadIdConverter
from reviews.groups import INBOX_GROUP, review_item_group
from reviews.models import ReviewItem, ReviewPresence
from reviews.permissions import LiveCheck, can_review, visible_threads

logger = logging.getLogger(__name__)

MAX_FRAME = 4096
ROW_HINTS = frozenset(
    {realtime.CREATED, realtime.UPDATED, realtime.DECIDED, realtime.CANCELLED, realtime.EXPIRED}
)
"""The hints an inbox answers by re-rendering the row (every one through `review_created`)."""
HINTS = ROW_HINTS | {realtime.PRESENCE, "run.event", "run.status"}
"""The channel layer's messages: noted on the event loop (`LiveConsumer.dispatch`)."""
DATABASE_SESSIONS = frozenset(
    {"django.contrib.sessions.backends.db", "django.contrib.sessions.backends.cached_db"}
)
"""Session engines whose table `LiveCheck` reads (for others the store is asked)."""
CLOSE_FORBIDDEN = 4403
SNAPSHOT = ("snapshot",)
"""The note a (re)connect makes: the page's live parts, sent first."""
FRAME_BUDGET = conf.websocket_max_message // 2
"""Bytes one pushed frame carries at most (a burst is sent as several frames)."""


class LiveConsumer(AsyncWebsocketConsumer):
    """What every live page shares: authentication, re-checks, and ignoring clients.

    Hints from the channel layer are noted on the event loop (`note`), never handled one
    by one on the database thread: the event loop's next round (`_Flusher`) re-checks
    every socket with notes, each with its own check, and renders what they noted
    (`frames`), in one call on the database thread; notes that arrive during a round wait
    for the next one. One check and render per hint fell behind under a burst, until the
    channel layer's expiry dropped hints (bench.hostile cases 25 and 50)."""

    def page_groups(self) -> list[str]:
        """The groups to join (after the check said yes)."""
        raise NotImplementedError

    def setup(self) -> None:
        """Read the page's parameters from the scope (before the first check)."""

    def page(self) -> dict[str, Any]:
        """What `LiveCheck` checks of this page (`thread_id=` or `item_id=`; nothing for
        a page every reviewer may open)."""
        return {}

    def allowed(self) -> bool:
        """Whether `self.user` may see this page, with this module's queries (runs in a
        worker thread; the re-check without `LiveCheck`)."""
        raise NotImplementedError

    def snapshot(self) -> str:
        """The page's live parts as out-of-band fragments (runs in a worker thread)."""
        raise NotImplementedError

    def frames(self, batch: dict[Any, Any]) -> list[str]:
        """The frames that answer the notes of `batch` (runs in a worker thread, after
        the re-check)."""
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
        # The snapshot comes with the next round (after the check of that round): under a
        # reconnect storm the handshakes, each a check on the database thread, do not
        # wait behind every snapshot before them (daphne drops a handshake after 5 s).
        self.note(SNAPSHOT)

    async def opened(self) -> None:
        """Called after accepting (presence registers here)."""

    async def dispatch(self, message: dict[str, Any]) -> None:
        # A hint is only noted, on the event loop: channels' own dispatch would first
        # queue `close_old_connections` on the one database thread (behind every check
        # and render of every consumer of this process), one hint at a time, so hints
        # could never gather while a render runs. The render itself still closes stale
        # connections around its work (`database_sync_to_async`).
        if message.get("type") in HINTS:
            metrics.hint_noted(self, message)
            await getattr(self, get_handler_name(message))(message)
            return
        await super().dispatch(message)

    async def disconnect(self, code: int) -> None:
        self._closing = True
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

    def note(self, key: Any, value: Any = True) -> None:
        """Remember what changed (`key`), for the next flush of this process."""
        self.dirty[key] = value
        if not self.__dict__.get("_closing"):
            _flusher().add(self)

    @property
    def dirty(self) -> dict[Any, Any]:
        """The notes the next flush answers."""
        return self.__dict__.setdefault("_dirty", {})

    async def deliver(self, frames: list[str] | BaseException | None) -> None:
        """Send what a flush rendered: the frames, or close (4403 when refused; a failed
        render closes too, so that the page reconnects and resyncs from Postgres)."""
        if self.__dict__.get("_closing"):
            return
        if isinstance(frames, BaseException):
            logger.warning("Live push failed; closing the socket", exc_info=frames)
            self._closing = True
            await self.close()
        elif frames is None:
            self._closing = True
            await self.close(code=CLOSE_FORBIDDEN)
        else:
            for frame in frames:
                await self.push(frame)
            metrics.frames_sent(self)

    def merged(self, earlier: dict[Any, Any], later: dict[Any, Any]) -> dict[Any, Any]:
        """The notes of a batch put back for the next round, with those noted since."""
        return {**earlier, **later}

    def _checked_frames(
        self, batch: dict[Any, Any], shared: dict[Any, str] | None = None
    ) -> list[str] | None:
        """The frames of `batch` if the user may still see the page (None if not).
        `shared`: the snapshots rendered in this round, by what they depend on (one
        user's page with the same path and query renders the same)."""
        if not self._still_allowed():
            return None
        frames = []
        if SNAPSHOT in batch:
            batch = {key: value for key, value in batch.items() if key != SNAPSHOT}
            shared = {} if shared is None else shared
            inputs = (
                type(self),
                self.user.pk,
                self.scope.get("path"),
                self.scope.get("query_string"),
            )
            if inputs not in shared:
                shared[inputs] = self.snapshot()
            frames.append(shared[inputs])
        if batch:
            frames += self.frames(batch)
        return [frame for frame in frames if frame]

    def _allowed(self) -> bool:
        self.setup()
        return self._still_allowed()

    def _still_allowed(self) -> bool:
        """The session still logs this user in, and the user may still see the page:
        one SQL statement (`LiveCheck`), or the queries of `reviews.permissions`."""
        user = self.user
        key = getattr(self.scope.get("session"), "session_key", None)
        if user is None or not getattr(user, "pk", None) or not key:
            return False
        if not LiveCheck.applies():
            return self._still_allowed_by_queries(user.pk, key)
        check = self.__dict__.get("_check")
        if check is None:
            in_table = settings.SESSION_ENGINE in DATABASE_SESSIONS
            check = LiveCheck(user.pk, session_key=key if in_table else None, **self.page())
            self._check = check
        found = check.run()
        if found is None:
            return False
        fresh, data = found
        if settings.SESSION_ENGINE not in DATABASE_SESSIONS:
            data = _session_store(key)
        if not self._logs_in(data, fresh) or not check.sees(fresh):
            return False
        self.user = fresh
        return True

    def _logs_in(self, data: Any, user: Any) -> bool:
        """Whether session `data` (as stored, or a loaded store) logs `user` in, as
        `django.contrib.auth.get_user` decides it; remembered for the same data and
        password (the check runs for every push)."""
        if data is None:
            return False
        seen = (data if isinstance(data, str) else None, user.pk, user.password)
        if seen[0] is not None and self.__dict__.get("_session_seen") == seen:
            return True
        session = _session_store().decode(data) if isinstance(data, str) else data
        if str(session.get(SESSION_KEY)) != str(user.pk):
            return False
        if session.get(BACKEND_SESSION_KEY) not in settings.AUTHENTICATION_BACKENDS:
            return False
        digest = session.get(HASH_SESSION_KEY)
        if not digest or not any(
            constant_time_compare(digest, known)
            for known in (user.get_session_auth_hash(), *user.get_session_auth_fallback_hash())
        ):
            return False
        self._session_seen = seen
        return True

    def _still_allowed_by_queries(self, user_pk: Any, key: str) -> bool:
        store = _session_store(key)
        if str(store.get(SESSION_KEY)) != str(user_pk):
            return False
        fresh = get_user_model().objects.filter(pk=user_pk).first()
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


class _Flusher:
    """The flushes of one event loop's consumers: every consumer with notes waits for
    the next round, which re-checks each of them and renders their frames in one call
    on the database thread, then sends. A consumer's notes that arrive during a round
    wait for the next one (one check and one render for all of them). One call per
    consumer cost a thread hop and a pooled connection each (bench.hostile case 50:
    1,000 sockets, 50 run events a second)."""

    def __init__(self) -> None:
        self.waiting: dict[LiveConsumer, None] = {}
        self.task: asyncio.Future[None] | None = None

    def add(self, consumer: LiveConsumer) -> None:
        self.waiting[consumer] = None
        if self.task is None or self.task.done():
            self.task = asyncio.ensure_future(self.run())

    async def run(self) -> None:
        while self.waiting:
            round_ = []
            for consumer in self.waiting:
                batch, consumer._dirty = consumer.dirty, {}
                if batch and not consumer.__dict__.get("_closing"):
                    round_.append((consumer, batch))
            self.waiting.clear()
            if not round_:
                continue
            try:
                outcomes = await database_sync_to_async(_render_round)(round_)
            except Exception as exc:  # the call itself failed (not one consumer's render)
                outcomes = [exc] * len(round_)
            later: dict[LiveConsumer, None] = {}
            for (consumer, batch), outcome in zip(round_, outcomes, strict=True):
                if outcome is LATER:
                    consumer._dirty = consumer.merged(batch, consumer.dirty)
                    later[consumer] = None
                    continue
                try:
                    await consumer.deliver(outcome)
                except Exception:
                    logger.warning("Live push failed", exc_info=True)
            if later:  # first in the next round
                self.waiting = {**later, **self.waiting}


LATER = object()
"""A round's outcome for a consumer it had no time left for (its notes wait)."""
ROUND_SECONDS = 0.25
"""How long one round may hold the database thread: the rest waits for the next round,
and the handshakes queued meanwhile run in between."""


def _render_round(round_: list[tuple[LiveConsumer, dict[Any, Any]]]) -> list[Any]:
    outcomes: list[Any] = []
    shared: dict[Any, str] = {}
    deadline = time.monotonic() + ROUND_SECONDS
    for consumer, batch in round_:
        if outcomes and time.monotonic() > deadline:
            outcomes.append(LATER)
            continue
        try:
            outcomes.append(consumer._checked_frames(batch, shared))
        except Exception as exc:
            outcomes.append(exc)
            # A connection that broke is replaced before the next socket's check (as
            # between two calls of `database_sync_to_async`), so one failure closes one
            # socket, not the round.
            close_old_connections()
    return outcomes


_FLUSHERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Flusher] = (
    weakref.WeakKeyDictionary()
)


def _flusher() -> _Flusher:
    loop = asyncio.get_running_loop()
    flusher = _FLUSHERS.get(loop)
    if flusher is None:
        flusher = _FLUSHERS[loop] = _Flusher()
    return flusher


def _session_store(key: str | None = None) -> Any:
    return import_module(settings.SESSION_ENGINE).SessionStore(session_key=key)


def split_frames(parts: list[str]) -> list[str]:
    """`parts` joined into frames of at most `FRAME_BUDGET` bytes each (daphne refuses
    to send a message over its limit); a part bigger than that is a frame of its own."""
    frames: list[str] = []
    size = FRAME_BUDGET
    for part in parts:
        if not part:
            continue
        part_size = len(part.encode())
        if size + part_size > FRAME_BUDGET:
            frames.append("")
            size = 0
        frames[-1] += part
        size += part_size
    return frames


def _into_list(list_id: str, html: str) -> str:
    """`html` (elements with ids) as a push into the keyed list `list_id` of a page.

    Rows and run events are pushed into their list, which is always on the page, never at
    the row or event itself, which the page may lack (htmx logs `htmx:oobErrorNoTarget`
    for a fragment without a target). The page's script (`reviews/static/beamweaver/js/beamweaver.js`) makes
    the list keyed: an element whose id the page already has replaces that element (a
    replayed event, a changed row), and a `data-remove` marker removes it."""
    return f'<div hx-swap-oob="beforeend:#{list_id}">{html}</div>'


def _item_id(message: dict[str, Any]) -> int | None:
    try:
        return int(message.get("item_id"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


class InboxConsumer(LiveConsumer):
    """An inbox page: its filters and page number come in the query string."""

    def page_groups(self) -> list[str]:
        return [INBOX_GROUP]

    def setup(self) -> None:
        raw = self.scope.get("query_string", b"").decode("latin-1")
        params = {k: v[0] for k, v in parse_qs(raw).items() if v}
        self.query = inbox.InboxQuery.from_params(params)

    def allowed(self) -> bool:
        return True

    def _items(self) -> Any:
        return ReviewItem.objects.visible_to(self.user)

    def snapshot(self) -> str:
        context = partials.inbox_context(self._items(), self.query)
        return partials.render(partials.INBOX, "inbox-list", context)

    async def review_created(self, message: dict[str, Any]) -> None:
        item_id = _item_id(message)
        if item_id is None:
            return
        # All the rows noted during a render are rendered together, with one page, one
        # count and one pager.
        self.note(item_id)

    def frames(self, batch: dict[int, bool]) -> list[str]:
        return self._rows_frames(batch)

    def _rows_frames(self, batch: dict[int, bool]) -> list[str]:
        """The rows of `batch`, then the counts and the pager, in frames of at most
        `FRAME_BUDGET` bytes each."""
        items = self._items()
        context = partials.inbox_context(items, self.query)
        parts = []
        for item_id in batch:
            parts += self._row_parts(items, context, item_id)
        context["oob"] = True
        parts.append(partials.render(partials.INBOX, "inbox-counts", context))
        parts.append(partials.render(partials.INBOX, "inbox-pager", context))
        return split_frames(parts)

    def _row_parts(self, items: Any, context: dict[str, Any], item_id: int) -> list[str]:
        """The row, put into the page's list (it replaces the row if the page has it), or
        a marker that removes the row if the page has it (it is not listed there now)."""
        item = items.select_related("thread", "claimed_by", "assignee").filter(pk=item_id).first()
        if item is None:
            return []
        listed_on = inbox.page_number_of(items, self.query, item)
        if listed_on is None or listed_on != context["page"].number:
            return [
                _into_list("inbox-rows", f'<li id="item-row-{item.pk}" data-remove hidden></li>')
            ]
        return [
            _into_list("inbox-rows", partials.render(partials.INBOX, "inbox-row", {"item": item}))
        ]


class ItemConsumer(LiveConsumer):
    """A review item page: its status as it changes, and who else is looking."""

    def page_groups(self) -> list[str]:
        return [review_item_group(self.item_id)]

    def setup(self) -> None:
        self.item_id = int(self.scope["url_route"]["kwargs"]["pk"])
        raw = self.scope.get("query_string", b"").decode("latin-1")
        self.digest = (parse_qs(raw).get("digest") or [""])[0][:64]

    def page(self) -> dict[str, Any]:
        return {"item_id": self.item_id}

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
            self.note("status")

    async def review_presence(self, message: dict[str, Any]) -> None:
        if _item_id(message) == self.item_id:
            self.note("presence")


class ThreadConsumer(LiveConsumer):
    """A thread page: run events as they happen, status, state, items, decisions."""

    def page_groups(self) -> list[str]:
        return [thread_group(self.thread_id)]

    def setup(self) -> None:
        # The page encodes an id outside the thread id rule (`reviews.converters`).
        self.thread_id = ThreadIdConverter().to_python(
            str(self.scope["url_route"]["kwargs"]["thread_id"])
        )

    def page(self) -> dict[str, Any]:
        return {"thread_id": self.thread_id}

    def allowed(self) -> bool:
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

    def frames(self, batch: dict[tuple[str, str], str]) -> list[str]:
        # The run events in the order they came, then the parts, with one context.
        parts = [html for (kind, _), html in batch.items() if kind == "event"]
        names = [name for name in THREAD_PARTS if ("part", name) in batch]
        if names:
            parts.append(self._parts(*names))
        return split_frames(parts)

    async def review_created(self, message: dict[str, Any]) -> None:
        for name in ("thread-items", "thread-decisions"):
            self.note(("part", name))

    async def run_status(self, message: dict[str, Any]) -> None:
        if message.get("thread_id") != self.thread_id:
            return
        names = ["thread-status"]
        if message.get("status") != "running":
            names += ["thread-items", "thread-decisions", "thread-state", "thread-history"]
        for name in names:
            self.note(("part", name))

    async def run_event(self, message: dict[str, Any]) -> None:
        record = message.get("event")
        if message.get("thread_id") != self.thread_id or not isinstance(record, dict):
            return
        fragment = event_fragment(message.get("run_id"), record)
        if fragment is not None:
            # The event's HTML is the same for every socket; only the check is theirs.
            self.note(("event", fragment[0]), fragment[1])


THREAD_PARTS = (
    "thread-status",
    "thread-items",
    "thread-decisions",
    "thread-state",
    "thread-history",
)
_EVENT_HTML: dict[str, tuple[str, str] | None] = {}
EVENT_CACHE = 512
"""Run event fragments kept rendered (the latest, for the sockets that have yet to get them)."""


def event_fragment(run_id: Any, record: dict[str, Any]) -> tuple[str, str] | None:
    """(element id, HTML) of a run event on a thread page, or None for a malformed one.

    Rendered once per event in this process, however many sockets show it: the HTML is
    escaped data of the event itself, the same for every reader (each socket still
    re-checks its user before it is sent). Runs on the event loop (no database)."""
    try:
        key = json.dumps([run_id, record], sort_keys=True, default=str)
    except (TypeError, ValueError):
        key = None
    if key is not None and key in _EVENT_HTML:
        return _EVENT_HTML[key]
    fragment = _render_event(run_id, record)
    if key is not None:
        if len(_EVENT_HTML) >= EVENT_CACHE:
            del _EVENT_HTML[next(iter(_EVENT_HTML))]
        _EVENT_HTML[key] = fragment
    return fragment


def _render_event(run_id: Any, record: dict[str, Any]) -> tuple[str, str] | None:
    try:
        event = threads.event_view(
            uuid.UUID(str(run_id)),
            int(record.get("seq")),  # type: ignore[arg-type]
            event=record.get("event", ""),
            node=record.get("node", ""),
            data=record.get("data"),
            at=record.get("at"),
        )
    except (TypeError, ValueError):
        return None
    html = partials.render(partials.THREAD, "run-event", {"event": event})
    return event["dom_id"], _into_list("thread-events", html)


__all__ = ["InboxConsumer", "ItemConsumer", "LiveConsumer", "ThreadConsumer"]
