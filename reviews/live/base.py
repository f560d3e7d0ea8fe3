"""What every live page's consumer shares: authentication, re-checks, notes, the bounds
on how fast each user opens sockets (`reviews.live.handshakes`) and how many they hold
open (`reviews.live.slots`), and ignoring what clients send (all but a presence ping, at
most one per `PING_SECONDS`)."""

from __future__ import annotations

import json
import logging
from collections.abc import Hashable
from time import monotonic
from typing import Any, cast

from channels.auth import UserLazyObject
from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from beamweaver_core.users import User
from reviews import metrics, realtime
from reviews.live import handshakes, slots
from reviews.live.rounds import SNAPSHOT, render_round, rounds
from reviews.live.session import Recheck

logger = logging.getLogger(__name__)

MAX_FRAME = 4096
"""The longest client frame read (in characters); longer ones are ignored unread (daphne
refuses messages over `BEAMWEAVER["WEBSOCKET_MAX_MESSAGE"]` before that)."""
PING_SECONDS = 10.0
"""A socket's presence pings are handled at most once in this long (the connect counts as
one); the others are ignored. The item page pings every 20 s and shows who is looking for
`partials.PRESENCE_TTL` (60 s). Each handled ping writes the presence row on the one
database thread; a client pinging in a loop made one write per frame (300 pings: 269
writes within 3 s), queued ahead of every other socket's checks and pushes."""
ROW_HINTS = frozenset(
    {realtime.CREATED, realtime.UPDATED, realtime.DECIDED, realtime.CANCELLED, realtime.EXPIRED}
)
"""The hints an inbox answers by re-rendering the row (every one through `review_created`)."""
HINTS = ROW_HINTS | {realtime.PRESENCE, "run.event", "run.status"}
"""The channel layer's messages: noted on the event loop (`LiveConsumer.dispatch`)."""
CLOSE_FORBIDDEN = 4403
CLOSE_FAILED = 1011
"""The close code of a socket whose push failed: "internal error", which htmx's ws
extension retries (as it does 1006, 1012 and 1013), so the page reconnects and resyncs.
A plain close (1000) is not retried: the page stayed without live updates."""
CLOSE_TOO_MANY = 4429
"""The close code of a socket refused because its user holds
`BEAMWEAVER["LIVE_SOCKETS_PER_USER"]` open in this process already. Sent after accepting:
a close before accepting reaches a browser as 1006, which htmx's ws extension retries
(its first retry within a second); after 4429 it does not retry, and the page script
says why and tries again itself, slowly (`reviews/static/beamweaver/js/beamweaver.js`)."""
CLOSE_TOO_FAST = 4430
"""The close code of a socket refused because its user opened `BEAMWEAVER["RATE_SOCKETS"]`
in the current window already (`reviews.live.handshakes`). Accepted first, for the reason
4429 is, then sent one frame that is not HTML, `{"type": "retry", "seconds": n}` (the
seconds left in the window: daphne drops a close's reason), then closed. The page script
shows "Reconnecting…", as after any lost connection, and opens its next socket once those
seconds are over, not before."""


class LiveConsumer(AsyncWebsocketConsumer):
    """A live page's socket.

    Hints from the channel layer are noted on the event loop (`note`), never handled one
    by one on the database thread: the event loop's next round (`reviews.live.rounds`)
    re-checks every socket with notes, each with its own check, and renders what they
    noted (`frames`) once per `view`, in one call on the database thread; notes that
    arrive during a round wait for the next one. One check and render per hint fell
    behind under a burst, until the channel layer's expiry dropped hints
    (bench.hostile cases 25 and 50)."""

    user: User
    """The user as the last check read them (`still_allowed`)."""
    joined: list[str]
    """The channel-layer groups this socket is in (left once, whatever ends it)."""
    slot: Any = None
    """The primary key this socket is counted under in `slots` (None: not counted)."""

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
        """Whether `self.user` may see this page, with the queries of
        `reviews.permissions` (runs in a worker thread; the re-check without `LiveCheck`)."""
        raise NotImplementedError

    def view(self) -> Hashable:
        """What this socket's frames depend on besides its notes: sockets with the same
        view and notes are sent the same bytes, rendered once a round. By default the
        page as one user sees it (what `page` read of its path). Never the raw path or
        query string: parameters a page does not read (`?x=1`, `?x=2`) made each socket a
        view of its own, one render per socket a round."""
        return (type(self), self.user.pk, tuple(sorted(self.page().items())))

    def snapshot(self) -> str:
        """The page's live parts as out-of-band fragments (runs in a worker thread)."""
        raise NotImplementedError

    def frames(self, batch: dict[Any, Any]) -> list[str]:
        """The frames that answer the notes of `batch` (runs in a worker thread, after
        the re-check)."""
        raise NotImplementedError

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        # Every way a socket ends (a disconnect, an abnormal close, an exception in a
        # handler, the server cancelling the consumer) leaves through here: its place in
        # `slots` is given back once, whatever happened.
        # So are the page's groups, when a connect failed after joining them (channels
        # then sends no disconnect).
        try:
            await super().__call__(scope, receive, send)
        finally:
            if self.slot is not None:
                slots.give_back(self.slot)
                self.slot = None
            await self.leave_groups()

    async def leave_groups(self) -> None:
        joined: list[str] = getattr(self, "joined", [])
        self.joined = []
        for group in joined:
            await self.channel_layer.group_discard(group, self.channel_name)

    async def connect(self) -> None:
        self.joined = []
        self.pinged_at = monotonic()
        # Counted before the first check, which needs the database thread: a refusal
        # costs no query, however fast a client reconnects. The handshake's user (the
        # session's, as the auth middleware read it) is who is counted; an anonymous one
        # is refused by the check.
        user = getattr(self.scope.get("user"), "pk", None)
        if user is not None:
            wait = await handshakes.too_soon(user)
            if wait is not None:
                await self.accept()
                await self.send(text_data=json.dumps({"type": "retry", "seconds": wait}))
                await self.close(code=CLOSE_TOO_FAST)
                return
            if not slots.take(user):
                await self.accept()
                await self.close(code=CLOSE_TOO_MANY)
                return
            self.slot = user
        if not await database_sync_to_async(self.check_handshake)():
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
        # connections around its work (`database_sync_to_async`). A client's frame is
        # read on the event loop too: channels' hop to the database thread came before
        # every frame, even one that is ignored, so a client sending in a loop queued
        # work for the one database thread of the process.
        kind = message.get("type")
        if kind in HINTS:
            metrics.hint_noted(self, message)
        if kind in HINTS or kind == "websocket.receive":
            await getattr(self, get_handler_name(message))(message)
            return
        await super().dispatch(message)

    async def disconnect(self, code: int) -> None:
        self.closing = True
        await self.leave_groups()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """A client's frame: a presence ping (a JSON object whose `type` is
        `presence.ping`) is handled at most once per `PING_SECONDS`; anything else (binary,
        over `MAX_FRAME`, not JSON, nested too deep to parse, not an object, another
        type) is ignored, without a reply."""
        if text_data is None or len(text_data) > MAX_FRAME:
            return
        try:
            frame = json.loads(text_data)
        except (ValueError, RecursionError):  # `[[[[…` of 4 KB passes the recursion limit
            return
        if not isinstance(frame, dict) or frame.get("type") != "presence.ping":
            return
        now = monotonic()
        if now - self.pinged_at < PING_SECONDS:
            return
        self.pinged_at = now
        await self.ping()

    async def ping(self) -> None:
        """A presence ping (only the item page cares)."""

    async def push(self, html: str) -> None:
        if html:
            await self.send(text_data=html)

    @property
    def closing(self) -> bool:
        """Whether the socket is closing (nothing more is rendered or sent for it)."""
        return bool(self.__dict__.get("_closing"))

    @closing.setter
    def closing(self, value: bool) -> None:
        self._closing = value

    def note(self, key: Any, value: Any = True) -> None:
        """Remember what changed (`key`), for the next round of this process."""
        self.dirty[key] = value
        if not self.closing:
            rounds().add(self)

    @property
    def dirty(self) -> dict[Any, Any]:
        """The notes the next round answers."""
        notes: dict[Any, Any] = self.__dict__.setdefault("_dirty", {})
        return notes

    def take_notes(self) -> dict[Any, Any]:
        """The notes so far, for a round (the socket starts noting afresh)."""
        batch = self.dirty
        self._dirty: dict[Any, Any] = {}
        return batch

    def put_back(self, batch: dict[Any, Any]) -> None:
        """A round had no time for `batch`: its notes wait, with those noted since."""
        self._dirty = self.merged(batch, self.dirty)

    def merged(self, earlier: dict[Any, Any], later: dict[Any, Any]) -> dict[Any, Any]:
        """The notes of a batch put back for the next round, with those noted since."""
        return {**earlier, **later}

    async def deliver(self, frames: list[str] | BaseException | None) -> None:
        """Send what a round rendered: the frames, or close (4403 when refused; a failed
        render closes with 1011, so that the page reconnects and resyncs from Postgres)."""
        if self.closing:
            return
        if isinstance(frames, BaseException):
            logger.warning("Live push failed; closing the socket", exc_info=frames)
            self.closing = True
            await self.close(code=CLOSE_FAILED)
        elif frames is None:
            self.closing = True
            await self.close(code=CLOSE_FORBIDDEN)
        else:
            for frame in frames:
                await self.push(frame)
            metrics.frames_sent(self)

    def checked_frames(self, batch: dict[Any, Any]) -> list[str] | None:
        """The frames of `batch` if the user may still see the page (None if not), as a
        round of this socket alone renders them."""
        outcome = render_round([(self, batch)])[0]
        if isinstance(outcome, BaseException):
            raise outcome
        return cast("list[str] | None", outcome)

    def check_handshake(self) -> bool:
        """The first check, before accepting (reads the page's parameters first). A page
        whose parameters `setup` cannot read (`ValueError`: a thread id with a NUL, from
        `%2500`) is refused like a page that does not exist."""
        try:
            self.setup()
        except ValueError:
            return False
        return self.still_allowed()

    def still_allowed(self) -> bool:
        """The session still logs this user in, and the user may still see the page
        (`reviews.live.session`); `self.user` is then the user as read now."""
        recheck = self.__dict__.get("_recheck")
        if recheck is None:
            key = getattr(self.scope.get("session"), "session_key", None)
            recheck = self._recheck = Recheck(key, self.page())
        # Before the first check, the user the handshake's session named.
        current: User | UserLazyObject | None = self.__dict__.get("user") or self.scope.get("user")
        fresh = recheck.fresh_user(current, self._allowed_as)
        if fresh is None:
            return False
        self.user = fresh
        return True

    def _allowed_as(self, user: User) -> bool:
        self.user = user
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

    async def run_stored(self, message: dict[str, Any]) -> None:
        """Events were stored (a hint for the protocol's streams): pages have them already
        from the live `run.event` pushes. Without this handler channels raised "No handler
        for message type run.stored" and closed the socket at every step."""

    async def run_status(self, message: dict[str, Any]) -> None:
        pass


def item_id_of(message: dict[str, Any]) -> int | None:
    """The review item a hint names (None if it names none)."""
    try:
        return int(message.get("item_id"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
