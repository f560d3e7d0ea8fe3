"""Streaming bridges: a run's envelopes as a live iterator, sync or async.

A run emits `Envelope`s into an `EventSink`; these bridges run it in the background (a
thread, or a task on the running event loop) and hand the envelopes over as they happen.
The last one is `run.completed`, `run.interrupted` or `run.failed`, whose
`data["result"]` / `data["exception"]` carries the outcome, so the run's own exception is
not raised here.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

from beamweaver_core.graph.runtime import Envelope, EventSink


def iter_events(run: Callable[[EventSink], Any], name: str) -> Iterator[Envelope]:
    """Yield the envelopes of `run(sink)` (run on a thread named for graph `name`)."""
    inbox: queue.Queue[Envelope | None] = queue.Queue()
    sink = EventSink(inbox.put, keep=False)

    def work() -> None:
        try:
            run(sink)
        except BaseException:
            pass
        finally:
            inbox.put(None)

    worker = threading.Thread(target=work, name=f"beamweaver-stream-{name}", daemon=True)
    worker.start()
    while (envelope := inbox.get()) is not None:
        yield envelope
    worker.join()


async def astream_events(run: Callable[[EventSink], Awaitable[Any]]) -> AsyncIterator[Envelope]:
    """Yield the envelopes of `await run(sink)` (run as a task on this event loop)."""
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[Envelope | None] = asyncio.Queue()

    def deliver(envelope: Envelope) -> None:
        loop.call_soon_threadsafe(inbox.put_nowait, envelope)

    sink = EventSink(deliver, keep=False)

    async def work() -> None:
        try:
            await run(sink)
        except BaseException:
            pass
        finally:
            loop.call_soon_threadsafe(inbox.put_nowait, None)

    task = asyncio.ensure_future(work())
    try:
        while (envelope := await inbox.get()) is not None:
            yield envelope
    finally:
        await task


__all__ = ["astream_events", "iter_events"]
