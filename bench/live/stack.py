"""One realtime run's setup and teardown: a fresh database, the reviewer, the live server
and (optionally) the inbox listener, all gone again when the run ends."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.live import database
from bench.live.listener import InboxListener
from bench.live.server import LiveServer, redis_layer
from bench.live.session import Reviewer, create_reviewer, setup_django


@dataclass(frozen=True, slots=True)
class Stack:
    database_url: str
    reviewer: Reviewer
    server: LiveServer
    listener: InboxListener | None
    work_dir: Path

    def cpu_seconds(self) -> dict[str, float]:
        """CPU seconds (user + system) each server process has used so far."""
        import psutil

        out = {}
        for name, pid in self.server.pids().items():
            times = psutil.Process(pid).cpu_times()
            out[name] = times.user + times.system
        return out


@contextmanager
def live_stack(
    mode: str, clients: int, *, keep: bool = False, hints: bool = False
) -> Iterator[Stack]:
    """Everything a realtime workload measures against; `clients` inbox sockets listen
    (0: none). `hints`: this process queues runs itself and wakes the server's workers
    over the Redis layer (`redis` mode only). `keep` leaves the database and the logs
    for a look afterwards."""
    if hints and mode != "redis":
        raise ValueError("runs queued by the benchmark process reach workers only in redis mode")
    layer = redis_layer() if mode == "redis" else None
    url = database.fresh()
    setup_django(url, layer if hints else None)
    reviewer = create_reviewer()
    work_dir = Path(tempfile.mkdtemp(prefix="bench-live-"))
    server = LiveServer(url, mode, work_dir, layer)
    listener: InboxListener | None = None
    try:
        server.start()
        if clients:
            listener = InboxListener(
                server.ws_base, server.base, reviewer.cookie, clients, work_dir / "frames.json"
            )
            listener.wait_ready()
        yield Stack(url, reviewer, server, listener, work_dir)
    finally:
        if listener is not None:
            listener.__exit__(None, None, None)
        server.stop()
        from django.db import connections

        connections.close_all()
        if not keep:
            database.drop()
            shutil.rmtree(work_dir, ignore_errors=True)
