"""Deadlines: a reminder before, escalation and the default outcome at the deadline,
`expired` as its own terminal state, extensions, and a sweeper that is idempotent and keeps
its state in Postgres."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command

from beamweaver_core.models import Run
from beamweaver_core.runtime.signals import worker_tick
from reviews import deadlines, sweeper
from reviews.http_statuses import http_status
from reviews.models import AuditEvent, Decision, OutboxMessage, ReviewItem
from tests.reviews.conftest import (
    approve_as,
    client_for,
    make_manager,
    make_reviewer,
    pause,
    run_next,
    use_policies,
)

pytestmark = pytest.mark.django_db

HOUR = 3600


def approve(item: ReviewItem, user: User) -> Any:
    return approve_as(user, item)


def test_a_reminder_goes_out_once_before_the_deadline(settings: Any, alice: User) -> None:
    use_policies(
        settings,
        {"name": "p", "assignee": "alice", "deadline_seconds": HOUR, "remind_before_seconds": 600},
    )
    alice.email = "alice@example.com"
    alice.save()
    item = pause()

    early = deadlines.sweep(item.created_at + timedelta(minutes=49))
    due = deadlines.sweep(item.created_at + timedelta(minutes=51))
    again = deadlines.sweep(item.created_at + timedelta(minutes=52))

    assert (early.reminded, due.reminded, again.reminded) == (0, 1, 0)
    item.refresh_from_db()
    assert item.reminded_at is not None and item.is_pending
    assert AuditEvent.objects.get(action="reminded").message.startswith("Reminder sent: due ")
    reminder = OutboxMessage.objects.get(event="review.reminder", channel="email")
    assert reminder.target == "alice@example.com"


def test_at_the_deadline_the_escalation_group_may_decide_too(settings: Any, bob: User) -> None:
    use_policies(
        settings,
        {"name": "p", "groups": ["ops"], "deadline_seconds": HOUR, "escalate_to": "leads"},
    )
    lead = make_reviewer("lead")
    ops = make_reviewer("ops-member")
    item = pause()
    lead.groups.add(Group.objects.get(name="leads"))
    ops.groups.add(Group.objects.get(name="ops"))
    item.claimed_by = ops
    item.save()
    assert client_for(lead).get(f"/items/{item.pk}/").status_code == 404

    report = deadlines.sweep(item.due_at + timedelta(seconds=1))

    assert report.escalated == 1
    item.refresh_from_db()
    assert item.escalated_at is not None and item.claimed_by is None
    assert item.due_at == item.escalated_at + timedelta(hours=1)
    assert client_for(lead).get(f"/items/{item.pk}/").status_code == 200
    assert AuditEvent.objects.get(action="escalated").message.startswith(
        "Nobody decided in time: escalated to leads, new deadline "
    )
    assert deadlines.sweep(item.escalated_at + timedelta(seconds=2)).escalated == 0
    assert http_status(approve(item, User.objects.get(pk=lead.pk))) == 200


def test_an_expired_item_is_rejected_as_an_expiry_not_a_decision(settings: Any) -> None:
    use_policies(
        settings,
        {
            "name": "p",
            "deadline_seconds": HOUR,
            "on_expiry": "reject",
            "expiry_message": "Email not approved in time.",
        },
    )
    item = pause()
    when = item.due_at + timedelta(seconds=5)

    report = deadlines.sweep(when)

    assert report.expired == 1
    item.refresh_from_db()
    assert (item.status, item.expired_at) == ("expired", when)
    assert item.status_reason == "expired without a decision: Email not approved in time."
    assert not Decision.objects.exists()
    expected = (
        f"This review expired at {when:%Y-%m-%d %H:%M:%S} UTC without a human decision: "
        "Email not approved in time."
    )
    resume = Run.objects.get(kind="resume")
    assert resume.input == {
        item.interrupt_id: {"decisions": [{"type": "reject", "message": expected}]}
    }
    audit = AuditEvent.objects.get(action="expired")
    assert (audit.actor, audit.source) == (None, "sweeper")
    assert audit.decision == resume.input[item.interrupt_id]
    assert run_next().status == "succeeded"
    assert deadlines.sweep(when + timedelta(hours=1)).expired == 0


def test_a_decision_after_expiry_is_refused_as_gone(settings: Any, alice: User) -> None:
    use_policies(settings, {"name": "p", "deadline_seconds": HOUR, "on_expiry": "reject"})
    item = pause()
    deadlines.sweep(item.due_at + timedelta(seconds=1))

    outcome = approve(item, alice)

    assert (http_status(outcome), outcome.code) == (410, "gone")
    assert "expired" in outcome.message


def test_a_decided_item_is_never_expired(settings: Any, alice: User) -> None:
    use_policies(settings, {"name": "p", "deadline_seconds": HOUR, "on_expiry": "reject"})
    item = pause()
    approve(item, alice)

    report = deadlines.sweep(item.due_at + timedelta(seconds=1))

    assert report.expired == 0
    item.refresh_from_db()
    assert item.status == "decided"


def test_a_breakpoint_that_expires_cancels_its_run(settings: Any) -> None:
    """A breakpoint can only be continued, which would be an approval: fail closed."""
    use_policies(settings, {"name": "p", "deadline_seconds": 60, "on_expiry": "reject"})
    item = pause("checkpointed")

    deadlines.sweep(item.due_at + timedelta(seconds=1))

    item.refresh_from_db()
    assert item.status == "expired"
    assert Run.objects.get(pk=item.run_id).status == "cancelled"
    assert "the run was cancelled" in AuditEvent.objects.get(action="expired").message


def test_keep_waiting_marks_the_item_overdue_once(settings: Any) -> None:
    use_policies(settings, {"name": "p", "deadline_seconds": 60})
    item = pause()

    first = deadlines.sweep(item.due_at + timedelta(seconds=1))
    second = deadlines.sweep(item.due_at + timedelta(seconds=2))

    assert (first.overdue, second.overdue) == (1, 0)
    item.refresh_from_db()
    assert item.is_pending and item.overdue_at is not None


def test_escalation_then_expiry(settings: Any) -> None:
    use_policies(
        settings,
        {"name": "p", "deadline_seconds": 60, "escalate_to": "leads", "on_expiry": "reject"},
    )
    item = pause()

    deadlines.sweep(item.due_at + timedelta(seconds=1))
    item.refresh_from_db()
    report = deadlines.sweep(item.due_at + timedelta(seconds=1))

    assert report.expired == 1
    assert list(
        AuditEvent.objects.filter(item=item).order_by("at").values_list("action", flat=True)
    ) == ["created", "escalated", "expired"]


def test_a_manager_extends_a_deadline_and_the_item_waits_again(settings: Any) -> None:
    use_policies(
        settings,
        {"name": "p", "deadline_seconds": 60, "remind_before_seconds": 30, "on_expiry": "reject"},
    )
    manager, reviewer = make_manager("manager"), make_reviewer("reviewer")
    item = pause()
    deadlines.sweep(item.created_at + timedelta(seconds=45))

    outcome = deadlines.extend(item.pk, manager, timedelta(hours=2))

    assert http_status(outcome) == 200 and outcome.message.startswith("Deadline extended from ")
    item.refresh_from_db()
    assert item.due_at > item.created_at + timedelta(hours=1, minutes=59)
    assert item.reminded_at is None and item.overdue_at is None
    assert AuditEvent.objects.get(action="extended").actor == manager
    assert deadlines.sweep(item.created_at + timedelta(minutes=2)).expired == 0
    assert http_status(deadlines.extend(item.pk, reviewer, timedelta(hours=1))) == 403
    assert http_status(deadlines.extend(item.pk, manager, timedelta(days=31))) == 422


def test_the_sweep_command_reports_as_json(settings: Any) -> None:
    use_policies(settings, {"name": "p", "deadline_seconds": 0.001})
    pause()
    out = StringIO()

    call_command("review_sweep", "--json", stdout=out)

    done = json.loads(out.getvalue())
    assert done["deadlines"] == {"reminded": 0, "escalated": 0, "expired": 0, "overdue": 1}
    assert set(done["notifications"]) == {"sent", "retrying", "dead"}


def test_worker_ticks_start_at_most_one_sweep_per_interval(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.BEAMWEAVER = {**settings.BEAMWEAVER, "REVIEW_SWEEP_SECONDS": 3600}
    calls: list[int] = []

    def sweep_once(now: Any = None) -> dict[str, Any]:
        calls.append(1)
        return {"deadlines": {}, "notifications": {}}

    monkeypatch.setattr(sweeper, "sweep_once", sweep_once)
    monkeypatch.setattr(sweeper, "_last", float("-inf"))

    worker_tick.send(sender=None, worker="w1")
    sweeper._running.join(5)  # type: ignore[union-attr]
    worker_tick.send(sender=None, worker="w2")

    assert calls == [1]
