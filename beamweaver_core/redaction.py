"""Redaction of secrets in logs, error reports, the admin and the inbox.

Tool arguments and model output are untrusted and may carry credentials. Anything that
looks like a secret (an API-key-shaped token, or the value of a key named like a secret)
is replaced by a marker before it is logged, shown or reported.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from django.views.debug import SafeExceptionReporterFilter

REDACTED = "[redacted]"

_SECRET_KEY_NAME = re.compile(
    r"(pass(word|wd)?|secret|token|api[_-]?key|apikey|authorization|auth|credential|"
    r"private[_-]?key|session|cookie|signature)",
    re.IGNORECASE,
)
_SECRET_VALUE = re.compile(
    r"(sk-(?:proj-|ant-)?[A-Za-z0-9_\-]{16,}"  # OpenAI / Anthropic keys
    r"|gh[pousr]_[A-Za-z0-9]{30,}"  # GitHub tokens
    r"|xox[abpr]-[A-Za-z0-9\-]{10,}"  # Slack tokens
    r"|AKIA[0-9A-Z]{16}"  # AWS access key ids
    r"|eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"  # JWTs
    r"|(?i:bearer)\s+[A-Za-z0-9._\-]{16,})"
)


def is_secret_key(name: str) -> bool:
    """Whether a mapping key names a secret (`password`, `api_key`, `token`, ...)."""
    return bool(_SECRET_KEY_NAME.search(name))


def redact_text(text: str) -> str:
    """Replace API-key-shaped substrings of `text`."""
    return _SECRET_VALUE.sub(REDACTED, text)


def redact(value: Any) -> Any:
    """Return a copy of JSON-like `value` with secret-looking keys and tokens redacted."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        return {
            k: (REDACTED if isinstance(k, str) and is_secret_key(k) and v else redact(v))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value


class RedactingLogFilter(logging.Filter):
    """Logging filter: redacts secret-shaped tokens in the formatted message."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact_text(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


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
            (name, self.cleansed_substitute if is_secret_key(name) else _redact_value(value))
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


def _redact_value(value: Any) -> Any:
    if isinstance(value, str | Mapping | list | tuple):
        return redact(value)
    return value
