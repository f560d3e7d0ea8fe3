"""The protocol's SSE streams: `runs.stream` (start a run and stream it), `runs.join_stream`
(a run's stream, resumable with `Last-Event-ID`) and `threads.join_stream` (every run
of a thread as it comes)."""

from __future__ import annotations

import uuid
from typing import Any

from django.http import HttpRequest, StreamingHttpResponse
from django.http.response import HttpResponseBase

from beamweaver_core.protocol import lookup, schemas
from beamweaver_core.protocol.auth import token_of
from beamweaver_core.protocol.body import flag, json_body
from beamweaver_core.protocol.db import in_thread
from beamweaver_core.protocol.errors import ProtocolError
from beamweaver_core.protocol.hints import Hints
from beamweaver_core.protocol.launch import launch
from beamweaver_core.protocol.run_views import located
from beamweaver_core.protocol.sse import parse_event_id
from beamweaver_core.protocol.stream import StreamRequest, frames, open_translator
from beamweaver_core.protocol.thread_stream import ThreadStream, past_every_event, thread_frames

THREAD_MODES = ("run_modes", "lifecycle")


def _event_stream(content: Any) -> StreamingHttpResponse:
    response = StreamingHttpResponse(content, content_type="text/event-stream; charset=utf-8")
    response["Cache-Control"] = "no-store"
    response["X-Accel-Buffering"] = "no"
    return response


def _after(request: HttpRequest) -> tuple[int, int] | None:
    try:
        return parse_event_id(request.headers.get("Last-Event-ID"))
    except ValueError as exc:
        raise ProtocolError(422, str(exc)) from None


def _modes(value: Any) -> frozenset[str]:
    modes = [value] if isinstance(value, str) else list(value or ["values"])
    unknown = sorted(set(modes) - set(schemas.STREAM_MODES))
    if unknown:
        raise ProtocolError(
            422, f"Unknown stream mode(s) {unknown}; use {', '.join(schemas.STREAM_MODES)}."
        )
    return frozenset(modes)


def _sse(request: StreamRequest, translator: Any) -> HttpResponseBase:
    return located(_event_stream(frames(request, translator)), request.run, "/stream")


async def stream(request: HttpRequest, user: Any, thread_id: str | None = None) -> HttpResponseBase:
    schema = "RunCreateStateless" if thread_id is None else "RunCreateStateful"
    body = await in_thread(json_body)(request, schema)
    modes = _modes(body.get("stream_mode"))
    own = str(uuid.uuid4()) if thread_id is None else None
    # Subscribed before the run is queued, so its first live deltas reach this stream.
    hints = await Hints(thread_id or str(own)).__aenter__()
    try:
        run = await in_thread(launch)(user, thread_id, body, own_thread=own)
        wanted = StreamRequest(
            run=run,
            modes=modes,
            token=token_of(request),
            subgraphs=bool(body.get("stream_subgraphs")),
            cancel_on_disconnect=body.get("on_disconnect") == "cancel",
            user=user,
        )
        translator = await in_thread(open_translator)(wanted)
    except BaseException:
        await hints.__aexit__(None, None, None)
        raise
    return located(_event_stream(frames(wanted, translator, hints)), run, "/stream")


def _join_request(request: HttpRequest, user: Any, thread_id: str, run_id: str) -> StreamRequest:
    run = lookup.run(user, thread_id, run_id, record=True)
    record = lookup.protocol_record(run)
    kwargs = record.kwargs if record is not None else {}
    asked = [
        mode for mode in request.GET.getlist("stream_mode") if mode
    ]  # the SDK sends "" for None
    return StreamRequest(
        run=run,
        modes=_modes(asked or kwargs.get("stream_mode")),
        token=token_of(request),
        subgraphs=bool(kwargs.get("stream_subgraphs")),
        after=_after(request),
        cancel_on_disconnect=flag(request.GET, "cancel_on_disconnect"),
        user=user,
    )


async def join_stream(
    request: HttpRequest, user: Any, thread_id: str, run_id: str
) -> HttpResponseBase:
    wanted = await in_thread(_join_request)(request, user, thread_id, run_id)
    return _sse(wanted, await in_thread(open_translator)(wanted))


def _thread_stream(
    request: HttpRequest, user: Any, thread_id: str
) -> tuple[ThreadStream, tuple[int, int] | None]:
    thread = lookup.thread(user, thread_id)
    after = _after(request)
    if after is not None and past_every_event(after):
        raise ProtocolError(
            422,
            f"Last-Event-ID {after[0]}-{after[1]} is past every event this server has sent; "
            "reconnect without it to get what happens next.",
        )
    modes = (
        request.GET.getlist("stream_mode") or request.GET.getlist("stream_modes") or ["run_modes"]
    )
    modes = [m.strip() for value in modes for m in value.split(",")]
    unknown = sorted(set(modes) - set(THREAD_MODES))
    if unknown:
        raise ProtocolError(
            422, f"Invalid stream mode(s) {unknown}; a thread streams {', '.join(THREAD_MODES)}."
        )
    return ThreadStream(thread, frozenset(modes), token_of(request)), after


async def thread_stream(request: HttpRequest, user: Any, thread_id: str) -> HttpResponseBase:
    stream, after = await in_thread(_thread_stream)(request, user, thread_id)
    return _event_stream(thread_frames(stream, after))


__all__ = ["join_stream", "stream", "thread_stream"]
