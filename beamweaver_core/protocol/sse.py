"""Server-sent events as LangGraph's server writes them: `event:`, `data:` (one line of
JSON), an optional `id:`, and a blank line; `: heartbeat` comments while idle.

Hand-written: the format is four lines, and Django's async `StreamingHttpResponse`
already does the streaming.
"""

from __future__ import annotations

import json
from typing import Any

HEARTBEAT = b": heartbeat\r\n\r\n"


def encode(event: str, data: Any, event_id: str | None = None) -> bytes:
    """One event; newlines in the event name or id are dropped (they would end a field)."""
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    parts = [f"event: {_field(event)}\r\n", f"data: {body}\r\n"]
    if event_id is not None:
        parts.append(f"id: {_field(event_id)}\r\n")
    parts.append("\r\n")
    return "".join(parts).encode("utf-8", "surrogatepass")


def _field(value: str) -> str:
    return value.replace("\r", "").replace("\n", "")


def parse_event_id(value: str | None) -> tuple[int, int] | None:
    """A `Last-Event-ID` of ours (`"<seq>-<index>"`) as numbers; `None` if absent;
    `ValueError` if it is not one of ours."""
    if not value:
        return None
    seq, sep, index = value.strip().partition("-")
    if not sep or not seq.isdigit() or not index.isdigit() or len(value) > 40:
        raise ValueError(f"Last-Event-ID {value[:40]!r} is not an event id of this server.")
    return int(seq), int(index)


__all__ = ["HEARTBEAT", "encode", "parse_event_id"]
