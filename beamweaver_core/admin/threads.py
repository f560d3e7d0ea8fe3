"""The thread admin: the thread row, and on its page what an operator needs to understand
it (`beamweaver_core.admin.inspection`): the decoded current state, the pending interrupts
linked to their review items, a page of the checkpoint history with decoded values, the
latest runs and events, and "View on site" to the thread page. Everything is read-only:
the engine owns the history, and editing it by hand would rewrite what happened."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest, HttpResponse

from beamweaver_core.admin import inspection
from beamweaver_core.admin.display import ReadOnlyAdmin, pretty_json
from beamweaver_core.models import Thread


@admin.register(Thread)
class ThreadAdmin(ReadOnlyAdmin[Thread]):
    list_display = ("id", "graph", "status", "created_at", "updated_at")
    list_filter = ("graph", "status")
    search_fields = ("id",)
    readonly_fields = ("id", "graph", "status", "metadata_json", "created_at", "updated_at")
    exclude = ("metadata",)
    change_form_template = "admin/beamweaver_core/thread/change_form.html"

    @admin.display(description="metadata")
    def metadata_json(self, obj: Thread) -> str:
        return pretty_json(obj.metadata)

    def view_on_site(self, obj: Thread) -> str | None:
        return inspection.url("reviews:thread", obj.id) or None

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: Thread | None = None,
    ) -> HttpResponse:
        if obj is not None:
            before = str(request.GET.get("before") or "")[:64]
            context.update(
                bw_state=inspection.current_state(obj),
                bw_history=inspection.history(obj, before),
                bw_history_before=before,
                bw_runs=inspection.runs(obj),
                bw_events=inspection.events(obj),
                bw_runs_limit=inspection.RUNS_LIMIT,
                bw_events_limit=inspection.EVENTS_LIMIT,
            )
        return super().render_change_form(request, context, add, change, form_url, obj)
