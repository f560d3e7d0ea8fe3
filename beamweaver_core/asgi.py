"""ASGI entry point: HTTP through Django, websockets through Channels (origin-checked and
authenticated), and the `beamweaver.runs` worker channel for `manage.py runworker`.

With no Redis (one process), the web process also runs the workers.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "beamweaver_core.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ChannelNameRouter, ProtocolTypeRouter, URLRouter  # noqa: E402

from beamweaver_core.runtime.consumers import RunWorkerConsumer  # noqa: E402
from beamweaver_core.runtime.groups import RUNS_CHANNEL  # noqa: E402
from beamweaver_core.runtime.publish import serve_from  # noqa: E402
from beamweaver_core.runtime.worker import inline_mode, process_worker  # noqa: E402
from beamweaver_core.websocket_origin import SameOriginValidator  # noqa: E402
from reviews.routing import websocket_urlpatterns  # noqa: E402


class ServeFromThisLoop:
    """Registers the server's event loop on the first connection, and starts the
    in-process workers when there is no Redis."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.ready = False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> Any:
        if not self.ready:
            self.ready = True
            serve_from(asyncio.get_running_loop())
            if inline_mode():
                process_worker()
        return await self.app(scope, receive, send)


application = ServeFromThisLoop(
    ProtocolTypeRouter(
        {
            "http": django_asgi_app,
            "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
            "channel": ChannelNameRouter({RUNS_CHANNEL: RunWorkerConsumer.as_asgi()}),
        }
    )
)
