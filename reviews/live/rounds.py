"""The push rounds of one event loop: every socket with notes waits for the next round,
which re-checks each of them and renders their frames, once per view, in one call on the
database thread, then sends.

A socket's notes that arrive during a round wait for the next one (one check and one
render for all of them). One call per socket cost a thread hop and a pooled connection
each (bench.hostile case 50: 1,000 sockets, 50 run events a second); one render per
socket cost a render per open inbox for every interrupt (issue 16: 14.6 ms of server CPU
per socket per interrupt with 100 inboxes open)."""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from channels.db import database_sync_to_async
from django.db import close_old_connections

if TYPE_CHECKING:
    from reviews.live.base import LiveConsumer

logger = logging.getLogger(__name__)

SNAPSHOT = ("snapshot",)
"""The note a (re)connect makes: the page's live parts, sent first."""


class _Later:
    """The type of `LATER`."""


LATER = _Later()
"""A round's outcome for a socket it had no time left for (its notes wait)."""
Outcome: TypeAlias = "list[str] | BaseException | _Later | None"
"""A socket's outcome of a round (`render_round`)."""
ROUND_SECONDS = 0.25
"""How long one round may hold the database thread: the rest waits for the next round,
and the handshakes queued meanwhile run in between."""


class Rounds:
    """The rounds of one event loop (`rounds()`)."""

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
                batch = consumer.take_notes()
                if batch and not consumer.closing:
                    round_.append((consumer, batch))
            self.waiting.clear()
            if not round_:
                continue
            try:
                outcomes = await database_sync_to_async(render_round)(round_)
            except Exception as exc:  # the call itself failed (not one socket's render)
                outcomes = [exc] * len(round_)
            later: dict[LiveConsumer, None] = {}
            for (consumer, batch), outcome in zip(round_, outcomes, strict=True):
                if isinstance(outcome, _Later):
                    consumer.put_back(batch)
                    later[consumer] = None
                    continue
                try:
                    await consumer.deliver(outcome)
                except Exception:
                    logger.warning("Live push failed", exc_info=True)
            if later:  # first in the next round
                self.waiting = {**later, **self.waiting}


def render_round(round_: list[tuple[LiveConsumer, dict[Any, Any]]]) -> list[Outcome]:
    """Each socket's frames: None when its check refused it, an exception when its check
    or its view's render failed, `LATER` when the round had no time left to check it.

    The sockets that passed their check are grouped by `view`; each group is rendered
    once, for the union of its sockets' notes (answering a note a socket did not make is
    harmless: a row or part is replaced by what it is now), and its sockets are sent the
    same frames. Sockets that (re)connected get the view's snapshot, also rendered once."""
    outcomes: list[Outcome] = [None] * len(round_)
    groups: dict[Hashable, list[int]] = {}
    deadline = time.monotonic() + ROUND_SECONDS
    for index, (consumer, _batch) in enumerate(round_):
        if index and time.monotonic() > deadline:
            outcomes[index] = LATER
            continue
        try:
            if consumer.still_allowed():
                groups.setdefault(consumer.view(), []).append(index)
        except Exception as exc:
            outcomes[index] = exc
            # A connection that broke is replaced before the next socket's check (as
            # between two calls of `database_sync_to_async`), so one failure closes one
            # socket, not the round.
            close_old_connections()
    for members in groups.values():
        rendered: Sequence[list[str] | Exception]
        try:
            rendered = _render_view([round_[index] for index in members])
        except Exception as exc:
            rendered = [exc] * len(members)
            close_old_connections()
        for index, frames in zip(members, rendered, strict=True):
            outcomes[index] = frames
    return outcomes


def _render_view(members: list[tuple[LiveConsumer, dict[Any, Any]]]) -> list[list[str]]:
    """The frames of every socket of one view (rendered by the first of them)."""
    renderer = members[0][0]
    notes: dict[Any, Any] = {}
    for _consumer, batch in members:
        for key, value in batch.items():
            if key != SNAPSHOT:
                notes.setdefault(key, value)
    shared = renderer.frames(notes) if notes else []
    snapshot = [renderer.snapshot()] if any(SNAPSHOT in b for _c, b in members) else []
    out = []
    for _consumer, batch in members:
        frames = (snapshot if SNAPSHOT in batch else []) + (
            shared if len(batch) > (SNAPSHOT in batch) else []
        )
        out.append([frame for frame in frames if frame])
    return out


_ROUNDS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Rounds] = weakref.WeakKeyDictionary()


def rounds() -> Rounds:
    """The running event loop's rounds."""
    loop = asyncio.get_running_loop()
    found = _ROUNDS.get(loop)
    if found is None:
        found = _ROUNDS[loop] = Rounds()
    return found
