"""What the pages show of a thread: its current state, the conversation in it, its
checkpoint history and its run events, read from Postgres and redacted for display."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from beamweaver_core.checkpoint.postgres import PostgresCheckpointer
from beamweaver_core.models import Checkpoint, RunEvent, Thread
from beamweaver_core.redaction import redact
from beamweaver_core.runtime import registry
from beamweaver_core.types import Interrupt
from reviews import payloads

logger = logging.getLogger(__name__)

HISTORY_LIMIT = 50
EVENTS_LIMIT = 200


@dataclass(frozen=True)
class ChatLine:
    """One message of the conversation, ready to render."""

    role: str
    content: str
    name: str = ""
    status: str = ""
    tool_calls: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class ThreadState:
    """The latest state of a thread (`error` says why it could not be read)."""

    values: Any = None
    next: tuple[str, ...] = ()
    error: str = ""
    interrupts: tuple[Interrupt, ...] = ()

    @property
    def pretty(self) -> str:
        return json.dumps(self.values, indent=2, sort_keys=True, ensure_ascii=False)


def current_state(thread: Thread) -> ThreadState:
    """The thread's latest state through its registered graph, redacted."""
    if not thread.graph:
        return ThreadState(error="The thread has no graph yet.")
    try:
        graph = registry.compiled_graph(thread.graph, PostgresCheckpointer())
        snapshot = graph.get_state({"configurable": {"thread_id": thread.id}})
    except Exception as exc:
        logger.warning("Cannot read the state of thread %s: %s", thread.id, exc)
        return ThreadState(error=f"The state cannot be read: {type(exc).__name__}.")
    return ThreadState(
        values=redact(payloads.plain(snapshot.values)),
        next=tuple(snapshot.next),
        interrupts=tuple(snapshot.interrupts),
    )


def conversation(state: ThreadState) -> list[ChatLine]:
    """The chat messages in the state's `messages`, if it has any."""
    values = state.values if isinstance(state.values, Mapping) else {}
    lines = []
    for message in values.get("messages") or ():
        if not isinstance(message, Mapping):
            continue
        calls = tuple(
            {"name": str(c.get("name", "")), "args": payloads.canonical(c.get("args", {}))}
            for c in message.get("tool_calls") or ()
            if isinstance(c, Mapping)
        )
        lines.append(
            ChatLine(
                role=str(message.get("role", "")),
                content=str(message.get("content") or ""),
                name=str(message.get("name") or ""),
                status=str(message.get("status") or ""),
                tool_calls=calls,
            )
        )
    return lines


def history(thread: Thread, limit: int = HISTORY_LIMIT) -> list[dict[str, Any]]:
    """The thread's root checkpoints, newest first (metadata only)."""
    rows = Checkpoint.objects.filter(thread=thread, ns="").order_by("-seq")[:limit]
    result = []
    for row in rows:
        try:
            metadata = json.loads(row.metadata)
        except ValueError:
            metadata = {}
        result.append(
            {
                "seq": row.seq,
                "step": row.step,
                "source": row.source,
                "checkpoint_id": row.checkpoint_id,
                "created_at": row.created_at,
                "run_id": str(metadata.get("run_id") or "") if isinstance(metadata, dict) else "",
            }
        )
    return result


def events(thread: Thread, limit: int = EVENTS_LIMIT) -> list[dict[str, Any]]:
    """The thread's stored run events, oldest first (the latest `limit`)."""
    rows = list(RunEvent.objects.filter(thread=thread).order_by("-created_at", "-seq")[:limit])
    rows.reverse()
    return [
        event_view(
            r.run_id, r.seq, event=r.event, node=r.node, data=r.data, at=r.created_at, ns=r.ns
        )
        for r in rows
    ]


def event_view(
    run_id: UUID,
    seq: int,
    *,
    event: str,
    node: str | None,
    data: Any,  # the event's JSON
    at: datetime | str | None,
    ns: str = "",
) -> dict[str, Any]:
    """One event as the templates render it; the element id is built from ids only. A
    model's text delta (`model.delta`) carries its text and message id, which the page's
    script gathers into the reply being written (`thread.js`)."""
    view = {
        "dom_id": f"run-event-{run_id}-{int(seq)}",
        "run_id": str(run_id),
        "seq": int(seq),
        "event": str(event),
        "css": re.sub(r"[^a-z0-9]+", "-", str(event).lower()).strip("-"),
        "node": str(node or ""),
        "ns": str(ns or ""),
        "summary": _summary(data),
        "at": at,
        "delta": None,
    }
    if event == "model.delta" and isinstance(data, Mapping):
        delta = data.get("delta")
        chunk = data.get("tool_call_chunk")
        if isinstance(chunk, Mapping):
            name = f"calls {chunk.get('name')} " if chunk.get("name") else ""
            delta = f"{name}{chunk.get('args') or ''}"
        view["delta"] = str(delta) if delta is not None else ""
        view["message_id"] = re.sub(r"[^A-Za-z0-9_-]+", "", str(data.get("message_id", "")))[:80]
    return view


def _summary(data: Any) -> str:
    if data in (None, {}, []):
        return ""
    text = payloads.canonical(redact(payloads.plain(data)))
    return text if len(text) <= 300 else f"{text[:300]}… ({len(text)} characters)"


__all__ = [
    "ChatLine",
    "ThreadState",
    "conversation",
    "current_state",
    "event_view",
    "events",
    "history",
]
