"""`manage.py serve`: the web server (daphne), with in-process workers when there is no Redis."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from beamweaver_core.runtime.worker import inline_mode, process_worker, stop_process_worker
from beamweaver_core.webserver import serve


class Command(BaseCommand):
    help = (
        "Serve BeamWeaver (HTTP, websockets, static files) with daphne. Without REDIS_URL the "
        "workers run inside this process; with it, run `manage.py beamweaver_worker` separately."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--host", default="127.0.0.1", help="Address to listen on (default 127.0.0.1)."
        )
        parser.add_argument("--port", type=int, default=8000, help="Port (default 8000).")

    def handle(self, *args: Any, host: str, port: int, **options: Any) -> None:
        if not 0 < port < 65536:
            raise CommandError(f"--port must be between 1 and 65535, got {port}.")
        if inline_mode():
            process_worker()
        try:
            serve(host, port, ready=lambda: self.stdout.write(f"Serving on http://{host}:{port}/"))
        finally:
            stop_process_worker()
