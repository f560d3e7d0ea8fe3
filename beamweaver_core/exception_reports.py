"""Django's error reports (the 500 e-mail and the debug page) under the redaction policy.

Kept apart from `beamweaver_core.redaction`, which imports nothing of Django so that the
engine's tracing can use it.
"""

from __future__ import annotations

import re
from typing import Any

from django.views.debug import SafeExceptionReporterFilter

from beamweaver_core.redaction import is_secret_key, redact_text, redact_value


class RedactingExceptionReporterFilter(SafeExceptionReporterFilter):
    """Django error reports: hide secret-named settings *and* secret-shaped values."""

    hidden_settings = re.compile(
        "API|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|DATABASE_URL|REDIS_URL",
        flags=re.IGNORECASE,
    )

    def cleanse_setting(self, key: Any, value: Any) -> Any:
        cleansed = super().cleanse_setting(key, value)
        return redact_text(cleansed) if isinstance(cleansed, str) else cleansed

    def get_traceback_frame_variables(self, request: Any, tb_frame: Any) -> Any:
        return [
            (name, self.cleansed_substitute if is_secret_key(name) else redact_value(value))
            for name, value in super().get_traceback_frame_variables(request, tb_frame)
        ]

    def get_post_parameters(self, request: Any) -> Any:
        params = super().get_post_parameters(request)
        if not params:
            return params
        cleaned = params.copy()
        for key in cleaned:
            values = cleaned.getlist(key) if hasattr(cleaned, "getlist") else [cleaned[key]]
            redacted = [
                self.cleansed_substitute if is_secret_key(key) else redact_text(str(v))
                for v in values
            ]
            if hasattr(cleaned, "setlist"):
                cleaned.setlist(key, redacted)
            else:
                cleaned[key] = redacted[0]
        return cleaned
