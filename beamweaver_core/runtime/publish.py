"""Fire-and-forget hints on the channel layer, from any thread.

The channel layer is at-most-once by design; every push here is a hint that a consumer can
rebuild from Postgres. Sending never blocks the caller and never raises into it: a
decision or a run must not slow down or fail because Redis is slow or down.

Where a hint runs: inside an event loop, as a task on it; from a thread, on a background
publisher loop (Redis layer), or on the server's own loop for the in-memory layer, whose
queues belong to that loop (`serve_from` registers it; without it there is no consumer
in this process and the hint is dropped).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Coroutine
from typing import Any

from channels.layers import InMemoryChannelLayer, get_channel_layer

logger = logging.getLogger(__name__)

_PUSH_TIMEOUT = 5.0
_lock = threading.Lock()
_home_loop: asyncio.AbstractEventLoop | None = None
_publisher_loop: asyncio.AbstractEventLoop | None = None


def serve_from(loop: asyncio.AbstractEventLoop) -> None:
    """Register the server's event loop (the in-memory layer's hints must run there)."""
    global _home_loop
    _home_loop = loop


def _publisher() -> asyncio.AbstractEventLoop:
    global _publisher_loop
    with _lock:
        if _publisher_loop is None or _publisher_loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=loop.run_forever, name="beamweaver-publisher", daemon=True
            )
            thread.start()
            _publisher_loop = loop
        return _publisher_loop


def _target(layer: Any) -> asyncio.AbstractEventLoop | None:
    if isinstance(layer, InMemoryChannelLayer):
        home = _home_loop
        return home if home is not None and home.is_running() else None
    return _publisher()


def _dispatch(make: Any, what: str) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    try:
        if running is not None and (
            running is _home_loop or not isinstance(layer, InMemoryChannelLayer)
        ):
            running.create_task(_guarded(make(layer), what))
            return
        loop = _target(layer)
        if loop is None:
            return
        asyncio.run_coroutine_threadsafe(_guarded(make(layer), what), loop)
    except Exception:
        logger.warning("Dropped channel-layer hint %s", what, exc_info=True)


_order: dict[asyncio.AbstractEventLoop, asyncio.Lock] = {}


async def _guarded(coro: Coroutine[Any, Any, Any], what: str) -> None:
    # One hint at a time per loop, in the order they were dispatched (asyncio's lock is
    # fair): a stream of model deltas reaches readers in the order it was produced.
    loop = asyncio.get_running_loop()
    lock = _order.get(loop)
    if lock is None:
        lock = _order[loop] = asyncio.Lock()
    async with lock:
        try:
            await asyncio.wait_for(coro, _PUSH_TIMEOUT)
        except Exception as exc:
            logger.warning("Dropped channel-layer hint %s: %r", what, exc)


def group_send(group: str, message: dict[str, Any]) -> None:
    """Send `message` to every consumer in `group` (a hint; never blocks, never raises),
    stamped with when it was sent (`sent_at`, for the push latency metric)."""
    message = {**message, "sent_at": time.time()}
    _dispatch(lambda layer: layer.group_send(group, message), f"{message.get('type')} -> {group}")


def channel_send(channel: str, message: dict[str, Any]) -> None:
    """Send `message` to one named channel (a hint; never blocks, never raises)."""
    _dispatch(lambda layer: layer.send(channel, message), f"{message.get('type')} -> {channel}")


__all__ = ["channel_send", "group_send", "serve_from"]
