"""Serving the ASGI application with daphne from a management command.

Static files are served by the same process (fine for one machine; behind a proxy in
production, run `collectstatic` and let the proxy serve `STATIC_ROOT`). Client websocket
frames are small presence pings, so their size limit is far below daphne's 1 MiB default.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from beamweaver_core.redaction import redact_url

logger = logging.getLogger(__name__)

WEBSOCKET_MAX_MESSAGE = 64 * 1024


def serve(host: str, port: int, *, ready: Callable[[], None] | None = None) -> None:
    """Run daphne on `host:port` until interrupted (SIGINT/SIGTERM)."""
    from daphne.endpoints import build_endpoint_description_strings
    from daphne.server import Server
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

    from beamweaver_core.asgi import application

    def access_log(protocol: str, action: str, details: dict[str, Any]) -> None:
        if protocol == "http" and action == "complete":
            # daphne's path includes the query string: a token sent there is withheld.
            path = redact_url(details["path"])
            logger.info("%s %s %s", details["method"], path, details["status"])

    Server(
        application=ASGIStaticFilesHandler(application),
        endpoints=build_endpoint_description_strings(host=host, port=port),
        signal_handlers=True,
        action_logger=access_log,
        websocket_max_message_size=WEBSOCKET_MAX_MESSAGE,
        websocket_max_frame_size=WEBSOCKET_MAX_MESSAGE,
        ready_callable=ready,
        verbosity=0,
    ).run()
