"""Serving the ASGI application with daphne from a management command.

Static files are served by the same process (fine for one machine; behind a proxy in
production, run `collectstatic` and let the proxy serve `STATIC_ROOT`). Client websocket
messages are limited to `BEAMWEAVER["WEBSOCKET_MAX_MESSAGE"]` (`beamweaver_core.conf`).
It serves the project's `ASGI_APPLICATION` (a host project's own, too). The access log
(`beamweaver_core.access`) is written by `observability.asgi.RequestContext`, with each
request's id and its secret query parameters withheld. Streamed responses wait for their
client (`beamweaver_core.backpressure`): a client that reads slowly or not at all holds
a bounded amount of the server's memory, and one that takes nothing for
`BEAMWEAVER["SEND_STALL_SECONDS"]` is dropped.
"""

from __future__ import annotations

from collections.abc import Callable

from beamweaver_core.conf import conf
from beamweaver_core.observability.asgi import RequestContext


def serve(host: str, port: int, *, ready: Callable[[], None] | None = None) -> None:
    """Run daphne on `host:port` until interrupted (SIGINT/SIGTERM)."""
    from channels.routing import get_default_application
    from daphne.endpoints import build_endpoint_description_strings
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

    from beamweaver_core.backpressure import BackpressureServer

    # The handler wraps any ASGI application (Django's own code passes it a router too);
    # django-stubs types its argument as Django's `ASGIHandler` only.
    router = get_default_application()
    static = ASGIStaticFilesHandler(router)  # type: ignore[arg-type]
    application = RequestContext(static, access_log=True)
    BackpressureServer(
        application=application,
        stall_seconds=conf.send_stall_seconds,
        endpoints=build_endpoint_description_strings(host=host, port=port),
        signal_handlers=True,
        websocket_max_message_size=conf.websocket_max_message,
        websocket_max_frame_size=conf.websocket_max_message,
        ready_callable=ready,
        verbosity=0,
    ).run()
