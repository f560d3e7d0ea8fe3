"""Secrets in tool arguments and model output never reach logs or error reports
(reliability.md case 43)."""

from __future__ import annotations

import logging

import pytest
from django.test import RequestFactory
from django.views.debug import ExceptionReporter

from beamweaver_core.redaction import REDACTED, RedactingLogFilter, redact

KEYS = [
    "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
    "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB",
    "AKIAABCDEFGHIJKLMNOP",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
]


@pytest.mark.parametrize("key", KEYS)
def test_secret_shaped_values_are_redacted_anywhere_in_data(key: str) -> None:
    data = {
        "args": {"note": f"use {key} please", "list": [key]},
        "password": "hunter2",
        "api_key": "anything",
    }
    cleaned = redact(data)
    assert key not in repr(cleaned)
    assert cleaned["password"] == cleaned["api_key"] == REDACTED
    assert cleaned["args"]["note"] == f"use {REDACTED} please"


def test_log_records_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("beamweaver_core.test_redaction")
    logger.addFilter(RedactingLogFilter())
    try:
        with caplog.at_level(logging.INFO, logger="beamweaver_core.test_redaction"):
            logger.info("tool called with %s", {"token": "x", "body": f"Bearer {KEYS[0]}"})
    finally:
        logger.filters.clear()
    assert KEYS[0] not in caplog.text
    assert REDACTED in caplog.text


def test_error_reports_redact_secret_values_in_frames(settings: object) -> None:
    request = RequestFactory().post("/reviews/decide", {"edited": KEYS[1]})

    def tool(api_token: str, note: str) -> None:
        raise RuntimeError("backend said no")

    try:
        tool("-".join(["plain", "but", "named", "token"]), f"contains {KEYS[1]}")
    except RuntimeError:
        import sys

        reporter = ExceptionReporter(request, *sys.exc_info())
        html = reporter.get_traceback_html()
    assert KEYS[1] not in html
    assert "plain-but-named-token" not in html
