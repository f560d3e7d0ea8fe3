"""Django admin for threads, runs, checkpoints and pending writes.

Storage rows are read-only (the engine owns them) and shown as pretty-printed JSON with
secrets redacted. Runs can be cancelled (with `beamweaver_core.cancel_run`), and failed
runs re-queued (with `change_run`), from the list: every action names the permission it
needs, so a staff user who may only view runs runs neither.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth import get_permission_codename
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import format_html

from beamweaver_core.exceptions import BeamWeaverError
from beamweaver_core.models import (
    Checkpoint,
    CheckpointBlob,
    CheckpointWrite,
    Run,
    RunEvent,
    Thread,
    WorkerHeartbeat,
)
from beamweaver_core.redaction import redact
from beamweaver_core.runtime import service


def pretty_json(value: Any) -> str:
    """Readable, redacted JSON (`value` may be JSON text or data)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return format_html("<pre>{}</pre>", value)
    text = json.dumps(redact(value), indent=2, sort_keys=True, ensure_ascii=False, default=repr)
    return format_html('<pre class="bw-json">{}</pre>', text)


class ReadOnlyAdmin(admin.ModelAdmin):
    """Storage rows: viewable by staff, never edited by hand."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class RunInline(admin.TabularInline):
    model = Run
    fields = ("id", "kind", "status", "attempts", "created_at", "finished_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Thread)
class ThreadAdmin(ReadOnlyAdmin):
    list_display = ("id", "graph", "status", "created_at", "updated_at")
    list_filter = ("graph", "status")
    search_fields = ("id",)
    readonly_fields = ("id", "graph", "status", "metadata_json", "created_at", "updated_at")
    exclude = ("metadata",)
    inlines = (RunInline,)

    @admin.display(description="metadata")
    def metadata_json(self, obj: Thread) -> str:
        return pretty_json(obj.metadata)


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "thread",
        "graph",
        "kind",
        "status",
        "attempts",
        "lease_owner",
        "created_at",
        "finished_at",
    )
    list_filter = ("graph", "status", "kind")
    search_fields = ("thread__id", "id")
    readonly_fields = (
        "id",
        "thread",
        "graph",
        "kind",
        "status",
        "input_json",
        "options_json",
        "context_json",
        "result_json",
        "error_text",
        "lease_owner",
        "lease_expires_at",
        "fencing_token",
        "attempts",
        "created_by",
        "created_at",
        "started_at",
        "finished_at",
        "trace_context",
    )
    exclude = ("input", "options", "context", "result", "error")
    actions = ("cancel_runs", "requeue_runs")

    @admin.display(description="input")
    def input_json(self, obj: Run) -> str:
        return pretty_json(obj.input)

    @admin.display(description="options")
    def options_json(self, obj: Run) -> str:
        return pretty_json(obj.options)

    @admin.display(description="context")
    def context_json(self, obj: Run) -> str:
        return pretty_json(obj.context)

    @admin.display(description="result")
    def result_json(self, obj: Run) -> str:
        return pretty_json(obj.result)

    @admin.display(description="error")
    def error_text(self, obj: Run) -> str:
        return format_html("<pre>{}</pre>", redact(obj.error)) if obj.error else "-"

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # What re-queueing needs; every field stays read-only.
        return bool(request.user.is_staff and request.user.has_perm("beamweaver_core.change_run"))

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        """Cancelling needs `beamweaver_core.cancel_run` (not `change_run`): it ends the
        run and its pending reviews, which its deciders had not chosen."""
        opts = self.opts
        codename = get_permission_codename("cancel", opts)
        return bool(request.user.is_staff and request.user.has_perm(f"{opts.app_label}.{codename}"))

    @admin.action(description="Cancel selected runs", permissions=["cancel"])
    def cancel_runs(self, request: HttpRequest, queryset: QuerySet[Run]) -> None:
        self._apply(request, queryset, service.cancel_run, "cancelled", user=request.user)

    @admin.action(description="Re-queue selected failed runs", permissions=["change"])
    def requeue_runs(self, request: HttpRequest, queryset: QuerySet[Run]) -> None:
        self._apply(request, queryset, service.requeue_run, "re-queued")

    def _apply(
        self, request: HttpRequest, queryset: QuerySet[Run], action: Any, verb: str, **kwargs: Any
    ) -> None:
        done, refused = 0, []
        for run in queryset:
            try:
                action(run.id, **kwargs)
                done += 1
            except (BeamWeaverError, ValueError) as exc:
                refused.append(f"{run.id}: {exc}")
        if done:
            self.message_user(request, f"{done} run(s) {verb}.", messages.SUCCESS)
        for reason in refused:
            self.message_user(request, reason, messages.WARNING)


@admin.register(Checkpoint)
class CheckpointAdmin(ReadOnlyAdmin):
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
        "document_json",
        "metadata_json",
    )
    exclude = ("document", "metadata")

    @admin.display(description="document")
    def document_json(self, obj: Checkpoint) -> str:
        return pretty_json(obj.document)

    @admin.display(description="metadata")
    def metadata_json(self, obj: Checkpoint) -> str:
        return pretty_json(obj.metadata)


@admin.register(CheckpointBlob)
class CheckpointBlobAdmin(ReadOnlyAdmin):
    list_display = ("thread", "ns", "channel", "version")
    search_fields = ("thread__id", "channel")
    readonly_fields = ("thread", "ns", "channel", "version", "blob_json")
    exclude = ("blob",)

    @admin.display(description="value")
    def blob_json(self, obj: CheckpointBlob) -> str:
        return pretty_json(obj.blob)


@admin.register(CheckpointWrite)
class CheckpointWriteAdmin(ReadOnlyAdmin):
    list_display = ("thread", "ns", "checkpoint_id", "task_id")
    search_fields = ("thread__id", "checkpoint_id", "task_id")
    readonly_fields = ("thread", "ns", "checkpoint_id", "task_id", "record_json")
    exclude = ("record",)

    @admin.display(description="record")
    def record_json(self, obj: CheckpointWrite) -> str:
        return pretty_json(obj.record)


@admin.register(RunEvent)
class RunEventAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "thread", "run", "seq", "event", "node")
    list_filter = ("event",)
    search_fields = ("thread__id",)
    readonly_fields = ("run", "thread", "seq", "event", "node", "ns", "data_json", "created_at")
    exclude = ("data",)

    @admin.display(description="data")
    def data_json(self, obj: RunEvent) -> str:
        return pretty_json(obj.data)


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(ReadOnlyAdmin):
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
        interval = float(settings.BEAMWEAVER.get("HEARTBEAT_SECONDS", 5))
        seen = (timezone.now() - obj.last_seen_at).total_seconds()
        return obj.stopped_at is None and seen <= WorkerHeartbeat.alive_after(interval)
