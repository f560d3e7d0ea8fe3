"""The worker consumer on channel `beamweaver.runs` (for `manage.py runworker`).

A hint only wakes this process's worker pool; the pool claims runs from Postgres, so a
hint that never arrives only delays a run until the next poll.
"""

from __future__ import annotations

from typing import Any

from channels.consumer import SyncConsumer

from beamweaver_core.runtime.worker import process_worker


class RunWorkerConsumer(SyncConsumer):
    def run_queued(self, message: dict[str, Any]) -> None:
        process_worker().wake()


__all__ = ["RunWorkerConsumer"]
