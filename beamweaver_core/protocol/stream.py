"""A run's stream: its stored events as SSE frames, in order, then `end`.

Postgres is the truth: every frame with an id comes from a stored `RunEvent` (the id is
`<seq>-<index>`, seq numbered across the run's attempts, so ids never go backwards, even
when a worker dies and another takes the run over). Hints from the channel layer only
say when to read again; without them (Redis down) the stream polls. Live model deltas
are sent between stored events, without ids.

Memory is bounded per stream whatever the client does: the web server's `send` waits
for a client that does not take what it is sent (`beamweaver_core.backpressure`, which
drops one that takes nothing for `SEND_STALL_SECONDS`), and the stream encodes at most
`WINDOW_BYTES` (plus one stored event) ahead of it, reading its backlog by size
(`protocol.backlog`); the hint buffer is the layer's own (bounded). A stream of a run
still running also ends once it has sent `LG_STREAM_MAX_BYTES` (the SDKs reconnect with
`Last-Event-ID` to the `Location` the response names); a finished run's stream is sent
whole (the SDKs do not reconnect to a finished run's stream).

Before each batch of the run's events is sent, the caller's token and their right to see
the thread are checked again (`refusal`): a question the run asks can hide the thread from
them, and the stream then ends with an `error` event.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Any

from beamweaver_core.conf import conf
from beamweaver_core.models import Run
from beamweaver_core.protocol import lookup
from beamweaver_core.protocol.backlog import next_events
from beamweaver_core.protocol.db import in_thread
from beamweaver_core.protocol.errors import ProtocolError
from beamweaver_core.protocol.hints import Hints
from beamweaver_core.protocol.sse import HEARTBEAT, encode
from beamweaver_core.protocol.stopping import stop
from beamweaver_core.protocol.translate import Translator
from beamweaver_core.runtime.service import RunStateError

logger = logging.getLogger(__name__)

TERMINAL = frozenset(
    {Run.Status.INTERRUPTED, Run.Status.SUCCEEDED, Run.Status.FAILED, Run.Status.CANCELLED}
)
BATCH = 100
WINDOW_BYTES = 256 * 1024
"""The most a stream encodes ahead of what it has sent (plus one stored event): daphne's
`send` waits for a client that reads slowly (`beamweaver_core.backpressure`), and the
frames of the batch being sent wait with it."""
HEARTBEAT_SECONDS = 5.0
GAP_WAIT_SECONDS = 1.0
"""How long a stored step waits for the live model deltas before it (then sent without)."""
GAP_POLL_SECONDS = 0.05


@dataclass(frozen=True)
class StreamRequest:
    """Which run to stream, how, and from where (`after`: the last event id seen)."""

    run: Run
    modes: frozenset[str]
    token: str
    """The caller's API token, checked again before each batch of events is sent
    (`refusal`)."""
    subgraphs: bool = False
    after: tuple[int, int] | None = None
    cancel_on_disconnect: bool = False
    """Cancel the run if the client leaves before it stops (`on_disconnect="cancel"`)."""
    user: Any = None
    """The caller (who cancels it then)."""


def open_translator(request: StreamRequest) -> Translator:
    """The stream's translator, primed for a resumed stream (in a worker thread)."""
    translator = Translator(request.run, request.modes, request.subgraphs)
    if request.after is not None:
        translator.prime(request.after[0])
    return translator


def _batch(
    translator: Translator, cursor: int, skip: int, budget: float
) -> tuple[list[bytes], int, int | None]:
    """The encoded frames of the next stored events after `cursor` (from `cursor` itself,
    less its first `skip + 1` frames, when resuming in the middle of an event), stopping
    after the event that takes them past `budget` bytes; the new cursor; and the seq of a
    stored event not sent yet because live-only events before it (model deltas) may
    still be on their way (`Deltas.missing`)."""
    first = cursor if skip >= 0 else cursor + 1
    out: list[bytes] = []
    size = 0
    for row in next_events(translator.run.id, first, BATCH, budget):
        if translator.deltas.missing(cursor, row.seq):
            return out, cursor, row.seq
        for index, (event, data) in enumerate(translator.stored(row)):
            if row.seq == cursor and index <= skip:
                continue
            out.append(encode(event, data, f"{row.seq}-{index}"))
            size += len(out[-1])
        cursor = row.seq
        if size > budget:
            break
    translator.deltas.forget_below(cursor)
    return out, cursor, None


async def caller_refused(token: str, thread_id: str) -> dict[str, str] | None:
    """Why the caller may no longer see the thread (`{"error", "message"}`, the shape of
    the protocol's error event: the token was revoked, or a question the thread's run
    asked hid it from its user, `lookup.thread_again`), or None while they may."""
    try:
        await in_thread(lookup.thread_again)(token, thread_id)
    except ProtocolError as exc:
        return refusal_of(exc)
    return None


def refusal_of(exc: ProtocolError) -> dict[str, str]:
    """`lookup.thread_again`'s refusal in the shape of the protocol's error event."""
    kind = "AuthenticationError" if exc.status == 401 else "NotFoundError"
    return {"error": kind, "message": exc.detail}


async def refusal(token: str, thread_id: str) -> bytes | None:
    """The `error` frame that ends a stream whose caller may no longer see its thread
    (`caller_refused`), or None while they may."""
    refused = await caller_refused(token, thread_id)
    return None if refused is None else encode("error", refused)


def _status(run_id: Any) -> str | None:
    return Run.objects.filter(id=run_id).values_list("status", flat=True).first()


def cancel_quietly(user: Any, run_id: Any) -> None:
    """Cancel the run its client left (`on_disconnect="cancel"`), unless it stopped or
    the client may not cancel it."""
    try:
        stop(user, [Run.objects.get(id=run_id)])
    except (ProtocolError, RunStateError, Run.DoesNotExist) as exc:
        logger.info("Run %s not cancelled on disconnect: %s", run_id, exc)


async def frames(
    request: StreamRequest, translator: Translator, hints: Hints | None = None
) -> AsyncIterator[bytes]:
    """The SSE bytes of the run's stream (see the module docstring). `hints`: a
    subscription taken before the run was queued (so no live delta is missed), which the
    stream then owns."""
    ended = False
    produced = _produce(request, translator, hints)
    try:
        async for sent in produced:
            if sent == _DONE:
                ended = True
                continue
            if isinstance(sent, list):
                refused = await refusal(request.token, request.run.thread_id)
                if refused is not None:
                    ended = True
                    yield refused
                    return
                for chunk in sent:
                    yield chunk
            else:
                yield sent
    finally:
        await produced.aclose()
        if request.cancel_on_disconnect and not ended:
            await in_thread(cancel_quietly)(request.user, request.run.id)


_DONE = b""
"""Said by `_produce` when it stops on its own, the run stopped or the byte limit reached
(never sent on): anything else ending the stream is the client leaving."""


def _size(chunks: list[bytes]) -> int:
    return sum(len(chunk) for chunk in chunks)


async def _produce(
    request: StreamRequest, translator: Translator, hints: Hints | None
) -> AsyncGenerator[bytes | list[bytes], None]:
    """The stream's frames: the run's events in lists (`frames` checks that the caller
    may still see them before it sends them), the rest (metadata, `end`, heartbeats) as
    they are."""
    run = request.run
    batch = in_thread(_batch)
    status = in_thread(_status)
    cursor, skip = request.after if request.after is not None else (0, -1)
    limit = conf.lg_stream_max_bytes
    sent, idle_since = 0, time.monotonic()
    gap_since: float | None = None
    async with hints or Hints(run.thread_id) as subscription:

        async def live(timeout: float) -> list[bytes]:
            chunks = []
            for hint in await subscription.wait(timeout):
                if hint.get("type") == "run.event" and hint.get("run_id") == str(run.id):
                    chunks += [encode(e, d) for e, d in translator.live(hint.get("event") or {})]
            return chunks

        if request.after is None:
            yield encode("metadata", {"run_id": str(run.id), "attempt": max(run.attempts, 1)})
        while True:
            read_from = cursor  # rows may give no frame in the modes asked: "read" is cursor
            found, cursor, gap = await batch(
                translator, cursor, skip, min(limit - sent, WINDOW_BYTES)
            )
            skip = -1
            if found:
                sent += _size(found)
                yield found
            if sent > limit and (await status(run.id)) not in (*TERMINAL, None):
                yield _DONE
                return  # the client reconnects with Last-Event-ID (see the docstring)
            if gap is not None:
                # Model deltas come as hints, and may trail the stored step after them:
                # wait a little for them, so the tokens come before the step they belong to.
                gap_since = gap_since or time.monotonic()
                if time.monotonic() - gap_since > GAP_WAIT_SECONDS:
                    translator.deltas.give_up_before(gap)
                    gap_since = None
                chunks = await live(GAP_POLL_SECONDS)
                if chunks:
                    sent += _size(chunks)
                    yield chunks
                continue
            gap_since = None
            if found or cursor != read_from:
                idle_since = time.monotonic()
                continue
            current = await status(run.id)
            if current is None or current in TERMINAL:
                read_from = cursor
                found, cursor, gap = await batch(
                    translator, cursor, -1, min(limit - sent, WINDOW_BYTES)
                )
                if found:
                    sent += _size(found)
                    yield found
                if cursor == read_from and gap is None:
                    yield encode("end", None)
                    yield _DONE
                    return
                continue
            if sent > limit:
                yield _DONE
                return
            chunks = await live(conf.lg_poll_seconds(live=subscription.live))
            if chunks:
                sent += _size(chunks)
                yield chunks
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > HEARTBEAT_SECONDS:
                idle_since = time.monotonic()
                yield HEARTBEAT


__all__ = [
    "TERMINAL",
    "StreamRequest",
    "cancel_quietly",
    "frames",
    "open_translator",
    "refusal",
    "refusal_of",
]
