"""Workers: threads that claim queued runs, execute them under a heartbeated lease, and
sweep runs whose lease expired.

A worker wakes on a hint (in-process or a channel-layer message; one idle thread per
queued run) and also polls every `POLL_SECONDS`, so a lost hint only delays a run.
Heartbeats run on their own thread, so a tool that blocks its thread does not let the
lease lapse. Database errors (Postgres restarting, a killed backend) are logged and
retried with backoff: a worker reconnects by itself.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from django.conf import settings
from django.db import close_old_connections, connections
from django.db.utils import DatabaseError, InterfaceError, OperationalError

from beamweaver_core.conf import conf
from beamweaver_core.observability import instruments, pool
from beamweaver_core.postgres.pool_size import pool_size, set_pool_size, worker_pool_size
from beamweaver_core.runtime.execution import execute
from beamweaver_core.runtime.heartbeats import Heartbeat
from beamweaver_core.runtime.mcp_servers import start_declared_in_background
from beamweaver_core.runtime.queue import (
    Claim,
    claim_next_run,
    extend_lease,
    promote_stalled,
    release_run,
    sweep_expired_leases,
)
from beamweaver_core.runtime.signals import worker_tick
from beamweaver_core.runtime.wakeup import Wakeups, register_local, unregister_local

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    lease_seconds: float
    heartbeat_seconds: float
    poll_seconds: float
    max_attempts: int

    @classmethod
    def from_django(cls) -> WorkerSettings:
        return cls(
            lease_seconds=conf.lease_seconds,
            heartbeat_seconds=conf.heartbeat_seconds,
            poll_seconds=conf.poll_seconds,
            max_attempts=conf.max_attempts,
        )


class Worker:
    """A pool of worker threads in this process."""

    def __init__(
        self, *, threads: int = 1, name: str | None = None, conf: WorkerSettings | None = None
    ) -> None:
        self.name = name or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.conf = conf or WorkerSettings.from_django()
        self.size = threads
        self._wake = Wakeups(threads)
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._current: dict[int, Claim] = {}
        self._lock = threading.Lock()
        self.completed = 0
        self._liveness: Heartbeat | None = None

    def start(self) -> Worker:
        register_local(self._wake)
        start_declared_in_background()
        self._liveness = Heartbeat(self, self.conf.heartbeat_seconds).start()
        pool.start_sampler()
        for index in range(self.size):
            thread = threading.Thread(
                target=self._loop, name=f"beamweaver-worker-{index}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        logger.info("Worker %s started with %d thread(s)", self.name, self.size)
        return self

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop claiming; wait up to `timeout` for running runs, then give them back."""
        self._stopping.set()
        self._wake.set_all()
        unregister_local(self._wake)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            unfinished = list(self._current.values())
        for claim in unfinished:
            try:
                if release_run(claim):
                    instruments.RUN_REQUEUES.labels("shutdown").inc()
                logger.warning("Released run %s back to the queue at shutdown", claim.run_id)
            except DatabaseError:
                logger.exception("Could not release run %s; its lease will expire", claim.run_id)
        if self._liveness is not None:
            self._liveness.stop()

    def busy(self) -> int:
        """How many runs this worker is executing now."""
        with self._lock:
            return len(self._current)

    @property
    def running(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    def _loop(self) -> None:
        backoff = 0.5
        next_sweep = 0.0
        while not self._stopping.is_set():
            try:
                now = time.monotonic()
                if now >= next_sweep:
                    sweep_expired_leases(self.conf.max_attempts)
                    promote_stalled()
                    next_sweep = now + max(1.0, self.conf.lease_seconds / 3)
                    self._tick()
                claim = claim_next_run(self.name, self.conf.lease_seconds)
                instruments.RUN_CLAIMS.labels("claimed" if claim else "empty").inc()
                backoff = 0.5
                if claim is None:
                    self._wake.wait(self.conf.poll_seconds)
                    continue
                self._run(claim)
            except (OperationalError, InterfaceError) as exc:
                logger.warning(
                    "Worker %s: database unavailable (%s); retrying in %.1fs",
                    self.name,
                    exc,
                    backoff,
                )
                _discard_broken_connections()
                self._stopping.wait(backoff)
                backoff = min(backoff * 2, 10.0)
            except Exception:
                logger.exception("Worker %s: unexpected error in the claim loop", self.name)
                self._stopping.wait(backoff)
            finally:
                close_old_connections()

    def _tick(self) -> None:
        for receiver, result in worker_tick.send_robust(sender=Worker, worker=self.name):
            if isinstance(result, Exception):
                logger.error("Worker %s: tick receiver %r failed: %s", self.name, receiver, result)

    def _run(self, claim: Claim) -> None:
        ident = threading.get_ident()
        with self._lock:
            self._current[ident] = claim
        try:
            with heartbeating(claim, self.conf):
                status = execute(claim)
            logger.info(
                "Run %s (%s on %s) -> %s", claim.run_id, claim.graph, claim.thread_id, status
            )
            self.completed += 1
        finally:
            with self._lock:
                self._current.pop(ident, None)


@contextlib.contextmanager
def heartbeating(claim: Claim, conf: WorkerSettings) -> Iterator[None]:
    """Extend the claim's lease every `conf.heartbeat_seconds` while the body runs, from a
    thread of its own (a tool that blocks the body's thread does not let the lease lapse)."""
    stop = threading.Event()
    beat = threading.Thread(
        target=_heartbeat,
        args=(claim, conf, stop),
        name=f"beamweaver-heartbeat-{claim.run_id}",
        daemon=True,
    )
    beat.start()
    try:
        yield
    finally:
        stop.set()
        beat.join(5)


def _heartbeat(claim: Claim, conf: WorkerSettings, stop: threading.Event) -> None:
    try:
        while not stop.wait(conf.heartbeat_seconds):
            try:
                if not extend_lease(claim, conf.lease_seconds):
                    logger.warning("Run %s: lease lost (taken over or cancelled)", claim.run_id)
                    return
            except DatabaseError as exc:
                logger.warning("Run %s: heartbeat failed (%s); will retry", claim.run_id, exc)
                _discard_broken_connections()
    finally:
        connections.close_all()


def _discard_broken_connections() -> None:
    for conn in connections.all(initialized_only=True):
        with contextlib.suppress(Exception):
            conn.close()


_inline: Worker | None = None
_inline_lock = threading.Lock()


def inline_mode() -> bool:
    """Whether this web process runs the workers itself (no Redis: one process)."""
    mode = conf.worker_mode
    if mode == "auto":
        return "InMemoryChannelLayer" in settings.CHANNEL_LAYERS["default"]["BACKEND"]
    return mode == "inline"


def process_worker(threads: int | None = None) -> Worker:
    """The worker pool of this process, started on first use."""
    global _inline
    with _inline_lock:
        if _inline is None:
            size = threads or conf.worker_threads
            # The web process runs these workers too: its pool gets a worker's share more.
            current = pool_size()
            if current is not None:
                set_pool_size(current + worker_pool_size(size))
            _inline = Worker(threads=size).start()
        return _inline


def stop_process_worker(timeout: float = 10.0) -> None:
    global _inline
    with _inline_lock:
        worker, _inline = _inline, None
    if worker is not None:
        worker.stop(timeout)


__all__ = [
    "Worker",
    "WorkerSettings",
    "heartbeating",
    "inline_mode",
    "process_worker",
    "stop_process_worker",
]
