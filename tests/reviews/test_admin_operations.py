"""The admin side of review operations: policies edited with a version, API tokens created
(shown once) and revoked, notifications sent again."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from reviews import policies
from reviews.models import ApiToken, OutboxMessage, ReviewPolicy
from tests.reviews.conftest import make_reviewer

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff() -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw-root-1234"))
    return client


@pytest.mark.parametrize(
    "model", ["reviewpolicy", "apitoken", "outboxmessage", "approval", "notificationpreference"]
)
def test_every_review_operations_list_page_loads(staff: Client, model: str) -> None:
    assert staff.get(f"/admin/reviews/{model}/").status_code == 200


def test_a_policy_added_in_the_admin_has_a_version_that_follows_its_changes(
    staff: Client,
) -> None:
    finance = Group.objects.create(name="finance")
    form = {
        "name": "refunds",
        "enabled": "on",
        "graph": "",
        "tool": "issue_refund",
        "reviewer_groups": [finance.pk],
        "required_approvals": "2",
        "deadline": "04:00:00",
        "remind_before": "00:30:00",
        "on_expiry": "reject",
        "expiry_message": "Not approved in time.",
    }

    added = staff.post("/admin/reviews/reviewpolicy/add/", form)

    assert added.status_code == 302
    policy = ReviewPolicy.objects.get(name="refunds")
    first = policy.version
    staff.post(
        f"/admin/reviews/reviewpolicy/{policy.pk}/change/", {**form, "required_approvals": "3"}
    )
    policy.refresh_from_db()
    assert policy.required_approvals == 3 and policy.version > first


def test_policies_deleted_in_bulk_in_the_admin_no_longer_apply(staff: Client) -> None:
    refunds = ReviewPolicy.objects.create(name="refunds", tool="issue_refund")
    assert policies.resolve("g", ["issue_refund"]).name == "refunds"

    deleted = staff.post(
        "/admin/reviews/reviewpolicy/",
        {"action": "delete_selected", "_selected_action": [refunds.pk], "post": "yes"},
    )

    assert deleted.status_code == 302 and not ReviewPolicy.objects.exists()
    assert policies.resolve("g", ["issue_refund"]) == policies.DEFAULT_POLICY


def test_an_invalid_policy_is_refused_with_the_field_error(staff: Client) -> None:
    response = staff.post(
        "/admin/reviews/reviewpolicy/add/",
        {"name": "bad", "required_approvals": "1", "on_expiry": "reject"},
    )

    assert response.status_code == 200
    assert "Rejecting on expiry needs a deadline." in response.content.decode()


def test_a_token_is_shown_once_when_created_and_stored_hashed(staff: Client) -> None:
    service = make_reviewer("svc")  # a token acts as its user, who must be a reviewer

    response = staff.post(
        "/admin/reviews/apitoken/add/", {"name": "ci", "user": service.pk}, follow=True
    )

    shown = re.search(r"(bw_[0-9a-f]{8}_[A-Za-z0-9_-]+)", response.content.decode())
    assert shown is not None
    token = ApiToken.objects.get()
    assert token.hashed != shown[1] and shown[1] not in token.hashed
    assert ApiToken.objects.authenticate(shown[1]) == token


def test_revoking_a_token_in_the_admin(staff: Client) -> None:
    token, raw = ApiToken.objects.issue(User.objects.create_user("svc"), "ci")

    staff.post(
        "/admin/reviews/apitoken/",
        {"action": "revoke", "_selected_action": [token.pk]},
    )

    assert ApiToken.objects.authenticate(raw) is None


def test_a_dead_notification_can_be_sent_again(staff: Client) -> None:
    message = OutboxMessage.objects.create(
        channel="webhook",
        target="ops",
        event="review.created",
        payload={},
        status="dead",
        attempts=8,
    )

    staff.post(
        "/admin/reviews/outboxmessage/",
        {"action": "send_again", "_selected_action": [message.pk]},
    )

    message.refresh_from_db()
    assert (message.status, message.attempts) == ("pending", 0)
