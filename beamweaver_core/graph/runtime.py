"""What a node can see of the run (`Runtime`) and the stream of events a run emits."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class Envelope:
    """One stream event: `event` name, `data`, the `node` and namespace it came from,
    its sequence number within the run, and when it happened."""

    event: str
    data: Any = None
    node: str | None = None
    ns: str = ""
    seq: int = 0
    at: datetime = field(default_factory=lambda: datetime.now(UTC))


class EventSink:
    """Collects envelopes of one run and hands each to `listener` as it happens."""

    __slots__ = ("_listener", "_lock", "_seq", "closed", "events")

    def __init__(
        self, listener: Callable[[Envelope], None] | None = None, *, keep: bool = True
    ) -> None:
        self._listener = listener
        self._lock = threading.Lock()
        self._seq = 0
        self.events: list[Envelope] | None = [] if keep else None
        self.closed = False
        """Set when the consumer closed its stream: events are dropped, and the run stops
        at its next step boundary (`StreamClosed`)."""

    def emit(self, event: str, data: Any = None, *, node: str | None = None, ns: str = "") -> None:
        if self.closed:
            return
        with self._lock:
            self._seq += 1
            envelope = Envelope(event=event, data=data, node=node, ns=ns, seq=self._seq)
            if self.events is not None:
                self.events.append(envelope)
            if self._listener is not None:
                self._listener(envelope)


class StreamClosed(BaseException):
    """Raised by a run between steps once its stream's consumer closed the stream: the
    steps saved so far stand and no later step runs, as when a LangGraph stream is closed.
    A `BaseException`, so a node's `except Exception` cannot swallow it."""


@dataclass(slots=True)
class Runtime:
    """Passed to nodes that accept a second argument.

    `config` and `context` are what the caller passed to `invoke`; `state` is a read-only
    view of the graph state the task's step started from (for a `Send` task too, whose
    input is its own argument); `emit(event, data)` sends a custom event to the run's
    stream (a no-op when nobody streams).
    """

    config: dict[str, Any]
    context: Any
    thread_id: str | None
    node: str
    checkpoint_ns: str = ""
    task_id: str | None = None
    sink: EventSink | None = None
    state: Mapping[str, Any] = field(default_factory=dict)
    graph_ns: str = ""

    def emit(self, event: str, data: Any = None) -> None:
        """Send a custom event; like the node's own events it carries the graph's
        namespace (`""` at the root)."""
        if self.sink is not None:
            self.sink.emit(event, data, node=self.node, ns=self.graph_ns)


__all__ = ["Envelope", "EventSink", "Runtime", "StreamClosed"]
