"""Waiting for a run to stop (pause or end), for `runs.wait` and `runs.join`: the run's
row in Postgres, read again on every hint that may mean a new status and at least every
poll interval.

A run's progress hints (`run.event`, pushed live for every event, `run.stored`, and
`run.status` "running") do not mean it stopped: the worker records the outcome in its own
transaction and says so with `run.status` once it commits (a cancel too). Every other
hint, and a poll interval without one, reads the row again."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from beamweaver_core import statements
from beamweaver_core.conf import conf
from beamweaver_core.models import Run
from beamweaver_core.protocol import lookup
from beamweaver_core.protocol.db import in_thread
from beamweaver_core.protocol.errors import ProtocolError
from beamweaver_core.protocol.hints import Hints
from beamweaver_core.protocol.outcome import result
from beamweaver_core.protocol.stream import TERMINAL, cancel_quietly, refusal_of

KEEPALIVE_SECONDS = 5.0
PROGRESS_HINTS = frozenset({"run.event", "run.stored"})
"""Hints that a run moved on without stopping."""


def _may_have_stopped(hint: dict[str, Any]) -> bool:
    kind = hint.get("type")
    if kind == "run.status":
        return hint.get("status") != Run.Status.RUNNING
    return kind not in PROGRESS_HINTS


RUN_ID = uuid.UUID("00000000-0000-4000-8000-000000000000")
"""The run id `_run`'s statement is compiled with (each call's own replaces it)."""


def _run(run_id: Any) -> Run | None:
    """The run as it is now: one prepared statement, compiled once (a wait asks it each
    time a hint says the run may have stopped)."""
    statement = statements.compiled_model(
        "lg run again", lambda: Run.objects.filter(id=RUN_ID).order_by()[:1], stand_ins=[RUN_ID]
    )
    found = statements.models(statement, {RUN_ID: run_id}, prepared=True)
    return found[0] if found else None


async def _next_status_hint(hints: Hints) -> None:
    """Until a hint that the run may have stopped, or the poll interval has passed."""
    poll = conf.lg_poll_seconds(live=hints.live)
    deadline = time.monotonic() + poll
    while True:
        found = await hints.wait(max(0.0, deadline - time.monotonic()))
        if not found or any(_may_have_stopped(h) for h in found):
            return


async def until_stopped(run: Run) -> Run | None:
    """The run once it is no longer waiting, queued or running (`None` if it was
    deleted meanwhile). A run its caller has just read stopped (`runs.join` on a run
    that paused or ended) is returned as read, not read again: the request is answered as
    of that read, as it would be had a cancel or a re-queue come a moment later."""
    if run.status in TERMINAL:
        return run
    load = in_thread(_run)
    async with Hints(run.thread_id) as hints:
        while True:
            current = await load(run.id)
            if current is None or current.status in TERMINAL:
                return current
            await _next_status_hint(hints)


def _result_for(stopped: Run | None, token: str | None, thread_id: str | None) -> dict[str, Any]:
    """The stopped run's result (`{}` if it was deleted). With `token` and `thread_id`,
    the caller is checked again first, in the statement that also reads what the result
    needs of the thread (`lookup.thread_again`, as `runs.join` does); a refusal is the
    body's `__error__`."""
    thread = None
    if token is not None and thread_id is not None:
        try:
            thread = lookup.thread_again(token, thread_id, latest_options=True)
        except ProtocolError as exc:
            return {"__error__": refusal_of(exc)}
    return result(stopped, thread) if stopped is not None else {}


async def result_body(
    run: Run,
    *,
    cancel_on_disconnect: bool = False,
    user: Any = None,
    token: str | None = None,
    thread_id: str | None = None,
) -> AsyncIterator[bytes]:
    """The run's result (`outcome.result`) once it stops, after a newline every few
    seconds meanwhile (as LangGraph's server does: proxies keep the request open, and
    JSON parsers skip the leading white space). `cancel_on_disconnect`: a client that
    leaves first cancels the run (`on_disconnect="cancel"`). With `token` and
    `thread_id`, the caller is checked again before the result is sent (as `runs.join`
    does; the 200 is sent by then, so a refusal is the body's `__error__`, the shape of a
    failed run's result)."""
    waiter = asyncio.ensure_future(until_stopped(run))
    try:
        while True:
            done, _ = await asyncio.wait({waiter}, timeout=KEEPALIVE_SECONDS)
            if done:
                break
            yield b"\n"
        body = await in_thread(_result_for)(waiter.result(), token, thread_id)
        yield json.dumps(body, ensure_ascii=False, separators=(",", ":"), default=str).encode()
    finally:
        if not waiter.done():
            waiter.cancel()
            if cancel_on_disconnect:
                await in_thread(cancel_quietly)(user, run.id)


__all__ = ["result_body", "until_stopped"]
