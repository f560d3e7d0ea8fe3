"""Admin for review items, decisions and the audit log: staff only, read-only.

Items and decisions change only through the runtime and the decision service, and the
audit log is append-only, so the admin shows them without letting anyone edit them.
Payloads are shown redacted.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils.html import format_html

from beamweaver_core.redaction import redact
from reviews.models import AuditEvent, Decision, ReviewItem


def _pretty(text: str) -> Any:
    try:
        value = redact(json.loads(text))
    except ValueError:
        return text
    return format_html(
        "<pre>{}</pre>", json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
    )


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ReviewItem)
class ReviewItemAdmin(ReadOnlyAdmin):
    list_display = ("id", "kind", "graph", "tools", "thread_id", "status", "created_at")
    list_filter = ("status", "kind", "graph")
    search_fields = ("thread__id", "interrupt_id")
    date_hierarchy = "created_at"
    exclude = ("payload_json",)
    readonly_fields = ("payload",)

    @admin.display(description="Tools")
    def tools(self, obj: ReviewItem) -> str:
        return ", ".join(obj.tool_names)

    @admin.display(description="Payload (redacted)")
    def payload(self, obj: ReviewItem) -> Any:
        return _pretty(obj.payload_json)


@admin.register(Decision)
class DecisionAdmin(ReadOnlyAdmin):
    list_display = ("item", "summary", "user", "source", "created_at")
    list_filter = ("source", "outcome")
    search_fields = ("item__thread__id", "user__username", "client_decision_id")
    exclude = ("body_json", "answer_json")
    readonly_fields = ("answer",)

    @admin.display(description="Answer (redacted)")
    def answer(self, obj: Decision) -> Any:
        return _pretty(obj.answer_json)


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = (
        "at",
        "actor_name",
        "action",
        "summary",
        "item_ref",
        "thread_ref",
        "status_code",
    )
    list_filter = ("action", "source", "graph")
    search_fields = ("thread_ref", "actor_name", "item_ref", "client_decision_id")
    date_hierarchy = "at"
