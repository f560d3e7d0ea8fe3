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
from beamweaver_core.graph.threads import cleaned


def iter_events(run: Callable[[EventSink], Any], name: str) -> Iterator[Envelope]:
    """Yield the envelopes of `run(sink)` (run on a thread named for graph `name`).

    The hand-over holds one envelope, so the run keeps at most about a step ahead of its
    consumer. Closing the iterator (`break`, `close()`) stops the run at its next step
    boundary (`StreamClosed`): the steps saved so far stand, no later step runs. The
    thread gets the cleanups every task call gets before it hands over the end (a
    blocking checkpointer's pooled connection is given back)."""
    inbox: queue.Queue[Envelope | None] = queue.Queue(maxsize=1)
    closed = threading.Event()

    def deliver(envelope: Envelope | None) -> None:
        while not closed.is_set():
            try:
                inbox.put(envelope, timeout=0.05)
                return
            except queue.Full:
                continue

    sink = EventSink(deliver, keep=False)

    def work() -> None:
        try:
            cleaned(lambda: run(sink))()
        except BaseException:
            pass
        finally:
            deliver(None)

    worker = threading.Thread(target=work, name=f"beamweaver-stream-{name}", daemon=True)
    worker.start()
    try:
        while (envelope := inbox.get()) is not None:
            yield envelope
    finally:
        sink.closed = True
        closed.set()
    worker.join()


async def astream_events(run: Callable[[EventSink], Awaitable[Any]]) -> AsyncIterator[Envelope]:
    """Yield the envelopes of `await run(sink)` (run as a task on this event loop).

    Closing the iterator (`break` then `aclose()`) cancels the run's task at once, as
    closing LangGraph's `astream` does: the steps saved so far stand (a node running in a
    thread finishes there, unsaved)."""
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
    finished = False
    try:
        while (envelope := await inbox.get()) is not None:
            yield envelope
        finished = True
    finally:
        if finished:
            await task
        else:
            sink.closed = True
            task.cancel()


__all__ = ["astream_events", "iter_events"]
