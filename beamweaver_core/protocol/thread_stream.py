"""A thread's stream (`threads.join_stream`): the events of every run of the thread as it
runs, each run's in the stream modes it was started with, with a `metadata` event when a
run starts (`{"run_id", "attempt"}`) and when it is done (`{"status": "run_done",
"run_id"}`); it stays open for the thread's next runs, such as the resume an inbox
decision queues, until the client leaves.

Event ids are `<stored event id>-<index>`: a thread's stored events are written one run
at a time, so their ids only grow; `Last-Event-ID` resumes after the last one seen.
Without it the stream starts with what happens next. Each batch is sent once the caller's
token and their right to see the thread are checked again (`stream.refusal`); the stream
ends with an `error` event when they may no longer see it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from django.db.models import Max

from beamweaver_core.conf import conf
from beamweaver_core.models import Run, RunEvent, Thread
from beamweaver_core.protocol.db import in_thread
from beamweaver_core.protocol.deltas import Frame
from beamweaver_core.protocol.hints import Hints
from beamweaver_core.protocol.models import ProtocolRun
from beamweaver_core.protocol.sse import HEARTBEAT, encode
from beamweaver_core.protocol.stream import BATCH, HEARTBEAT_SECONDS, TERMINAL, refusal
from beamweaver_core.protocol.translate import Translator

DONE_EVENTS = frozenset({"run.completed", "run.interrupted", "run.failed"})
LIFECYCLE = frozenset({"lifecycle"})


class ThreadStream:
    """The translators of the thread's runs, and what was announced of them; `token`:
    the caller's, checked again before each batch of events is sent."""

    def __init__(self, thread: Thread, modes: frozenset[str], token: str) -> None:
        self.thread = thread
        self.token = token
        self.lifecycle = modes == LIFECYCLE
        self.translators: dict[Any, Translator] = {}
        self.done: set[Any] = set()

    def start(self, after: tuple[int, int] | None) -> tuple[int, int]:
        """Where to read from: after `after`, or after the thread's last stored event."""
        if after is not None:
            return after
        top = RunEvent.objects.filter(thread=self.thread).aggregate(top=Max("id"))["top"]
        return int(top or 0), -1

    def _translator(self, run_id: Any, seq: int, first: bool) -> Translator:
        found = self.translators.get(run_id)
        if found is None:
            run = Run.objects.get(id=run_id)
            found = Translator(run, self._modes(run), subgraphs=self._subgraphs(run))
            if not first:
                found.prime(seq)
            self.translators[run_id] = found
        return found

    def _modes(self, run: Run) -> frozenset[str]:
        records = ProtocolRun.objects.filter(run__thread=self.thread)
        record = records.filter(run=run).first() or records.order_by("-run__created_at").first()
        modes = (record.kwargs.get("stream_mode") if record is not None else None) or ["values"]
        return frozenset(modes)

    def _subgraphs(self, run: Run) -> bool:
        record = ProtocolRun.objects.filter(run=run).first()
        return bool(record is not None and record.kwargs.get("stream_subgraphs"))

    def batch(self, cursor: int, skip: int) -> tuple[list[tuple[str, Any, str | None]], int]:
        rows = RunEvent.objects.filter(thread=self.thread)
        rows = rows.filter(id__gte=cursor) if skip >= 0 else rows.filter(id__gt=cursor)
        out: list[tuple[str, Any, str | None]] = []
        for row in rows.order_by("id")[:BATCH]:
            frames: list[Frame] = []
            started = row.event == "run.started" and row.ns == ""
            if started:
                frames.append(("metadata", {"run_id": str(row.run_id), "attempt": 1}))
            translator = self._translator(row.run_id, row.seq, started)
            if not self.lifecycle:
                frames.extend(translator.stored(row))
            if row.event in DONE_EVENTS and row.ns == "":
                frames.append(("metadata", {"status": "run_done", "run_id": str(row.run_id)}))
                self.done.add(row.run_id)
            for index, (event, data) in enumerate(frames):
                if row.id == cursor and index <= skip:
                    continue
                out.append((event, data, f"{row.id}-{index}"))
            cursor = row.id
        return out, cursor

    def stopped(self) -> list[Any]:
        """The runs streamed here that stopped without a stored end (a cancelled run, or
        one the lease sweeper failed)."""
        open_runs = [r for r in self.translators if r not in self.done]
        statuses = dict(Run.objects.filter(id__in=open_runs).values_list("id", "status"))
        return [r for r in open_runs if statuses.get(r, Run.Status.CANCELLED) in TERMINAL]

    def announce_done(self, runs: list[Any]) -> list[tuple[str, Any, str | None]]:
        self.done.update(runs)
        return [("metadata", {"status": "run_done", "run_id": str(r)}, None) for r in runs]

    def live(self, hint: dict[str, Any]) -> list[Frame]:
        translator = self.translators.get(_uuid(hint.get("run_id")))
        if translator is None or self.lifecycle or hint.get("type") != "run.event":
            return []
        return translator.live(hint.get("event") or {})


def _uuid(value: Any) -> Any:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def past_every_event(after: tuple[int, int]) -> bool:
    """Whether `after` (a `Last-Event-ID`) is past every stored event: an id this server
    never gave. Stored ids only grow, so a stream after it would wait forever."""
    top = RunEvent.objects.aggregate(top=Max("id"))["top"] or 0
    return after[0] > top


async def thread_frames(
    stream: ThreadStream, after: tuple[int, int] | None
) -> AsyncIterator[bytes]:
    """The SSE bytes of the thread's stream (see the module docstring)."""
    cursor, skip = await in_thread(stream.start)(after)
    batch = in_thread(stream.batch)
    stopped = in_thread(stream.stopped)
    idle_since = time.monotonic()
    async with Hints(stream.thread.id) as hints:
        # The response's headers at once, as LangGraph's server sends them: daphne sends
        # them with the body's first bytes, so a client of a quiet thread saw nothing
        # until its first event or heartbeat. A comment, which SSE clients skip.
        yield HEARTBEAT
        while True:
            found, cursor = await batch(cursor, skip)
            skip = -1
            if not found:
                ended = await stopped()
                if ended:
                    # Their last events may have been committed since the batch was read.
                    found, cursor = await batch(cursor, skip)
                    if not found:
                        found = stream.announce_done(ended)
            stored = bool(found)
            if not stored:
                hinted = await hints.wait(conf.lg_poll_seconds(live=hints.live))
                found = [
                    (event, data, None) for hint in hinted for event, data in stream.live(hint)
                ]
                if hinted:
                    idle_since = time.monotonic()
            if found:
                refused = await refusal(stream.token, stream.thread.id)
                if refused is not None:
                    yield refused
                    return
            for event, data, event_id in found:
                yield encode(event, data, event_id)
            if stored:
                idle_since = time.monotonic()
                continue
            if time.monotonic() - idle_since > HEARTBEAT_SECONDS:
                idle_since = time.monotonic()
                yield HEARTBEAT


__all__ = ["ThreadStream", "past_every_event", "thread_frames"]
