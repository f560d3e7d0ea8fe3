"""Commands and system checks of review operations: `resume --note/--reason`, `pending
--json` with routing fields, and the `beamweaver.E02x` checks of the review settings."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from reviews import checks
from reviews.models import Decision
from tests.reviews.conftest import pause, use_policies

pytestmark = pytest.mark.django_db


def test_resume_keeps_a_note_and_a_preset_reason(alice: User) -> None:
    item = pause()

    call_command(
        "resume",
        item.thread_id,
        "--decisions",
        '[{"type": "reject"}]',
        "--user",
        "alice",
        "--note",
        "Spam.",
        "--reason",
        "policy",
        stdout=StringIO(),
    )

    decision = Decision.objects.get()
    assert (decision.note, decision.reason_code, decision.source) == ("Spam.", "policy", "command")


def test_resume_reports_one_approval_of_several(settings: Any, alice: User) -> None:
    use_policies(settings, {"name": "two", "approvals": 2})
    item = pause()
    out = StringIO()

    call_command(
        "resume",
        item.thread_id,
        "--decisions",
        '[{"type": "approve"}]',
        "--user",
        "alice",
        stdout=out,
    )

    assert out.getvalue().startswith("Approval recorded (1 of 2: alice)")


def test_pending_json_shows_the_routing(settings: Any, alice: User) -> None:
    use_policies(settings, {"name": "p", "assignee": "alice", "deadline_seconds": 60})
    item = pause()
    out = StringIO()

    call_command("pending", "--json", stdout=out)

    [listed] = json.loads(out.getvalue())
    assert listed["assignee"] == "alice"
    assert listed["due_at"] == item.due_at.isoformat()  # type: ignore[union-attr]
    assert listed["policy_version"].startswith("settings:p@")


@pytest.mark.parametrize(
    ("setting", "value", "check", "error_id"),
    [
        ("REVIEW_POLICIES", [{"name": "p", "approvals": 0}], checks.check_review_policies, "E021"),
        (
            "REVIEW_POLICIES",
            [{"name": "a", "tool": "t"}, {"name": "b", "tool": "t"}],
            checks.check_review_policies,
            "E022",
        ),
        ("REVIEW_REJECTION_REASONS", [{"code": "x"}], checks.check_rejection_reasons, "E023"),
        (
            "REVIEW_WEBHOOKS",
            [{"name": "h", "url": "https://example.com/hook", "secret": "short"}],
            checks.check_webhooks,
            "E024",
        ),
        (
            "REVIEW_NOTIFICATION_CHANNELS",
            {"sms": "nowhere.SmsChannel"},
            checks.check_notification_channels,
            "E025",
        ),
    ],
)
def test_a_misconfigured_review_setting_is_a_system_check_error(
    settings: Any, setting: str, value: Any, check: Any, error_id: str
) -> None:
    settings.BEAMWEAVER = {**settings.BEAMWEAVER, setting: value}

    found = check(None)

    assert [e.id for e in found] == [f"beamweaver.{error_id}"]


def test_the_default_review_settings_pass_the_checks() -> None:
    for check in (
        checks.check_review_policies,
        checks.check_rejection_reasons,
        checks.check_webhooks,
        checks.check_notification_channels,
    ):
        assert check(None) == []
