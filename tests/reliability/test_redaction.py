"""Secrets in tool arguments and model output never reach logs or error reports
(reliability.md case 43)."""

from __future__ import annotations

import logging

import pytest
from django.contrib.auth.models import User
from django.test import RequestFactory
from django.views.debug import ExceptionReporter

from beamweaver_core.redaction import REDACTED, RedactingLogFilter, redact, redact_text, withheld
from tests.reliability.support import pause_agent
from tests.reviews.test_api import api_for

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


# A run of base64 characters full of `eyJ` (how a JWT starts) but with no dot: a
# backtracking engine rescanned the run from every `eyJ`, in quadratic time. No time is
# asserted (CI never times): the runs are long enough that Python's `re` took hours
# (6 s at 90 KB, growing with the square: 1.2 MB here), so before RE2 these tests met the suite's
# per-test timeout; on RE2 they take milliseconds.
BASE64_RUN = "eyJ" * 400_000


def test_redaction_is_linear_in_the_text_it_is_given() -> None:
    assert redact({"body": BASE64_RUN}) == {"body": BASE64_RUN}
    assert withheld({"body": BASE64_RUN}) == []


def test_text_no_codec_accepts_is_still_redacted() -> None:
    text = f"a\ud800 {KEYS[0]} \x00b é"
    assert redact_text(text) == f"a\ud800 {REDACTED} \x00b é"
    assert withheld({"note": text}) == ["note"]


@pytest.mark.django_db
def test_a_model_written_argument_cannot_keep_an_api_request_busy(alice: User) -> None:
    # 120 KB of it took this request 50 s of CPU before the redaction ran on RE2.
    email = {"to": "ops@example.com", "subject": "Report", "body": BASE64_RUN}
    item = pause_agent([{"name": "send_email", "args": email}])

    response = api_for(alice).get(f"/api/v1/items/{item.pk}/")

    assert response.status_code == 200
    assert response.json()["payload"]["action_requests"][0]["args"]["body"] == email["body"]


@pytest.mark.parametrize("space", [" ", "\t", "\u00a0", "\u2003", "\u202f", "\u3000"])
def test_a_bearer_token_after_any_white_space_is_redacted(space: str) -> None:
    # RE2's `\s` is ASCII only; the pattern spells out what Python calls white space.
    text = f"auth: Bearer{space}abcdefghijklmnopqrstu end"
    assert redact_text(text) == f"auth: {REDACTED} end"


def test_what_json_cannot_hold_is_shown_by_its_repr_redacted_unless_revealed() -> None:
    from beamweaver_core.redaction import pretty_json

    class Holder:
        def __repr__(self) -> str:
            return "Holder(token='sk-proj-abcdefghijklmnopqrstuvwxyz0123')"

    shown = pretty_json({"held": Holder()})
    assert "sk-proj-abcdefghijklmnopqrstuvwxyz0123" not in shown
    assert "Holder(token=" in shown and REDACTED in shown
    assert "sk-proj-abcdefghijklmnopqrstuvwxyz0123" in pretty_json({"held": Holder()}, reveal=True)
