"""`manage.py beamweaver_worker`: run graph workers in this process."""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from typing import Any

from channels.layers import get_channel_layer
from django.core.management.base import BaseCommand, CommandError, CommandParser

from beamweaver_core.postgres.pool_size import set_pool_size, worker_pool_size
from beamweaver_core.runtime.groups import RUNS_CHANNEL
from beamweaver_core.runtime.worker import Worker

logger = logging.getLogger(__name__)


class Command(BaseCommand):
    help = (
        "Run BeamWeaver workers: claim queued runs from Postgres and execute them. Start as "
        "many as you like, on any machine that reaches the same Postgres (and Redis, for "
        "instant wake-ups; without it workers poll). SIGTERM or Ctrl-C stops claiming, lets "
        "running runs finish for --grace seconds, then gives them back to the queue."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--threads", type=int, default=2, help="Runs executed at once (default 2)."
        )
        parser.add_argument(
            "--grace",
            type=float,
            default=30.0,
            help="Seconds to let running runs finish on shutdown.",
        )
        parser.add_argument(
            "--name", default=None, help="Worker name shown in leases (default host:pid:random)."
        )

    def handle(
        self, *args: Any, threads: int, grace: float, name: str | None, **options: Any
    ) -> None:
        if threads < 1:
            raise CommandError("--threads must be at least 1")
        # A worker process needs far fewer connections than a web process: size its pool
        # by its threads, so that many workers fit in the server's max_connections.
        set_pool_size(worker_pool_size(threads))
        worker = Worker(threads=threads, name=name).start()
        stop = threading.Event()

        def on_signal(signum: int, frame: Any) -> None:
            if stop.is_set():
                raise SystemExit(1)
            logger.warning(
                "Stopping worker %s (signal %d); again to exit at once", worker.name, signum
            )
            stop.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        listener = threading.Thread(
            target=_listen_for_hints, args=(worker, stop), daemon=True, name="beamweaver-hints"
        )
        listener.start()
        self.stdout.write(f"Worker {worker.name} running {threads} thread(s); waiting for runs.")
        stop.wait()
        worker.stop(grace)
        self.stdout.write(f"Worker {worker.name} stopped after {worker.completed} run(s).")


def _listen_for_hints(worker: Worker, stop: threading.Event) -> None:
    """Wake the worker on `run.queued` hints from other processes (Redis layer only)."""
    layer = get_channel_layer()
    if layer is None or "InMemory" in type(layer).__name__:
        return

    async def listen() -> None:
        backoff = 0.5
        while not stop.is_set():
            try:
                message = await asyncio.wait_for(layer.receive(RUNS_CHANNEL), timeout=5)
                backoff = 0.5
                if message.get("type") == "run.queued":
                    worker.wake()
            except TimeoutError:
                continue
            except Exception as exc:
                logger.warning("Channel layer unavailable (%s); workers keep polling", exc)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 10.0)

    asyncio.run(listen())
