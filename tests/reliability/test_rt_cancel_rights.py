"""Who may cancel a run (issue 13, finding 14; reliability.md, hostile corpus: cancel
rights). `cancel_run_view` checked only that the user could see the thread: a manager who
could not decide an item cancelled its run, and any reviewer cancelled runs others started.

The rule (docs/review-operations.md, "Who may cancel a run"): the run's requester; a
reviewer who may reject every pending item of the run (cancelling rejects nothing they
could not reject); or a holder of `beamweaver_core.cancel_run` (operators, and the only way
in the admin). The user must see the thread first (else 404, as for an unknown one). The
same rule in the thread page, its cancel button, the JSON API and the admin (the admin
half is `test_rt_admin_rights.py::test_cancelling_in_the_admin_needs_the_cancel_run_permission`)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.db import connections, transaction
from django.test import Client

from beamweaver_core.models import Run
from beamweaver_core.runtime import service
from reviews import claims
from reviews.models import ApiToken, ReviewItem
from tests.reviews.conftest import client_for, make_manager, make_reviewer, pause, use_policies
from tests.reviews.test_api import conforms

pytestmark = pytest.mark.django_db

REFUND = {"calls": [{"name": "issue_refund", "args": {"order_id": "A-1", "amount": 900}}]}


@pytest.fixture
def people(settings: Any) -> dict[str, User]:
    """Refunds are decided by finance only; `manny` manages (sees everything) but is not
    in finance; `alice` and `bob` are reviewers."""
    use_policies(settings, {"name": "finance", "tool": "issue_refund", "groups": ["finance"]})
    finance = Group.objects.create(name="finance")
    carol, dave = make_reviewer("carol"), make_reviewer("dave")
    carol.groups.add(finance)
    dave.groups.add(finance)
    return {
        "alice": make_reviewer("alice"),
        "bob": make_reviewer("bob"),
        "carol": carol,
        "dave": dave,
        "manny": make_manager("manny"),
        "mallory": make_reviewer("mallory"),
    }


@pytest.fixture
def olga(people: dict[str, User]) -> User:
    """A manager holding the cancel permission."""
    user = make_manager("olga")
    user.user_permissions.add(Permission.objects.get(codename="cancel_run"))
    return User.objects.get(pk=user.pk)


def _status(item: ReviewItem) -> str:
    return Run.objects.filter(thread_id=item.thread_id).order_by("-created_at")[0].status


def cancel_page(user: User, thread_id: str) -> Any:
    return client_for(user).post(f"/cancel-run/{thread_id}/")


def cancel_api(user: User, thread_id: str) -> Any:
    """POST the API's cancel as `user`; the answer, checked against the OpenAPI document."""
    _, token = ApiToken.objects.issue(user, "cancel")
    response = Client(enforce_csrf_checks=True).post(
        f"/api/v1/threads/{thread_id}/cancel/", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    conforms(response, "/api/v1/threads/{thread_id}/cancel/", "post")
    return response


# ------------------------------------------------------------------------ the thread page


def test_a_manager_who_cannot_decide_the_item_cannot_cancel_its_run(
    people: dict[str, User],
) -> None:
    """The reported attack: manny sees the finance refund (a manager), may not decide it,
    and cancelled its run."""
    refund = pause(input=REFUND)

    response = cancel_page(people["manny"], refund.thread_id)

    assert response.status_code == 403
    assert "may not cancel" in response.content.decode()
    assert _status(refund) == "interrupted"
    assert ReviewItem.objects.get(pk=refund.pk).status == "pending"


def test_a_reviewer_cannot_cancel_a_run_someone_else_started(people: dict[str, User]) -> None:
    """A queued run (no item to decide yet) started by alice: bob may not cancel it."""
    run = service.start_run("tool_review", {}, user=people["alice"])

    response = cancel_page(people["bob"], run.thread_id)

    assert response.status_code == 403
    assert Run.objects.get(id=run.id).status == "queued"


def test_the_requester_may_cancel_their_run(people: dict[str, User]) -> None:
    run = service.start_run("tool_review", {}, user=people["alice"])

    response = cancel_page(people["alice"], run.thread_id)

    assert response.status_code == 302
    assert Run.objects.get(id=run.id).status == "cancelled"


def test_a_decider_of_the_pending_item_may_cancel_the_run(people: dict[str, User]) -> None:
    refund = pause(input=REFUND)

    assert cancel_page(people["carol"], refund.thread_id).status_code == 302
    assert _status(refund) == "cancelled"
    assert ReviewItem.objects.get(pk=refund.pk).status == "cancelled"


def test_a_decider_who_could_not_reject_a_claimed_item_cannot_cancel(
    people: dict[str, User],
) -> None:
    """dave is in finance, but carol claimed the item: his rejection would be refused
    (409 claimed), and so is his cancel."""
    refund = pause(input=REFUND)
    claims.claim(refund.pk, people["carol"])

    assert cancel_page(people["dave"], refund.thread_id).status_code == 403
    assert _status(refund) == "interrupted"


def test_the_cancel_permission_cancels_any_run_the_user_sees(olga: User) -> None:
    refund = pause(input=REFUND)

    assert cancel_page(olga, refund.thread_id).status_code == 302
    assert _status(refund) == "cancelled"


def test_a_thread_the_user_may_not_see_is_404_before_the_rule(people: dict[str, User]) -> None:
    refund = pause(input=REFUND)

    hidden = cancel_page(people["mallory"], refund.thread_id)
    unknown = cancel_page(people["mallory"], "no-such-thread")

    assert hidden.status_code == unknown.status_code == 404
    assert _status(refund) == "interrupted"


def test_the_thread_page_offers_the_cancel_button_only_to_who_may_cancel(
    people: dict[str, User],
) -> None:
    refund = pause(input=REFUND)
    url = f"/threads/{refund.thread_id}/"

    offered = client_for(people["carol"]).get(url).content.decode()
    withheld = client_for(people["manny"]).get(url).content.decode()

    assert f'action="/cancel-run/{refund.thread_id}/"' in offered
    assert "/cancel-run/" not in withheld
    assert "may cancel this run" in withheld


# ------------------------------------------------------------------------- the JSON API


def test_the_api_refuses_a_manager_who_cannot_decide_the_item(people: dict[str, User]) -> None:
    refund = pause(input=REFUND)

    response = cancel_api(people["manny"], refund.thread_id)

    assert response.status_code == 403
    assert response.json()["code"] == "not_allowed"
    assert _status(refund) == "interrupted"


def test_the_api_refuses_a_reviewer_for_a_run_someone_else_started(
    people: dict[str, User],
) -> None:
    run = service.start_run("tool_review", {}, user=people["alice"])

    assert cancel_api(people["bob"], run.thread_id).status_code == 403
    assert Run.objects.get(id=run.id).status == "queued"


def test_the_api_cancels_for_the_requester_a_decider_and_the_permission(
    people: dict[str, User], olga: User
) -> None:
    refund, other = pause(input=REFUND), pause(input=REFUND)
    mine = service.start_run("tool_review", {}, user=people["alice"])

    answers = [
        cancel_api(people["alice"], mine.thread_id),
        cancel_api(people["carol"], refund.thread_id),
        cancel_api(olga, other.thread_id),
    ]

    assert [a.status_code for a in answers] == [200, 200, 200]
    assert answers[0].json() == {
        "thread_id": mine.thread_id,
        "run": str(mine.id),
        "status": "cancelled",
    }
    assert Run.objects.get(id=mine.id).status == "cancelled"
    assert _status(refund) == _status(other) == "cancelled"


def test_the_api_answers_404_for_a_hidden_thread_and_409_without_an_active_run(
    people: dict[str, User],
) -> None:
    refund = pause(input=REFUND)
    cancel_api(people["carol"], refund.thread_id)

    hidden = cancel_api(people["mallory"], refund.thread_id)
    again = cancel_api(people["carol"], refund.thread_id)

    assert hidden.status_code == 404 and hidden.json()["code"] == "not_found"
    assert again.status_code == 409 and again.json()["code"] == "no_active_run"


@pytest.mark.django_db(transaction=True)
def test_a_claim_landing_while_a_cancel_checks_is_seen_by_the_cancel(
    people: dict[str, User],
) -> None:
    """A gap left by issue 13: the cancel read the pending items without locking them, so
    carol's claim committing between dave's check and his cancel let dave cancel (reject)
    the item carol held. A claim holds the item's row lock until it commits; here it is
    held open while dave cancels, and his cancel must wait for it and then be refused."""
    refund = pause(input=REFUND)
    claimed, release = threading.Event(), threading.Event()
    answers: list[int] = []

    def carol_claims() -> None:
        try:
            with transaction.atomic():
                assert claims.claim(refund.pk, people["carol"]).code == "claimed"
                claimed.set()
                release.wait(20)
        finally:
            connections.close_all()

    def dave_cancels() -> None:
        try:
            answers.append(cancel_page(people["dave"], refund.thread_id).status_code)
        finally:
            connections.close_all()

    claimer = threading.Thread(target=carol_claims)
    claimer.start()
    assert claimed.wait(20)
    canceller = threading.Thread(target=dave_cancels)
    canceller.start()
    canceller.join(1.0)  # the fixed cancel waits here on the item's lock
    release.set()
    claimer.join(20)
    canceller.join(20)

    assert answers == [403]
    item = ReviewItem.objects.get(pk=refund.pk)
    assert (item.status, item.claimed_by_id) == ("pending", people["carol"].pk)
    assert _status(refund) == "interrupted"
