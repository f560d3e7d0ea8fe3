"""ASGI middlewares: a request id for every request, the access log, and the count of
open websockets.

Hand-written, small: they must see every request (static files and websockets too,
which Django middleware does not), and the server's own access log runs outside the
request, without its id.
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

from beamweaver_core.observability import context, instruments
from beamweaver_core.redaction import redact_url

logger = logging.getLogger("beamweaver_core.access")

REQUEST_ID_HEADER = b"x-request-id"
SCOPE_KEY = "beamweaver.request_id"


def _header(scope: Any, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


class RequestContext:
    """Gives each HTTP request and websocket a request id (the client's `X-Request-ID`
    when it is a plain token of at most 64 characters, else a new one), in force for
    every log line of it and sent back in `X-Request-ID`; logs each HTTP request when
    `access_log` (method, path with secret parameters withheld, status, duration)."""

    def __init__(self, app: Any, *, access_log: bool = False) -> None:
        self.app = app
        self.access_log = access_log

    async def __call__(self, scope: Any, receive: Any, send: Any) -> Any:
        if scope["type"] not in ("http", "websocket") or SCOPE_KEY in scope:
            return await self.app(scope, receive, send)
        rid = context.valid_request_id(_header(scope, REQUEST_ID_HEADER)) or uuid.uuid4().hex
        scope = {**scope, SCOPE_KEY: rid}
        status: dict[str, int] = {}
        started = time.monotonic()

        async def send_with_id(message: Any) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
                headers = [*message.get("headers", ()), (REQUEST_ID_HEADER, rid.encode())]
                message = {**message, "headers": headers}
            await send(message)

        with context.bound(request_id=rid):
            try:
                return await self.app(scope, receive, send_with_id)
            finally:
                if self.access_log and scope["type"] == "http":
                    self._log(scope, status.get("code", 0), time.monotonic() - started)

    @staticmethod
    def _log(scope: Any, status: int, seconds: float) -> None:
        query = scope.get("query_string", b"").decode("latin-1")
        path = redact_url(scope.get("path", "") + (f"?{query}" if query else ""))
        client = scope.get("client") or ("", 0)
        logger.info(
            "%s %s %s",
            scope.get("method", ""),
            path,
            status,
            extra={
                "method": scope.get("method", ""),
                "path": path,
                "status": status,
                "duration_ms": round(seconds * 1000, 1),
                "client": client[0],
            },
        )


def _page(path: str) -> str:
    parts = [p for p in path.split("/") if p]
    return parts[1] if len(parts) > 1 and parts[1] in ("inbox", "items", "threads") else "other"


class WebsocketCounter:
    """Counts the websockets open now (`beamweaver_websocket_connections`)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> Any:
        if scope["type"] != "websocket":
            return await self.app(scope, receive, send)
        gauge = instruments.WEBSOCKETS.labels(_page(scope.get("path", "")))
        accepted = False

        async def counted(message: Any) -> None:
            nonlocal accepted
            if message["type"] == "websocket.accept" and not accepted:
                accepted = True
                gauge.inc()
            await send(message)

        try:
            return await self.app(scope, receive, counted)
        finally:
            if accepted:
                gauge.dec()


__all__ = ["RequestContext", "WebsocketCounter"]
