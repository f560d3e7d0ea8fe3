"""The review sweeper: deadlines (`reviews.deadlines.sweep`), then the notification outbox
(`reviews.notifications.outbox.deliver_due`).

It runs inside every worker process: the worker loop sends the runtime's `worker_tick`
signal, and this module's receiver starts a sweep on its own thread at most once every
`BEAMWEAVER["REVIEW_SWEEP_SECONDS"]` per process (so a slow webhook never holds up a
worker that should be running graphs). Workers always run (inside the web process on one machine, as
`manage.py beamweaver_worker` elsewhere), so deadlines and notifications need no other
process; `manage.py review_sweep` runs the same sweep from cron or a shell. All its state
is in Postgres, so a restart loses nothing and several sweepers never double-handle an
item or a message.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime
from typing import Any

from django.db import DatabaseError, connections

from beamweaver_core.conf import conf
from reviews import deadlines
from reviews.notifications import outbox

logger = logging.getLogger(__name__)


_lock = threading.Lock()
_last = float("-inf")
"""When this process last started a sweep (monotonic); never yet: the first tick sweeps
at once, however recently the machine booted."""
_running: threading.Thread | None = None


def interval() -> float:
    """Seconds between two sweeps of one process."""
    return conf.review_sweep_seconds


def sweep_once(now: datetime | None = None) -> dict[str, Any]:
    """One full sweep; what it did, as JSON."""
    report = deadlines.sweep(now)
    delivered = outbox.deliver_due(now=now)
    return {"deadlines": report.to_dict(), "notifications": delivered.to_dict()}


def _sweep_in_background() -> None:
    try:
        done = sweep_once()
        if any(done["deadlines"].values()) or any(done["notifications"].values()):
            logger.info("Review sweep: %s", done)
    except DatabaseError as exc:
        logger.warning("Review sweep failed (%s); the next tick retries", exc)
    except Exception:
        logger.exception("Review sweep failed; the next tick retries")
    finally:
        connections.close_all()


def on_worker_tick(sender: object, **kwargs: object) -> None:
    """The `worker_tick` receiver: start a sweep if none is running in this process and
    the last one started an interval ago."""
    global _last, _running
    with _lock:
        if _running is not None and _running.is_alive():
            return
        if time.monotonic() - _last < interval():
            return
        _last = time.monotonic()
        _running = threading.Thread(
            target=_sweep_in_background, name="beamweaver-review-sweeper", daemon=True
        )
        _running.start()


__all__ = ["interval", "on_worker_tick", "sweep_once"]
