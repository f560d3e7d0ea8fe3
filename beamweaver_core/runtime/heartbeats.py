"""Worker liveness: every worker process writes its `WorkerHeartbeat` row every
`HEARTBEAT_SECONDS`, from a thread of its own (a run that blocks every worker thread
does not stop it), and marks it stopped when it stops cleanly.

A worker is alive while its row was written within `WorkerHeartbeat.alive_after()`
seconds; the admin lists the rows, the metrics export them
(`beamweaver_worker_last_heartbeat_...`), and an alert fires when no worker is alive (docs/production.md). Rows of workers gone
for a week are deleted when a worker starts.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from datetime import timedelta
from typing import Any

from django.db import DatabaseError, connections
from django.utils import timezone

from beamweaver_core.models import WorkerHeartbeat

logger = logging.getLogger(__name__)

KEEP_GONE = timedelta(days=7)

_UPSERT = """
INSERT INTO bw_worker_heartbeat
       (name, hostname, pid, threads, busy, completed, started_at, last_seen_at, stopped_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, now(), NULL)
ON CONFLICT (name) DO UPDATE
   SET busy = EXCLUDED.busy, completed = EXCLUDED.completed, last_seen_at = now(),
       stopped_at = NULL
"""


class Heartbeat:
    """The heartbeat thread of one `Worker` (anything with `name`, `size`, `completed`
    and `busy()`)."""

    def __init__(self, worker: Any, interval: float) -> None:
        self.worker = worker
        self.interval = interval
        self.started_at = timezone.now()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, name="beamweaver-worker-heartbeat", daemon=True
        )

    def start(self) -> Heartbeat:
        """Start beating (from any thread: an event loop's too; the database work is
        done on the heartbeat's own thread)."""
        self._thread.start()
        return self

    @staticmethod
    def prune() -> None:
        """Delete the rows of workers gone for longer than `KEEP_GONE`."""
        WorkerHeartbeat.objects.filter(last_seen_at__lt=timezone.now() - KEEP_GONE).delete()

    def beat(self) -> None:
        """Write this worker's row now."""
        worker = self.worker
        with connections["default"].cursor() as cursor:
            cursor.execute(
                _UPSERT,
                [
                    worker.name,
                    socket.gethostname(),
                    os.getpid(),
                    worker.size,
                    worker.busy(),
                    worker.completed,
                    self.started_at,
                ],
            )

    def _loop(self) -> None:
        try:
            self.prune()
        except DatabaseError as exc:
            logger.warning("Could not prune old worker heartbeats (%s)", exc)
        while True:
            try:
                self.beat()
            except DatabaseError as exc:
                logger.warning("Worker %s: heartbeat not written (%s)", self.worker.name, exc)
            finally:
                # Back to the pool between beats (a dead one is replaced next time).
                connections.close_all()
            if self._stop.wait(self.interval):
                return

    def stop(self) -> None:
        """Stop beating and mark the worker stopped (from a thread, not an event loop)."""
        self._stop.set()
        self._thread.join(5)
        try:
            WorkerHeartbeat.objects.filter(name=self.worker.name).update(
                stopped_at=timezone.now(), busy=0, completed=self.worker.completed
            )
        except DatabaseError as exc:
            logger.warning("Worker %s: could not mark it stopped (%s)", self.worker.name, exc)


__all__ = ["Heartbeat"]
