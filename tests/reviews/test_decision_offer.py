"""The item page offers only the decisions its viewer may make (and says why the others
are missing); the decision service still refuses the rest."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import Group, User

from reviews import batch
from reviews.http_statuses import http_status
from tests.reviews.conftest import (
    approve_as,
    client_for,
    form_post,
    make_manager,
    make_reviewer,
    pause,
    use_policies,
)

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


def choices(page: str) -> list[str]:
    return re.findall(r'<input type="radio" name="d0-type" value="(\w+)"', page)


def test_the_user_who_started_the_run_is_offered_only_reject_and_respond(
    alice: User, bob: User
) -> None:
    item = pause(user=alice)

    own = client_for(alice).get(f"/items/{item.pk}/").content.decode()
    other = client_for(bob).get(f"/items/{item.pk}/").content.decode()

    assert choices(own) == ["reject", "respond"]
    assert 'id="decision-limits"' in own
    assert (
        "You started this run, so another reviewer must approve it; you can still reject "
        "or respond instead."
    ) in own
    assert 'class="edit-panel"' not in own and "<kbd>a</kbd>" not in own
    assert "Waiting for another reviewer to decide." in own
    assert 'id="decision-submit"' in own
    assert choices(other) == ["approve", "edit", "reject", "respond"]
    assert 'id="decision-limits"' not in other and "Waiting for your decision." in other


def test_the_server_still_refuses_a_self_approval_and_redraws_the_offered_choices(
    alice: User,
) -> None:
    item = pause(user=alice)

    response = client_for(alice).post(
        f"/items/{item.pk}/decide/", form_post(item, **{"d0-type": "approve"}), **HTMX
    )

    assert response.status_code == 403
    assert response["X-BeamWeaver-Refusal"] == "self_approval"
    assert choices(response.content.decode()) == ["reject", "respond"]


def test_the_requester_may_not_preview_an_edit(alice: User, bob: User) -> None:
    item = pause(user=alice)

    edit = {"d0-arg0": "x", "d0-arg2": "Weekly report", "d0-arg3": "ops@example.com"}

    own = client_for(alice).post(f"/items/{item.pk}/actions/0/preview/", edit, **HTMX)
    other = client_for(bob).post(f"/items/{item.pk}/actions/0/preview/", edit, **HTMX)

    assert own.status_code == 403 and own["X-BeamWeaver-Refusal"] == "self_approval"
    assert other.status_code == 200


def test_a_breakpoint_started_by_the_viewer_offers_no_continue(alice: User, bob: User) -> None:
    item = pause("checkpointed", user=alice)

    own = client_for(alice).get(f"/items/{item.pk}/").content.decode()
    other = client_for(bob).get(f"/items/{item.pk}/").content.decode()

    assert ">Continue</button>" not in own
    assert "another reviewer must continue it" in own
    assert ">Continue</button>" in other and "another reviewer" not in other


def test_a_tool_that_only_allows_approve_or_reject_leaves_its_requester_reject(
    alice: User,
) -> None:
    item = pause(input={"calls": [{"name": "notify", "args": {}}]}, user=alice)

    page = client_for(alice).get(f"/items/{item.pk}/").content.decode()

    assert choices(page) == ["reject"]
    assert "another reviewer must approve it; you can still reject." in page


def test_an_item_needing_two_approvals_never_offers_an_edit_and_not_a_second_approve(
    settings: Any,
) -> None:
    use_policies(settings, {"name": "two", "approvals": 2})
    ann, ben = make_reviewer("ann"), make_reviewer("ben")
    item = pause()

    page = client_for(ann).get(f"/items/{item.pk}/").content.decode()
    assert choices(page) == ["approve", "reject", "respond"]
    assert "This item needs 2 approvals from different reviewers, so it cannot be edited" in page

    voted = approve_as(ann, item)
    assert http_status(voted) == 202
    again = client_for(ann).get(f"/items/{item.pk}/").content.decode()
    assert choices(again) == ["reject", "respond"]
    assert "You approved this item; it needs 1 more approval(s) from other reviewers" in again
    assert "Waiting for approvals from other reviewers." in again
    assert choices(client_for(ben).get(f"/items/{item.pk}/").content.decode()) == [
        "approve",
        "reject",
        "respond",
    ]


def test_a_manager_who_is_not_a_decider_is_offered_no_decision(settings: Any) -> None:
    use_policies(settings, {"name": "finance", "groups": ["finance"]})
    Group.objects.get_or_create(name="finance")
    manager = make_manager("manager")
    item = pause()

    page = client_for(manager).get(f"/items/{item.pk}/").content.decode()

    assert choices(page) == []
    assert 'id="decision-submit"' not in page
    assert "does not let you decide it" in page
    assert "Waiting for one of its reviewers to decide." in page


def test_the_polled_status_says_who_the_item_waits_for(alice: User, bob: User) -> None:
    """The `#item-status` partial the page polls (and the websocket pushes) is per user."""
    item = pause(user=alice)

    def status(user: User) -> str:
        return (
            client_for(user)
            .get(
                f"/items/{item.pk}/", {"digest": item.digest}, HTTP_HX_TARGET="item-status", **HTMX
            )
            .content.decode()
        )

    assert "Waiting for another reviewer to decide." in status(alice)
    assert "Waiting for your decision." in status(bob)


def test_a_batch_approve_reports_the_requesters_own_items_one_by_one(
    alice: User, bob: User
) -> None:
    own = pause(user=alice)
    other = pause(user=bob)

    report = batch.decide_many(
        alice, [(own.pk, own.digest), (other.pk, other.digest)], "approve", batch_id="b1"
    )

    lines = {line.item_id: line for line in report.lines}
    assert (http_status(lines[own.pk].outcome), lines[own.pk].code) == (403, "self_approval")
    assert lines[own.pk].message.startswith("You started this run")
    assert lines[other.pk].applied
    assert report.summary.startswith("1 applied, 1 refused because: You started this run")
