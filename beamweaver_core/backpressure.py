"""Backpressure for daphne's HTTP responses: a response body's `send` waits while the
client's connection cannot take more.

Daphne writes every `http.response.body` message to Twisted at once and returns, so an
application streaming to a client that reads slowly, or not at all, piles its output up
in the server's memory without bound (Twisted's transport buffers whatever it is given).
`BackpressureServer` registers a push producer with each streamed response (one sent in
several body messages): Twisted pauses it when the connection's write buffer is over its
size (64 KiB) and resumes it once the buffer has drained, and the next body message's
`send` waits for that. So a streaming application (Django's `StreamingHttpResponse`, the
`/lg` SSE streams) holds at most the message it is sending plus Twisted's buffer for a
client that does not read, and a slow client still gets every byte.

A response whose client takes nothing for `BEAMWEAVER["SEND_STALL_SECONDS"]` (the
connection stays full and the kernel's send queue does not move) is aborted, its
connection dropped, which the application sees as a disconnect: a client that never
reads cannot keep its response, and what the application holds for it, forever.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import struct
import termios
from collections.abc import Callable
from typing import Any

from daphne.http_protocol import WebRequest
from daphne.server import Server
from twisted.internet.interfaces import IPushProducer
from zope.interface import implementer

logger = logging.getLogger(__name__)

PROGRESS_SECONDS = 1.0
"""How often a waiting response looks whether its client took anything."""


@implementer(IPushProducer)
class Drain:
    """Told by Twisted when a response's connection is full (`pauseProducing`) and when it
    has drained again (`resumeProducing`); `wait` returns once it may write."""

    def __init__(self, paused: bool = False) -> None:
        self.paused = paused
        self.stopped = False
        self._ready: asyncio.Future[None] | None = None

    def pauseProducing(self) -> None:  # Twisted's interface names
        self.paused = True

    def resumeProducing(self) -> None:
        self.paused = False
        self._wake()

    def stopProducing(self) -> None:
        self.stopped = True
        self._wake()

    def _wake(self) -> None:
        if self._ready is not None and not self._ready.done():
            self._ready.set_result(None)

    async def wait(self, timeout: float, progress: Callable[[], object]) -> bool:
        """Wait until the connection may take more (or is gone); False once `progress()`
        (what the kernel still holds for the client) has not changed for `timeout`
        seconds."""
        loop = asyncio.get_running_loop()
        deadline, last = loop.time() + timeout, progress()
        while self.paused and not self.stopped:
            if loop.time() >= deadline:
                return False
            self._ready = loop.create_future()
            try:
                await asyncio.wait_for(asyncio.shield(self._ready), PROGRESS_SECONDS)
            except TimeoutError:
                now = progress()
                if now != last:  # the client took some: it is slow, not gone
                    deadline, last = loop.time() + timeout, now
            finally:
                self._ready = None
        return True


def unsent(transport: Any) -> int | None:
    """The bytes of the connection's kernel send queue not yet acknowledged by the client
    (Linux's TIOCOUTQ), or None where that cannot be asked."""
    try:
        queued = fcntl.ioctl(transport.fileno(), termios.TIOCOUTQ, b"\0" * 4)
    except (AttributeError, OSError, ValueError):
        return None
    return int(struct.unpack("i", queued)[0])


class BackpressureServer(Server):  # type: ignore[misc]  # daphne ships no types
    """Daphne, whose HTTP response bodies wait for their client (see the module
    docstring). `stall_seconds`: how long a response may wait before it is aborted."""

    def __init__(self, *args: Any, stall_seconds: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stall_seconds = stall_seconds
        self.drains: dict[Any, Drain] = {}

    async def handle_reply(self, protocol: Any, message: dict[str, Any]) -> None:
        streamed = isinstance(protocol, WebRequest) and message.get("type") == "http.response.body"
        if not streamed:
            await super().handle_reply(protocol, message)
            return
        drain = self.drains.get(protocol)
        if message.get("more_body", False):
            if drain is None and not protocol.finished and protocol.channel is not None:
                # Already full before it was registered: Twisted would not say so.
                drain = Drain(paused=bool(getattr(protocol.channel, "_waitingForTransport", 0)))
                protocol.registerProducer(drain, True)
                self.drains[protocol] = drain
        elif drain is not None:
            self._release(protocol)
        await super().handle_reply(protocol, message)
        transport = protocol.transport
        if drain is not None and not await drain.wait(
            self.stall_seconds, lambda: unsent(transport)
        ):
            logger.warning(
                "Aborting a response to %s: its client took nothing for %.0f s",
                protocol.client_addr,
                self.stall_seconds,
            )
            self._release(protocol)
            transport.abortConnection()

    def _release(self, protocol: Any) -> None:
        drain = self.drains.pop(protocol, None)
        if drain is not None:
            drain.stopProducing()
            if protocol.producer is drain and protocol.channel is not None:
                protocol.unregisterProducer()

    def protocol_disconnected(self, protocol: Any) -> None:
        self._release(protocol)
        super().protocol_disconnected(protocol)


__all__ = ["BackpressureServer", "Drain"]
