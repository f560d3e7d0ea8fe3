"""Log lines with the request, run and thread they belong to; JSON lines on request.

`BEAMWEAVER_LOG_FORMAT=json` (the product's settings; a host uses `logging_config`)
writes one JSON object per line with `timestamp`, `level`, `logger`, `message`, the
`request_id`, `run_id` and `thread_id` in force (`null` when none), and any extra fields
that are plain JSON values. Every string is passed through the one redaction policy
(`beamweaver_core.redaction.redact_log_text`), and extra objects are dropped rather than
written as their `repr` (Django's request logger passes the `request`, whose repr holds
the query string).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from pythonjsonlogger.json import JsonFormatter as _JsonFormatter

from beamweaver_core.observability import context
from beamweaver_core.redaction import redact_log_text

FORMATS = ("plain", "json")
CONTEXT_FIELDS = ("request_id", "run_id", "thread_id")


class ContextFilter(logging.Filter):
    """Adds the `request_id`, `run_id` and `thread_id` in force to every record (a
    record that already names one, through `extra`, keeps its own)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in context.current().items():
            if getattr(record, name, None) is None:
                setattr(record, name, value)
        return True


class JsonFormatter(_JsonFormatter):
    """One JSON object per line; strings redacted, only JSON values kept (module doc)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("rename_fields", {"levelname": "level", "name": "logger"})
        kwargs.setdefault("timestamp", True)
        kwargs.setdefault("json_ensure_ascii", False)
        super().__init__("%(levelname)s %(name)s %(message)s", *args, **kwargs)

    def add_fields(
        self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]
    ) -> None:
        super().add_fields(log_data, record, message_dict)
        for name in CONTEXT_FIELDS:
            log_data.setdefault(name, getattr(record, name, None))
        for key, value in list(log_data.items()):
            if isinstance(value, str):
                log_data[key] = redact_log_text(value)
            elif isinstance(value, datetime):
                log_data[key] = value.isoformat()
            elif not (value is None or isinstance(value, bool | int | float)):
                del log_data[key]


def logging_config(
    log_format: str = "plain", *, level: str = "WARNING", beamweaver_level: str = "INFO"
) -> dict[str, Any]:
    """A `LOGGING` dict: one console handler with the redaction and context filters, in
    `log_format` ("plain" or "json"); `beamweaver_level` for BeamWeaver's own loggers."""
    if log_format not in FORMATS:
        raise ValueError(
            f"The log format must be one of {', '.join(FORMATS)}, got {log_format!r} "
            "(BEAMWEAVER_LOG_FORMAT)."
        )
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "redact": {"()": "beamweaver_core.redaction.RedactingLogFilter"},
            "context": {"()": "beamweaver_core.observability.logs.ContextFilter"},
        },
        "formatters": {
            "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
            "json": {"()": "beamweaver_core.observability.logs.JsonFormatter"},
        },
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": log_format,
                "filters": ["redact", "context"],
            }
        },
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            "beamweaver_core": {"level": beamweaver_level},
            "reviews": {"level": beamweaver_level},
        },
    }


__all__ = ["ContextFilter", "JsonFormatter", "logging_config"]
