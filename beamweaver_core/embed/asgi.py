"""BeamWeaver's websockets and worker channel added to an ASGI application.

In the host's asgi.py::

    from django.core.asgi import get_asgi_application

    django_application = get_asgi_application()  # first: it sets Django up

    from beamweaver_core.embed.asgi import beamweaver_application

    application = beamweaver_application(django_application)

HTTP goes to the host's Django application; websockets on the inbox's routes
(`/ws/inbox/`, `/ws/items/<id>/`, `/ws/threads/<id>/`) to BeamWeaver's consumers,
origin-checked and authenticated by the host's sessions, and any other websocket to the
host's own (`websocket=`); the `beamweaver.runs` channel to the worker consumer (for
`manage.py runworker`). Every request gets a request id (`observability.asgi`). With no
shared channel layer (one process) the first connection also starts the in-process
workers.
"""

from __future__ import annotations

import asyncio
from typing import Any

from channels.auth import AuthMiddlewareStack
from channels.routing import ChannelNameRouter, ProtocolTypeRouter, URLRouter
from channels.security.websocket import WebsocketDenier
from django.urls import re_path

from beamweaver_core.nul_guard import WebsocketNulGuard
from beamweaver_core.observability import pool
from beamweaver_core.observability.asgi import RequestContext, WebsocketCounter
from beamweaver_core.runtime.consumers import RunWorkerConsumer
from beamweaver_core.runtime.groups import RUNS_CHANNEL
from beamweaver_core.runtime.publish import serve_from
from beamweaver_core.runtime.worker import inline_mode, process_worker
from beamweaver_core.websocket_origin import SameOriginValidator
from reviews.routing import websocket_urlpatterns


class ServeFromThisLoop:
    """Registers the server's event loop on the first connection, starts the pool
    metrics, and starts the in-process workers when there is no Redis."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.ready = False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> Any:
        if not self.ready:
            self.ready = True
            serve_from(asyncio.get_running_loop())
            pool.start_sampler()
            if inline_mode():
                process_worker()
        return await self.app(scope, receive, send)


def is_beamweaver_websocket(path: str) -> bool:
    """Whether a websocket on `path` is one of the inbox's."""
    route = path.lstrip("/")
    return any(pattern.pattern.match(route) for pattern in websocket_urlpatterns)


class _WebsocketSplit:
    def __init__(self, ours: Any, theirs: Any) -> None:
        self.ours, self.theirs = ours, theirs

    async def __call__(self, scope: Any, receive: Any, send: Any) -> Any:
        app = self.ours if is_beamweaver_websocket(scope.get("path", "")) else self.theirs
        return await app(scope, receive, send)


def websocket_application() -> Any:
    """The inbox's websocket routes, origin-checked, NUL-free (`nul_guard`) and
    authenticated, counted. A path no route matches is denied (channels' router raised
    "No route found", daphne's 500 and an error in the log)."""
    # django-stubs types a route's target as a view, types-channels wants its type-only
    # `URLPattern` whose callback is an ASGI application: these patterns are those (made
    # with Django's `path`, as `reviews.routing` does), hence the ignores.
    unmatched = re_path(r"", WebsocketDenier.as_asgi())  # type: ignore[arg-type]
    router = URLRouter([*websocket_urlpatterns, unmatched])  # type: ignore[list-item]
    return WebsocketCounter(SameOriginValidator(WebsocketNulGuard(AuthMiddlewareStack(router))))


def beamweaver_application(http: Any, *, websocket: Any = None) -> Any:
    """The ASGI application: `http` (the host's Django application) for HTTP, the
    inbox's websockets, `websocket` (the host's own, if any) for other websockets, and
    the worker channel."""
    ours = websocket_application()
    return ServeFromThisLoop(
        RequestContext(
            ProtocolTypeRouter(
                {
                    "http": http,
                    "websocket": ours if websocket is None else _WebsocketSplit(ours, websocket),
                    "channel": ChannelNameRouter({RUNS_CHANNEL: RunWorkerConsumer.as_asgi()}),
                }
            )
        )
    )


__all__ = [
    "ServeFromThisLoop",
    "beamweaver_application",
    "is_beamweaver_websocket",
    "websocket_application",
]
