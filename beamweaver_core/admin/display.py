"""How the admin shows stored data: pretty-printed, redacted JSON, and read-only pages."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest
from django.utils.html import format_html

from beamweaver_core import redaction

_ModelT = TypeVar("_ModelT", bound=Model)


def pretty_json(value: Any) -> str:
    """Readable, redacted JSON as HTML (`value` may be JSON text or data; text that is not
    JSON is shown as redacted text)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return format_html("<pre>{}</pre>", redaction.redact_text(value))
    return format_html('<pre class="bw-json">{}</pre>', redaction.pretty_json(value))


class ReadOnlyAdmin(admin.ModelAdmin[_ModelT]):
    """Storage rows: viewable by staff, never edited by hand."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: _ModelT | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: _ModelT | None = None) -> bool:
        return False
