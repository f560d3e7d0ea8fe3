"""Storage rows (checkpoints, blobs, pending writes, run events) and worker heartbeats,
read-only; a checkpoint's page shows its stored parts decoded into the state's values."""

from __future__ import annotations

import logging
from typing import Any

from django.contrib import admin
from django.utils import timezone

from beamweaver_core.admin.display import ReadOnlyAdmin, pretty_json
from beamweaver_core.checkpoint import serde
from beamweaver_core.checkpoint.postgres import PostgresCheckpointer
from beamweaver_core.checkpoint.types import Checkpoint as Saved
from beamweaver_core.conf import conf
from beamweaver_core.models import (
    Checkpoint,
    CheckpointBlob,
    CheckpointWrite,
    RunEvent,
    WorkerHeartbeat,
)

logger = logging.getLogger(__name__)


def _as_data(value: Any) -> Any:
    """Decoded state as the checkpoint stores it: engine objects (messages, tool calls,
    interrupts) in their tagged JSON form, so that the redaction policy reaches inside
    them (shown by their `repr`, a message's text and a tool call's secret-named
    arguments were not redacted)."""
    return serde.to_jsonable(value, ("<admin>",))


@admin.register(Checkpoint)
class CheckpointAdmin(ReadOnlyAdmin[Checkpoint]):
    list_display = ("thread", "ns", "seq", "step", "source", "checkpoint_id", "created_at")
    list_filter = ("source", "thread__graph")
    search_fields = ("thread__id", "checkpoint_id")
    readonly_fields = (
        "thread",
        "ns",
        "checkpoint_id",
        "seq",
        "step",
        "parent_id",
        "source",
        "created_at",
        "values_json",
        "next_tasks",
        "pending_json",
        "document_json",
        "task_writes_json",
        "metadata_json",
    )
    exclude = ("document", "metadata", "task_writes")

    def _decoded(self, obj: Checkpoint) -> Saved | None:
        """The checkpoint read back through the checkpointer: its blobs (full values and
        appended deltas) decoded into the state's values (read once per page, kept on the
        row: this admin instance is shared by every request)."""
        if not hasattr(obj, "_bw_decoded"):
            try:
                saved = PostgresCheckpointer().load(obj.thread_id, obj.ns, obj.checkpoint_id)
            except Exception as exc:
                logger.warning("Cannot decode checkpoint %s: %s", obj.pk, exc)
                saved = None
            obj._bw_decoded = saved  # type: ignore[attr-defined]
        return obj._bw_decoded  # type: ignore[attr-defined,no-any-return]

    @admin.display(description="values (decoded)")
    def values_json(self, obj: Checkpoint) -> str:
        saved = self._decoded(obj)
        if saved is None:
            return "The values cannot be decoded."
        return pretty_json(_as_data(saved.values))

    @admin.display(description="next")
    def next_tasks(self, obj: Checkpoint) -> str:
        saved = self._decoded(obj)
        return (", ".join(t.name for t in saved.tasks) or "-") if saved is not None else "-"

    @admin.display(description="pending writes (decoded)")
    def pending_json(self, obj: Checkpoint) -> str:
        saved = self._decoded(obj)
        if saved is None or not saved.records:
            return "-"
        return pretty_json(
            _as_data(
                {
                    task: {
                        "status": r.status,
                        "writes": [list(w) for w in r.writes],
                        "interrupts": [i.to_dict() for i in r.interrupts],
                        "answers": list(r.answers),
                    }
                    for task, r in saved.records.items()
                }
            )
        )

    @admin.display(description="task writes (of the step that produced it, as stored)")
    def task_writes_json(self, obj: Checkpoint) -> str:
        return pretty_json(obj.task_writes) if obj.task_writes is not None else "-"

    @admin.display(description="document")
    def document_json(self, obj: Checkpoint) -> str:
        return pretty_json(obj.document)

    @admin.display(description="metadata")
    def metadata_json(self, obj: Checkpoint) -> str:
        return pretty_json(obj.metadata)


@admin.register(CheckpointBlob)
class CheckpointBlobAdmin(ReadOnlyAdmin[CheckpointBlob]):
    list_display = ("thread", "ns", "channel", "version")
    search_fields = ("thread__id", "channel")
    readonly_fields = ("thread", "ns", "channel", "version", "blob_json")
    exclude = ("blob",)

    @admin.display(description="value")
    def blob_json(self, obj: CheckpointBlob) -> str:
        return pretty_json(obj.blob)


@admin.register(CheckpointWrite)
class CheckpointWriteAdmin(ReadOnlyAdmin[CheckpointWrite]):
    list_display = ("thread", "ns", "checkpoint_id", "task_id")
    search_fields = ("thread__id", "checkpoint_id", "task_id")
    readonly_fields = ("thread", "ns", "checkpoint_id", "task_id", "record_json")
    exclude = ("record",)

    @admin.display(description="record")
    def record_json(self, obj: CheckpointWrite) -> str:
        return pretty_json(obj.record)


@admin.register(RunEvent)
class RunEventAdmin(ReadOnlyAdmin[RunEvent]):
    list_display = ("created_at", "thread", "run", "seq", "event", "node")
    list_filter = ("event",)
    search_fields = ("thread__id",)
    readonly_fields = ("run", "thread", "seq", "event", "node", "ns", "data_json", "created_at")
    exclude = ("data",)

    @admin.display(description="data")
    def data_json(self, obj: RunEvent) -> str:
        return pretty_json(obj.data)


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(ReadOnlyAdmin[WorkerHeartbeat]):
    """Worker processes and their liveness (`runtime.heartbeats`)."""

    list_display = (
        "name",
        "hostname",
        "pid",
        "alive",
        "busy",
        "threads",
        "completed",
        "last_seen_at",
        "started_at",
        "stopped_at",
    )
    list_filter = ("hostname",)
    search_fields = ("name", "hostname")

    @admin.display(boolean=True, description="alive")
    def alive(self, obj: WorkerHeartbeat) -> bool:
        interval = conf.heartbeat_seconds
        seen = (timezone.now() - obj.last_seen_at).total_seconds()
        return obj.stopped_at is None and seen <= WorkerHeartbeat.alive_after(interval)
