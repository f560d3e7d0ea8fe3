"""Waking workers after a run is queued: in-process workers directly, others by a
channel-layer hint. Workers also poll, so a lost hint only delays a run."""

from __future__ import annotations

import threading
from typing import Any

from beamweaver_core.runtime.groups import RUNS_CHANNEL
from beamweaver_core.runtime.publish import channel_send


class Wakeups:
    """The wake-ups of one worker's threads: each `set()` wakes one waiting thread (or
    lets the next one to wait go at once; at most `limit` are kept), and `set_all()`
    wakes every thread, for good (the worker is stopping).

    One queued run needs one claim. A `threading.Event` wakes every waiting thread, so
    each queued run sent all of a worker's idle threads to claim it, all but one for
    nothing (a pooled connection checked, a claim statement, a commit each); a
    `threading.Semaphore` cannot wake them all at once to stop. Hence this small
    counter on a `threading.Condition`."""

    def __init__(self, limit: int) -> None:
        self._limit = max(1, limit)
        self._pending = 0
        self._all = False
        self._condition = threading.Condition()

    def set(self) -> None:
        with self._condition:
            self._pending = min(self._limit, self._pending + 1)
            self._condition.notify()

    def set_all(self) -> None:
        with self._condition:
            self._all = True
            self._condition.notify_all()

    def wait(self, timeout: float) -> bool:
        """Until woken (`True`) or `timeout` seconds have passed (`False`)."""
        with self._condition:
            if not (self._pending or self._all):
                self._condition.wait(timeout)
            if self._all:
                return True
            if self._pending:
                self._pending -= 1
                return True
            return False


_local_wakers: list[Wakeups] = []
_lock = threading.Lock()


def register_local(wakeups: Wakeups) -> None:
    """An in-process worker wants to be woken by runs queued in this process."""
    with _lock:
        _local_wakers.append(wakeups)


def unregister_local(wakeups: Wakeups) -> None:
    with _lock:
        if wakeups in _local_wakers:
            _local_wakers.remove(wakeups)


def notify_run_queued(run_id: Any) -> None:
    with _lock:
        wakers = list(_local_wakers)
    for wakeups in wakers:
        wakeups.set()
    if not wakers:
        channel_send(RUNS_CHANNEL, {"type": "run.queued", "run_id": str(run_id)})


__all__ = ["Wakeups", "notify_run_queued", "register_local", "unregister_local"]
