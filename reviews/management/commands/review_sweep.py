"""`manage.py review_sweep [--loop] [--interval SECONDS] [--json]`: handle review deadlines
(reminders, escalations, expiries) and deliver queued notifications."""

from __future__ import annotations

import json
import signal
import threading
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from reviews import sweeper


class Command(BaseCommand):
    help = (
        "Run the review sweeper once: send due reminders, escalate or expire items whose "
        "deadline passed, and deliver queued notifications (email, webhooks) with retries. "
        "Workers already run it every REVIEW_SWEEP_SECONDS; use this from cron, a shell, "
        "or with --loop as its own process. Safe to run anywhere, any number of times."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--loop", action="store_true", help="Keep sweeping until SIGTERM or Ctrl-C."
        )
        parser.add_argument(
            "--interval",
            type=float,
            default=None,
            help="Seconds between sweeps with --loop (default: REVIEW_SWEEP_SECONDS).",
        )
        parser.add_argument(
            "--json",
            action="store_true",
            dest="as_json",
            help="Print what each sweep did as one JSON object per line.",
        )

    def handle(
        self, *args: Any, loop: bool, interval: float | None, as_json: bool, **_: Any
    ) -> None:
        pause = sweeper.interval() if interval is None else interval
        if pause <= 0:
            raise CommandError("--interval must be positive.")
        stop = threading.Event()
        if loop:
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda *_: stop.set())
        while True:
            done = sweeper.sweep_once()
            self._report(done, as_json)
            if not loop or stop.wait(pause):
                return

    def _report(self, done: dict[str, Any], as_json: bool) -> None:
        if as_json:
            self.stdout.write(json.dumps(done, sort_keys=True))
            return
        d, n = done["deadlines"], done["notifications"]
        self.stdout.write(
            f"Deadlines: {d['reminded']} reminded, {d['escalated']} escalated, "
            f"{d['expired']} expired, {d['overdue']} overdue. Notifications: {n['sent']} "
            f"sent, {n['retrying']} to retry, {n['dead']} given up."
        )
