"""Waiting for a run to stop (pause or end), for `runs.wait` and `runs.join`: the run's
row in Postgres, read again on every hint and at least every poll interval."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from beamweaver_core.conf import conf
from beamweaver_core.models import Run
from beamweaver_core.protocol.db import in_thread
from beamweaver_core.protocol.hints import Hints
from beamweaver_core.protocol.outcome import result
from beamweaver_core.protocol.stream import TERMINAL, cancel_quietly

KEEPALIVE_SECONDS = 5.0


def _run(run_id: Any) -> Run | None:
    found: Run | None = Run.objects.filter(id=run_id).first()
    return found


async def until_stopped(run: Run) -> Run | None:
    """The run once it is no longer waiting, queued or running (`None` if it was
    deleted meanwhile)."""
    load = in_thread(_run)
    async with Hints(run.thread_id) as hints:
        while True:
            current = await load(run.id)
            if current is None or current.status in TERMINAL:
                return current
            await hints.wait(conf.lg_poll_seconds(live=hints.live))


async def result_body(
    run: Run, *, cancel_on_disconnect: bool = False, user: Any = None
) -> AsyncIterator[bytes]:
    """The run's result (`outcome.result`) once it stops, after a newline every few
    seconds meanwhile (as LangGraph's server does: proxies keep the request open, and
    JSON parsers skip the leading white space). `cancel_on_disconnect`: a client that
    leaves first cancels the run (`on_disconnect="cancel"`)."""
    waiter = asyncio.ensure_future(until_stopped(run))
    try:
        while True:
            done, _ = await asyncio.wait({waiter}, timeout=KEEPALIVE_SECONDS)
            if done:
                break
            yield b"\n"
        stopped = waiter.result()
        body = await in_thread(result)(stopped) if stopped is not None else {}
        yield json.dumps(body, ensure_ascii=False, separators=(",", ":"), default=str).encode()
    finally:
        if not waiter.done():
            waiter.cancel()
            if cancel_on_disconnect:
                await in_thread(cancel_quietly)(user, run.id)


__all__ = ["result_body", "until_stopped"]
