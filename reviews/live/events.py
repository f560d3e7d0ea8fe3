"""Run events as thread-page fragments, rendered once per event in a process."""

from __future__ import annotations

import json
import uuid
from functools import lru_cache
from typing import Any

from reviews import partials, threads
from reviews.live.frames import into_list

EVENT_CACHE = 512
"""Run event fragments kept rendered (the latest, for the sockets that have yet to get them)."""


def event_fragment(run_id: Any, record: dict[str, Any]) -> tuple[str, str] | None:
    """(element id, HTML) of a run event on a thread page, or None for a malformed one.

    Rendered once per event in this process, however many sockets show it: the HTML is
    escaped data of the event itself, the same for every reader (each socket still
    re-checks its user before it is sent). Runs on the event loop (no database)."""
    try:
        key = json.dumps([run_id, record], sort_keys=True, default=str)
    except (TypeError, ValueError):
        return _render_event(run_id, record)
    return _cached(key)


@lru_cache(maxsize=EVENT_CACHE)
def _cached(key: str) -> tuple[str, str] | None:
    run_id, record = json.loads(key)
    return _render_event(run_id, record)


def _render_event(run_id: Any, record: dict[str, Any]) -> tuple[str, str] | None:
    try:
        event = threads.event_view(
            uuid.UUID(str(run_id)),
            int(record.get("seq")),  # type: ignore[arg-type]
            event=record.get("event", ""),
            node=record.get("node", ""),
            data=record.get("data"),
            at=record.get("at"),
            ns=record.get("ns", ""),
        )
    except (TypeError, ValueError):
        return None
    html = partials.render(partials.THREAD, "run-event", {"event": event})
    return event["dom_id"], into_list("thread-events", html)
