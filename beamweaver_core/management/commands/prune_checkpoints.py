"""`manage.py prune_checkpoints`: checkpoint retention that keeps every thread resumable."""

from __future__ import annotations

import dataclasses
import json
from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from beamweaver_core.checkpoint.pruning import (
    PruneReport,
    busy_message,
    chunks,
    drop_thread_storage,
    prune_thread,
)
from beamweaver_core.exceptions import ThreadBusyError
from beamweaver_core.models import Thread

FINISHED = (Thread.Status.COMPLETED, Thread.Status.FAILED, Thread.Status.CANCELLED)


class Command(BaseCommand):
    help = (
        "Prune checkpoint storage: keep the latest N checkpoints of every thread namespace "
        "(and whatever they need to be rebuilt and resumed), and drop the checkpoint storage "
        "of finished threads older than a cut-off. Threads with a queued or running run are "
        "skipped; paused threads stay resumable. Threads, runs and the review audit are kept."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--keep",
            type=int,
            default=10,
            help="Checkpoints to keep per thread namespace (default 10, at least 1).",
        )
        parser.add_argument(
            "--finished-older-than",
            type=float,
            default=None,
            metavar="DAYS",
            help="Also drop all checkpoint storage of completed/failed/cancelled threads not updated for DAYS days.",
        )
        parser.add_argument("--thread", default=None, help="Only this thread.")
        parser.add_argument(
            "--dry-run", action="store_true", help="Report what would be deleted; delete nothing."
        )
        parser.add_argument("--json", action="store_true", help="Print a JSON report.")

    def handle(
        self,
        *args: Any,
        keep: int,
        finished_older_than: float | None,
        thread: str | None,
        dry_run: bool,
        json: bool,
        **options: Any,
    ) -> None:
        if keep < 1:
            raise CommandError(
                "--keep must be at least 1 (the latest checkpoint is the thread's state)."
            )
        if finished_older_than is not None and finished_older_than < 0:
            raise CommandError("--finished-older-than must be a number of days >= 0.")
        if thread is not None and not Thread.objects.filter(id=thread).exists():
            raise CommandError(f"Thread {thread!r} does not exist.")
        dropped: list[PruneReport] = []
        pruned: list[PruneReport] = []
        skipped: list[dict[str, str]] = []
        cutoff = (
            timezone.now() - timedelta(days=finished_older_than)
            if finished_older_than is not None
            else None
        )
        # Only the threads with something to do are locked, one at a time; the rest are
        # found in slices by read-only queries (beamweaver_core.checkpoint.pruning.chunks).
        for chunk in chunks(keep, finished=FINISHED, cutoff=cutoff, thread_id=thread):
            skipped.extend({"thread_id": t, "reason": busy_message(t)} for t in chunk.busy)
            busy = set(chunk.busy)
            for thread_id in chunk.drop:
                dropped.append(drop_thread_storage(thread_id, dry_run=dry_run))
            for thread_id in chunk.prune:
                if thread_id in busy:
                    continue
                try:
                    report = prune_thread(thread_id, keep, dry_run=dry_run)
                except ThreadBusyError as exc:  # became busy since the slice was read
                    skipped.append({"thread_id": thread_id, "reason": str(exc)})
                    continue
                if report.checkpoints_deleted or report.blobs_deleted or report.writes_deleted:
                    pruned.append(report)
        summary = {
            "dry_run": dry_run,
            "pruned": [dataclasses.asdict(r) for r in pruned],
            "dropped": [dataclasses.asdict(r) for r in dropped],
            "skipped": skipped,
            "checkpoints_deleted": sum(r.checkpoints_deleted for r in pruned + dropped),
            "blobs_deleted": sum(r.blobs_deleted for r in pruned + dropped),
            "writes_deleted": sum(r.writes_deleted for r in pruned + dropped),
        }
        if json:
            self.stdout.write(_json(summary))
            return
        verb = "Would delete" if dry_run else "Deleted"
        self.stdout.write(
            f"{verb} {summary['checkpoints_deleted']} checkpoint(s), {summary['blobs_deleted']} blob(s), "
            f"{summary['writes_deleted']} pending write(s): {len(pruned)} thread(s) pruned, "
            f"{len(dropped)} finished thread(s) dropped, {len(skipped)} busy thread(s) skipped."
        )


def _json(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=True)
