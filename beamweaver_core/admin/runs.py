"""The run admin: runs read-only, cancelled (with `beamweaver_core.cancel_run`) or failed
ones re-queued (with `change_run`) from the list."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.auth import get_permission_codename
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from beamweaver_core.admin.display import ReadOnlyAdmin, pretty_json
from beamweaver_core.exceptions import BeamWeaverError
from beamweaver_core.models import Run
from beamweaver_core.redaction import redact
from beamweaver_core.runtime import service


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin[Run]):
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
