"""Waking workers after a run is queued: in-process workers directly, others by a
channel-layer hint. Workers also poll, so a lost hint only delays a run."""

from __future__ import annotations

import threading
from typing import Any

from beamweaver_core.runtime.groups import RUNS_CHANNEL
from beamweaver_core.runtime.publish import channel_send

_local_wakers: list[threading.Event] = []
_lock = threading.Lock()


def register_local(event: threading.Event) -> None:
    """An in-process worker wants to be woken by runs queued in this process."""
    with _lock:
        _local_wakers.append(event)


def unregister_local(event: threading.Event) -> None:
    with _lock:
        if event in _local_wakers:
            _local_wakers.remove(event)


def notify_run_queued(run_id: Any) -> None:
    with _lock:
        wakers = list(_local_wakers)
    for event in wakers:
        event.set()
    if not wakers:
        channel_send(RUNS_CHANNEL, {"type": "run.queued", "run_id": str(run_id)})


__all__ = ["notify_run_queued", "register_local", "unregister_local"]
