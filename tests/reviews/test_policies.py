"""Review policies: settings give defaults, admin rows override them, the most specific
applies, each has a version, and a new item keeps a copy of the policy it was created
under (deciders, approvals, deadline)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.core.exceptions import ValidationError

from reviews import policies
from reviews.models import AuditEvent, ReviewPolicy
from tests.reviews.conftest import client_for, make_reviewer, pause, use_policies

pytestmark = pytest.mark.django_db

REFUND = {"calls": [{"name": "issue_refund", "args": {"order_id": "7", "amount": 500.0}}]}


def test_without_policies_every_reviewer_decides_once_and_nothing_expires() -> None:
    item = pause()

    assert item.policy_version == "default"
    assert (item.required_approvals, item.reviewer_group_ids, item.responder_ids) == (1, [], [])
    assert (item.due_at, item.remind_at, item.assignee) == (None, None, None)


def test_a_settings_policy_is_copied_onto_the_new_item(settings: Any, alice: User) -> None:
    use_policies(
        settings,
        {
            "name": "refunds",
            "tool": "issue_refund",
            "groups": ["finance"],
            "responders": ["alice"],
            "assignee": "alice",
            "approvals": 2,
            "deadline_seconds": 3600,
            "remind_before_seconds": 600,
            "escalate_to": "finance-leads",
            "on_expiry": "reject",
            "expiry_message": "Refund not approved in time.",
        },
    )

    item = pause(input=REFUND)

    finance, leads = Group.objects.get(name="finance"), Group.objects.get(name="finance-leads")
    assert item.policy_version.startswith("settings:refunds@")
    assert item.reviewer_group_ids == [finance.pk]
    assert item.responder_ids == [alice.pk]
    assert (item.assignee, item.escalation_group, item.required_approvals) == (alice, leads, 2)
    assert item.due_at == item.created_at + timedelta(hours=1)
    assert item.remind_at == item.due_at - timedelta(minutes=10)
    assert item.policy["on_expiry"] == "reject"
    assert item.policy["expiry_message"] == "Refund not approved in time."
    created = AuditEvent.objects.get(action="created")
    assert created.message == f"Review policy: {item.policy_version}."


def test_the_most_specific_policy_applies(settings: Any) -> None:
    use_policies(
        settings,
        {"name": "any", "approvals": 1},
        {"name": "graph", "graph": "tool_review", "approvals": 2},
        {"name": "tool", "tool": "issue_refund", "approvals": 3},
        {"name": "both", "graph": "tool_review", "tool": "issue_refund", "approvals": 4},
    )

    assert policies.resolve("tool_review", ["issue_refund"]).name == "both"
    assert policies.resolve("other", ["issue_refund"]).name == "tool"
    assert policies.resolve("tool_review", ["send_email"]).name == "graph"
    assert policies.resolve("other", []).name == "any"


def test_an_admin_row_overrides_the_settings_policy_of_the_same_scope(settings: Any) -> None:
    use_policies(settings, {"name": "refunds", "tool": "issue_refund", "approvals": 2})
    row = ReviewPolicy.objects.create(name="refunds-db", tool="issue_refund", required_approvals=3)

    chosen = policies.resolve("tool_review", ["issue_refund"])

    assert (chosen.name, chosen.source, chosen.approvals) == ("refunds-db", "admin", 3)
    assert chosen.version == f"admin:refunds-db@v{row.version}"
    row.enabled = False
    row.save()
    assert policies.resolve("tool_review", ["issue_refund"]).name == "refunds"


def test_a_batched_review_takes_the_strictest_of_its_tools_policies(settings: Any) -> None:
    use_policies(
        settings,
        {"name": "email", "tool": "send_email", "approvals": 1, "deadline_seconds": 60},
        {"name": "refund", "tool": "issue_refund", "approvals": 2},
    )

    assert policies.resolve("g", ["send_email", "issue_refund"]).name == "refund"


def test_an_admin_policy_version_changes_with_its_content() -> None:
    row = ReviewPolicy.objects.create(name="p", tool="send_email")
    assert row.version == 1

    row.save()
    assert row.version == 1
    row.required_approvals = 2
    row.save()
    assert row.version == 2
    row.reviewer_groups.add(Group.objects.create(name="ops"))
    row.refresh_from_db()
    assert row.version == 3


def test_an_admin_policy_is_validated() -> None:
    row = ReviewPolicy(
        name="bad",
        remind_before=timedelta(hours=2),
        deadline=timedelta(hours=1),
        on_expiry="reject",
    )

    with pytest.raises(ValidationError) as caught:
        row.clean()

    assert set(caught.value.message_dict) == {"remind_before"}
    with pytest.raises(ValidationError) as caught:
        ReviewPolicy(name="x", on_expiry="reject").clean()
    assert set(caught.value.message_dict) == {"on_expiry"}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"tool": "x"}, "'name' is required"),
        ({"name": "p", "approvals": 0}, "'approvals' must be between 1 and 10"),
        ({"name": "p", "groups": "finance"}, "'groups' must be a list of names"),
        ({"name": "p", "on_expiry": "approve"}, "'on_expiry' must be one of"),
        ({"name": "p", "on_expiry": "reject"}, "need 'deadline_seconds'"),
        ({"name": "p", "deadline_seconds": 60, "remind_before_seconds": 90}, "needs a longer"),
        ({"name": "p", "owner": "x"}, "unknown key(s) ['owner']"),
    ],
)
def test_a_malformed_settings_policy_says_what_is_wrong(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        policies.parse_settings_policy(raw)
    assert message in str(caught.value)


def test_a_policy_whose_responders_are_unknown_fails_closed(settings: Any) -> None:
    use_policies(settings, {"name": "p", "responders": ["nobody"]})
    carol = make_reviewer("carol")

    item = pause()

    assert item.responder_ids == [0]
    response = client_for(carol).get(f"/items/{item.pk}/")
    assert response.status_code == 404


def test_a_group_restricted_item_is_invisible_to_other_reviewers(settings: Any) -> None:
    use_policies(settings, {"name": "p", "groups": ["finance"]})
    insider, outsider = make_reviewer("insider"), make_reviewer("outsider")
    insider.groups.add(Group.objects.get_or_create(name="finance")[0])

    item = pause()

    assert client_for(insider).get(f"/items/{item.pk}/").status_code == 200
    assert client_for(outsider).get(f"/items/{item.pk}/").status_code == 404
    assert f"item-row-{item.pk}" not in client_for(outsider).get("/").content.decode()


def test_a_restricted_items_thread_and_audit_are_hidden_from_other_reviewers(
    settings: Any,
) -> None:
    use_policies(settings, {"name": "p", "groups": ["finance"]})
    outsider = make_reviewer("outsider")
    insider = make_reviewer("insider")
    item = pause()
    insider.groups.add(Group.objects.get(name="finance"))

    assert client_for(outsider).get(f"/threads/{item.thread_id}/").status_code == 404
    assert client_for(insider).get(f"/threads/{item.thread_id}/").status_code == 200
    outsider_audit = client_for(outsider).get("/audit/").content.decode()
    insider_audit = client_for(insider).get("/audit/").content.decode()
    assert f"item #{item.pk}" not in outsider_audit
    assert f"item #{item.pk}" in insider_audit
