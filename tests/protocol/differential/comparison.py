"""How the differential suite compares the two servers' answers: ids and timestamps
normalised (`Normaliser`), a scenario run on both (`on_both`), stream parts as
`[event, data]` pairs (`events`) and the closing `end` only BeamWeaver sends
(`without_end`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

# UUIDs (threads, runs, checkpoints) and 32-hex interrupt ids.
_ID = re.compile(
    r"\b(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})\b"
)
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?([+-]\d{2}:\d{2}|Z)?")


class Normaliser:
    """Replaces each distinct id by `<id:n>` (numbered by first appearance, so the same id
    twice stays the same placeholder) and each timestamp by `<time>`. An interrupt's
    `response_schema: null` (a field LangGraph's server added lately, which BeamWeaver does
    not send; null says nothing) is dropped."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}

    def __call__(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {
                self(k): self(v)
                for k, v in value.items()
                if not (k == "response_schema" and v is None)
            }
        if isinstance(value, list | tuple):
            return [self(v) for v in value]
        if isinstance(value, str):
            value = _TIME.sub("<time>", value)
            return _ID.sub(self._id, value)
        return value

    def _id(self, match: re.Match[str]) -> str:
        return self.ids.setdefault(match.group(0), f"<id:{len(self.ids) + 1}>")


def on_both(both: dict[str, Any], scenario: Callable[[Any], Any]) -> tuple[Any, Any]:
    """`scenario(client)` on each server, each result normalised on its own."""
    ours, theirs = (Normaliser()(scenario(both[side])) for side in ("ours", "theirs"))
    return ours, theirs


def events(parts: Any) -> list[list[Any]]:
    return [[p.event, p.data] for p in parts]


def without_end(seen: list[list[Any]]) -> list[list[Any]]:
    """The events before `end`. BeamWeaver always sends `end`; LangGraph's Python server
    ends the response without one (docs/protocol.md), which leaves a client unable to
    tell a finished stream from a cut connection: sending it is right."""
    return seen[:-1] if seen and seen[-1][0] == "end" else seen
