"""Waiting for a run's next stored events: channel-layer hints, with polling as the
fallback.

The truth is Postgres; the channel layer (Redis, or in-memory on one machine) only says
"look again" (`run.stored`, `run.status`, and the live `run.event` pushes, which also
carry the token-by-token model deltas that are never stored). When the layer is down or
loses a hint, the reader polls: it never waits longer than `poll` seconds without reading
Postgres again. A channel's buffer is the layer's own, bounded (a full one drops hints).
"""

from __future__ import annotations

import asyncio
import logging
from types import TracebackType
from typing import Any

from channels.layers import get_channel_layer

from beamweaver_core.runtime.groups import thread_group

logger = logging.getLogger(__name__)

LAYER_TIMEOUT = 2.0
DRAIN = 200


class Hints:
    """A subscription to one thread's hints (an async context manager)."""

    def __init__(self, thread_id: str) -> None:
        self.group = thread_group(thread_id)
        self.layer: Any = None
        self.channel: str | None = None
        # One receive at a time, never cancelled: cancelling a channel layer's receive
        # can lose the message it was taking (channels-redis).
        self._receiving: asyncio.Future[Any] | None = None

    @property
    def live(self) -> bool:
        return self.channel is not None

    async def __aenter__(self) -> Hints:
        layer = get_channel_layer()
        if layer is None or self.channel is not None:  # no layer, or subscribed already
            return self
        try:
            channel = await asyncio.wait_for(layer.new_channel(), LAYER_TIMEOUT)
            await asyncio.wait_for(layer.group_add(self.group, channel), LAYER_TIMEOUT)
        except Exception as exc:
            logger.warning("No live hints for %s (%r): polling Postgres instead", self.group, exc)
            return self
        self.layer, self.channel = layer, channel
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.channel is None:
            return
        channel, self.channel = self.channel, None
        if self._receiving is not None:
            self._receiving.cancel()
        try:
            await asyncio.wait_for(self.layer.group_discard(self.group, channel), LAYER_TIMEOUT)
        except Exception as error:
            logger.info("Could not leave %s: %r", self.group, error)

    async def wait(self, poll: float) -> list[dict[str, Any]]:
        """The hints that arrived, waiting up to `poll` seconds for the first (none on
        timeout). Without a live layer this just sleeps `poll` seconds: the caller reads
        Postgres."""
        if self.channel is None:
            await asyncio.sleep(poll)
            return []
        found: list[dict[str, Any]] = []
        for index in range(DRAIN):
            if self._receiving is None:
                self._receiving = asyncio.ensure_future(self.layer.receive(self.channel))
            if index == 0:
                await asyncio.wait({self._receiving}, timeout=poll)
            if not self._receiving.done():
                break
            receiving, self._receiving = self._receiving, None
            try:
                found.append(receiving.result())
            except Exception as exc:
                logger.warning(
                    "Hints for %s stopped (%r): polling Postgres instead", self.group, exc
                )
                self.channel = None
                break
        return found


__all__ = ["Hints"]
