"""Deleting threads and runs over the protocol, with their storage and events, unless
another app keeps records of them (the inbox's review items and decisions, which the
audit keeps)."""

from __future__ import annotations

from django.db import connection, models, router
from django.db.models.deletion import Collector

from beamweaver_core.models import Thread

STORAGE = ("bw_checkpoint", "bw_checkpoint_blob", "bw_checkpoint_write")
OURS = frozenset({"beamweaver_core", "beamweaver_protocol"})


def kept_elsewhere(obj: models.Model) -> str:
    """What other apps hold of `obj` (a thread or a run) that deleting it would delete,
    named ("" if nothing)."""
    collector = Collector(using=router.db_for_write(type(obj)))
    collector.collect([obj])
    held = sorted(
        str(model._meta.verbose_name_plural)
        for model, objects in collector.data.items()
        if objects and model._meta.app_label not in OURS
    )
    return ", ".join(held)


def delete_thread(thread: Thread) -> None:
    """Delete the thread with everything of it (in the caller's transaction, which checked
    `kept_elsewhere`). The checkpoint tables are emptied with one statement each first: the
    ORM would load every row to cascade."""
    with connection.cursor() as cursor:
        for table in STORAGE:
            cursor.execute(f"DELETE FROM {table} WHERE thread_id = %s", [thread.id])
    thread.delete()


__all__ = ["delete_thread", "kept_elsewhere"]
