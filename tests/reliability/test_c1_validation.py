"""Decisions refused at the door (reliability.md cases 9 to 11): wrong counts, types a tool
does not allow, edits that rename the tool or break its schema. Every refusal is a 422
returned before anything is accepted: the item stays pending, the audit records the
attempt, no resume is queued and no tool runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from beamweaver_core.models import Run
from reviews.http_statuses import http_status
from reviews.models import AuditEvent, ReviewItem
from reviews.services import DecisionOutcome, decide
from tests.reliability.support import (
    EMAIL,
    SEND_EMAIL,
    audit_view,
    dispatch_view,
    executed,
    pause_agent,
    request,
    run_queued,
)
from tests.reviews.conftest import make_reviewer

REFUND = {"name": "issue_refund", "args": {"order_id": "A-17", "amount": 40}}
NOTIFY = {"name": "notify", "args": {"text": "Deploy finished."}}
THREE = [SEND_EMAIL, REFUND, NOTIFY]
JUNK_TYPES = ["execute", "APPROVE", "approve ", "", None, 1, True, [], ["approve"], {"x": 1}]


def edit(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "edit", "edited_action": {"name": name, "args": args}}


def attempt(item: ReviewItem, user: User, decisions: Any) -> DecisionOutcome:
    """Decide inside a savepoint that is rolled back: the item stays as it was."""
    with transaction.atomic():
        outcome = decide(request(item, user, {"decisions": decisions}))
        transaction.set_rollback(True)
    return outcome


@pytest.mark.django_db(transaction=True)
def test_a_wrong_number_or_order_of_decisions_is_refused_until_a_valid_set_arrives(
    effects_log: Path,
) -> None:
    """Case 9: three actions; two or four decisions, or decisions reordered (an edit of
    the refund at the email's index), are 422 and leave the item pending; decisions are
    matched to actions by index, and the valid set then runs exactly what it says."""
    alice = make_reviewer("alice")
    item = pause_agent(THREE, thread_id="three")
    refund_edit = edit("issue_refund", {"order_id": "A-17", "amount": 30})

    refusals = [
        decide(request(item, alice, {"decisions": [{"type": "approve"}] * 2})),
        decide(request(item, alice, {"decisions": [{"type": "approve"}] * 4})),
        decide(
            request(
                item, alice, {"decisions": [refund_edit, {"type": "approve"}, {"type": "reject"}]}
            )
        ),
    ]
    valid = decide(
        request(item, alice, {"decisions": [{"type": "approve"}, refund_edit, {"type": "reject"}]})
    )
    run_queued()

    assert [http_status(o) for o in refusals] == [422, 422, 422]
    assert "Expected 3 decision(s)" in refusals[0].problems[0]["message"]
    assert "Expected 3 decision(s)" in refusals[1].problems[0]["message"]
    assert {(p["index"], p["field"]) for p in refusals[2].problems} >= {(0, "edited_action.name")}
    assert http_status(valid) == 200
    assert [(a, code) for a, _, code, _ in audit_view(item)] == [
        ("refused", "invalid"),
        ("refused", "invalid"),
        ("refused", "invalid"),
        ("decided", "accepted"),
    ]
    assert sorted(executed(effects_log, "three"), key=str) == [
        ("issue_refund", {"order_id": "A-17", "amount": 30}),
        ("send_email", EMAIL),
    ]


@pytest.mark.django_db
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kind=st.one_of(
        st.sampled_from(["approve", "edit", "reject", "respond", *JUNK_TYPES]), st.text(max_size=8)
    )
)
def test_only_the_decision_types_a_tool_allows_are_accepted(kind: Any) -> None:
    """Case 10: `notify` allows approve and reject only. Any other type (edit, respond,
    unknown words, wrong case, null, lists, objects) is 422 and nothing is accepted."""
    alice = User.objects.filter(username="alice").first() or make_reviewer("alice")
    item = ReviewItem.objects.filter(thread_id="notify-only").first() or pause_agent(
        [NOTIFY], thread_id="notify-only"
    )
    decision: dict[str, Any] = {"type": kind}
    if kind == "edit":
        decision["edited_action"] = NOTIFY
    if kind == "respond":
        decision["message"] = "No."

    outcome = attempt(item, alice, [decision])

    assert http_status(outcome) == (200 if kind in ("approve", "reject") else 422), outcome.problems
    item.refresh_from_db()
    assert item.status == "pending"
    assert not Run.objects.filter(thread_id="notify-only", kind="resume").exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("decision", "field"),
    [
        (edit("remove_file", {"path": "/etc/passwd"}), "edited_action.name"),
        (edit("fetch_file", {"path": "/etc/passwd"}), "edited_action.name"),
        (edit("send_email", {**EMAIL, "bcc": "leak@evil.example"}), "edited_action.args"),
        (edit("send_email", {"to": "ops@example.com"}), "edited_action.args"),
        ({"type": "edit"}, "edited_action"),
    ],
    ids=[
        "renamed-to-reviewed-tool",
        "renamed-to-unreviewed-tool",
        "extra-argument",
        "missing",
        "no-action",
    ],
)
def test_an_edit_that_escalates_is_refused_and_audited(
    decision: dict[str, Any], field: str, effects_log: Path
) -> None:
    """Case 11: an edit renaming `send_email` to another tool (reviewed or not), adding an
    argument the schema does not allow, or dropping required ones: 422, the attempt with
    its body is in the audit log, nothing resumes or runs."""
    alice = make_reviewer("alice")
    item = pause_agent(thread_id="escalate")

    outcome = decide(request(item, alice, {"decisions": [decision]}))
    run_queued()

    assert http_status(outcome) == 422
    assert any(p["field"].startswith(field) for p in outcome.problems), outcome.problems
    refused = AuditEvent.objects.get(item=item, action="refused")
    assert (refused.outcome, refused.decision) == ("invalid", {"decisions": [decision]})
    assert ReviewItem.objects.get(pk=item.pk).status == "pending"
    assert dispatch_view("escalate") == []
    assert executed(effects_log) == []
