"""A model's reply token by token: the live `model.delta` pushes of one run as
`messages-tuple`, `messages` and `events` frames, and what a stream must still wait for.

Deltas are never stored (`runtime.events.LIVE_ONLY`), so they reach a stream only as
channel-layer hints, and may trail the stored step they belong to. Their event numbers
are the gaps in the stored numbering: `missing` says whether some may still come, so
the stream holds the step back a moment; once the step is sent, the reply's late deltas
are dropped (`close`), the whole message having gone with the step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from beamweaver_core.protocol import representations, shapes
from beamweaver_core.runtime.events import LIVE_ONLY

Frame = tuple[str, Any]


class Deltas:
    """The live deltas of one run, as one stream heard them."""

    def __init__(
        self,
        modes: frozenset[str],
        subgraphs: bool,
        meta: Mapping[str, Any],
        event: Callable[[str, str, Any], dict[str, Any]],
    ) -> None:
        self.modes = modes
        self.subgraphs = subgraphs
        self.meta = dict(meta)
        self.event = event
        self.partial: dict[str, str] = {}
        """The text streamed so far of each model reply, by message id."""
        self.closed: set[str] = set()
        """Replies whose step was sent: their late deltas are not sent any more."""
        self.live_from: int | None = None
        """The first event number of the run heard live: earlier ones will never come."""
        self.heard: set[int] = set()
        """Live-only events heard, by event number, not yet passed."""
        self.waited_past = 0
        """Missing live-only events before this number are not waited for any more."""

    def missing(self, after: int, before: int) -> bool:
        """Whether live-only events numbered between stored events `after` and `before`
        may still be on their way."""
        if self.live_from is None:
            return False
        low = max(after + 1, self.live_from, self.waited_past)
        return any(seq not in self.heard for seq in range(low, before))

    def give_up_before(self, seq: int) -> None:
        self.waited_past = max(self.waited_past, seq)

    def forget_below(self, seq: int) -> None:
        self.heard = {s for s in self.heard if s > seq}

    def sent_whole(self, text: str) -> bool:
        """Whether this stream already sent a reply with this text token by token."""
        return text in self.partial.values()

    def close(self) -> None:
        """The step of the replies streamed so far was sent."""
        self.closed.update(self.partial)
        self.partial.clear()

    def frames(self, record: Mapping[str, Any]) -> list[Frame]:
        """The frames of a live `run.event` push (only deltas make any); every push marks
        how far the run is."""
        seq = record.get("seq")
        if isinstance(seq, int):
            self.live_from = seq if self.live_from is None else min(self.live_from, seq)
            if record.get("event") in LIVE_ONLY:
                self.heard.add(seq)
        if record.get("event") != "model.delta":
            return []
        given = record.get("data")
        data: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
        message_id = str(data.get("message_id") or "")
        if message_id in self.closed:
            return []  # it came after its stored step: the reply was sent whole
        ns = representations.namespace(str(record.get("ns") or ""))
        suffix = f"|{ns}" if ns and self.subgraphs else ""
        node = record.get("node")
        meta = shapes.message_metadata(self.meta, node if isinstance(node, str) else None, ns)
        piece = shapes.chunk(message_id, data)
        first = message_id not in self.partial
        self.partial[message_id] = self.partial.get(message_id, "") + piece["content"]
        frames: list[Frame] = []
        if "messages-tuple" in self.modes:
            frames.append((f"messages{suffix}", [piece, meta]))
        if "messages" in self.modes:
            if first:
                frames.append(("messages/metadata", {message_id: {"metadata": meta}}))
            whole = {**piece, "type": "ai", "content": self.partial[message_id]}
            whole.pop("tool_call_chunks")
            frames.append(("messages/partial", [whole]))
        if "events" in self.modes:
            frames.append(
                (f"events{suffix}", self.event("on_chat_model_stream", "model", {"chunk": piece}))
            )
        return frames


__all__ = ["Deltas", "Frame"]
