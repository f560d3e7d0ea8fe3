"""Claim, release and reassign: atomic, audited, enforced by the decision service, shown on
the item page and pushed live to other open pages."""

from __future__ import annotations

import re
import threading
import uuid
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection

from reviews import claims
from reviews.http_statuses import http_status
from reviews.models import AuditEvent, OutboxMessage, ReviewItem
from reviews.partials import routing
from tests.reviews.conftest import (
    approve_as,
    client_for,
    decide_as,
    make_manager,
    make_reviewer,
    pause,
    use_policies,
)

pytestmark = pytest.mark.django_db

APPROVE = {"decisions": [{"type": "approve"}]}


def approve(item: ReviewItem, user: User) -> Any:
    return decide_as(user, item, APPROVE["decisions"])


def test_a_claimed_item_can_only_be_decided_by_its_claimer(alice: User, bob: User) -> None:
    item = pause()

    claimed = claims.claim(item.pk, alice)
    refused = approve(item, bob)

    assert (http_status(claimed), claimed.message) == (200, "You claimed this item.")
    assert (http_status(refused), refused.code) == (409, "claimed")
    assert refused.message == "alice claimed this item; ask them or a manager to release it."
    assert http_status(approve(item, alice)) == 200
    assert list(
        AuditEvent.objects.filter(action="claimed").values_list("actor__username", flat=True)
    ) == ["alice"]


def test_a_second_claim_loses_and_names_the_holder(alice: User, bob: User) -> None:
    item = pause()
    claims.claim(item.pk, alice)

    second = claims.claim(item.pk, bob)

    assert (http_status(second), second.code, second.message) == (
        409,
        "claimed",
        "alice claimed this item first.",
    )
    assert claims.claim(item.pk, alice).message == "You hold this item already."


@pytest.mark.django_db(transaction=True)
def test_of_two_concurrent_claims_exactly_one_wins() -> None:
    item = pause()
    users = [make_reviewer(f"r{i}") for i in range(6)]
    barrier = threading.Barrier(len(users))
    results: list[int] = []

    def race(user: User) -> None:
        barrier.wait()
        try:
            results.append(http_status(claims.claim(item.pk, user)))
        finally:
            connection.close()

    threads = [threading.Thread(target=race, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert sorted(results) == [200] + [409] * 5
    assert AuditEvent.objects.filter(action="claimed").count() == 1


def test_release_by_the_holder_or_a_manager_only(alice: User, bob: User) -> None:
    item = pause()
    manager = make_manager("manager")
    claims.claim(item.pk, alice)

    assert http_status(claims.unclaim(item.pk, bob)) == 403
    released = claims.unclaim(item.pk, manager)

    assert (http_status(released), released.message) == (200, "The item is free again.")
    assert AuditEvent.objects.get(action="unclaimed").message == "Released the claim of alice."
    item.refresh_from_db()
    assert item.claimed_by is None


def test_a_manager_reassigns_and_the_new_assignee_holds_it(alice: User, bob: User) -> None:
    item = pause()
    bob.email = "bob@example.com"
    bob.save()
    manager = make_manager("manager")

    outcome = claims.reassign(item.pk, manager, "bob")

    assert (http_status(outcome), outcome.message) == (200, "Assigned to bob.")
    item.refresh_from_db()
    assert (item.assignee, item.claimed_by) == (bob, bob)
    assert AuditEvent.objects.get(action="reassigned").message == ("Reassigned from nobody to bob.")
    assert OutboxMessage.objects.filter(event="review.assigned", target="bob@example.com").exists()
    assert approve(item, alice).code == "claimed"


def test_reassigning_needs_a_manager_or_the_holder(alice: User, bob: User) -> None:
    item = pause()

    assert http_status(claims.reassign(item.pk, bob, "alice")) == 403
    claims.claim(item.pk, bob)
    assert http_status(claims.reassign(item.pk, bob, "alice")) == 200


def test_reassigning_to_the_requester_or_a_stranger_is_refused(alice: User, bob: User) -> None:
    item = pause(user=alice)
    manager = make_manager("manager")

    to_requester = claims.reassign(item.pk, manager, "alice")
    to_nobody = claims.reassign(item.pk, manager, "ghost")

    assert (http_status(to_requester), http_status(to_nobody)) == (422, 422)
    assert to_requester.message == (
        "alice started this run and cannot approve it; choose another reviewer."
    )


@pytest.mark.parametrize("htmx", [False, True])
def test_routing_an_unknown_or_hidden_item_is_a_404(settings: Any, htmx: bool) -> None:
    """A refusal of an item the user may not see (a bad number of hours here) read the
    item to answer with it, and failed with a 500."""
    use_policies(settings, {"name": "p", "groups": ["finance"], "deadline_seconds": 600})
    hidden = pause()
    client = client_for(make_reviewer("outsider"), raise_request_exception=False)
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}

    answers = [
        client.post(f"/items/{pk}/{action}/", data, **headers).status_code
        for pk in (999_999, hidden.pk)
        for action, data in [
            ("extend", {"hours": "5"}),
            ("extend", {"hours": "4"}),
            ("claim", {}),
            ("reassign", {"assignee": "x" * 200}),
        ]
    ]

    assert answers == [404] * 8
    hidden.refresh_from_db()
    assert hidden.due_at is not None and not AuditEvent.objects.exclude(action="created").exists()


@pytest.mark.parametrize("htmx", [False, True])
def test_a_holder_who_hands_an_item_over_out_of_their_sight_goes_back_to_the_inbox(
    settings: Any, alice: User, bob: User, htmx: bool
) -> None:
    """Alice saw the item only as its assignee: after she reassigned it to bob, the
    answer read it as her and failed with a 500, though the reassignment was made."""
    use_policies(settings, {"name": "p", "groups": ["finance"]})
    bob.groups.add(Group.objects.get_or_create(name="finance")[0])
    item = pause()
    assert claims.reassign(item.pk, make_manager("manager"), "alice").code == "reassigned"
    client = client_for(alice)
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}

    response = client.post(f"/items/{item.pk}/reassign/", {"assignee": "bob"}, **headers)

    item.refresh_from_db()
    assert (item.assignee, item.claimed_by) == (bob, bob)
    if htmx:
        assert (response.status_code, response["HX-Redirect"]) == (200, "/")
    else:
        assert (response.status_code, response["Location"]) == (302, "/")
    inbox = client.get("/").content.decode()
    assert "Assigned to bob. You can no longer see this item." in inbox


def test_a_holder_hands_an_item_over_only_to_a_reviewer_its_policy_names(
    settings: Any, alice: User, bob: User
) -> None:
    """The holder of an item needing two approvals from finance approved it, handed it to
    a friend outside finance, whose approval, as its assignee's, completed the quorum
    (found by an outside review). A manager may still assign outside the policy."""
    use_policies(settings, {"name": "p", "groups": ["finance"], "approvals": 2, "assignee": "g1"})
    finance = Group.objects.get_or_create(name="finance")[0]
    holder = make_reviewer("g1")
    holder.groups.add(finance)
    item = pause(user=make_reviewer("requester"))
    holder = User.objects.get(pk=holder.pk)
    assert approve_as(holder, item).code == "approval_recorded"

    refused = claims.reassign(item.pk, holder, "alice")

    assert refused.code == "not_allowed" and "does not name alice" in refused.message
    item.refresh_from_db()
    assert item.assignee == holder
    assert approve_as(alice, item).code == "not_found"  # not hers to see, nor decide
    bob.groups.add(finance)
    # the page offers the holder the reviewers the policy names, a manager everyone
    assert routing(item, holder)["reviewers"] == ["bob", "g1"]
    assert {"alice", "bob"} <= set(routing(item, make_manager("boss"))["reviewers"])
    assert claims.reassign(item.pk, holder, "bob").code == "reassigned"
    assert claims.reassign(item.pk, make_manager("manager"), "alice").code == "reassigned"


def test_the_runs_requester_cannot_claim_what_they_may_not_approve(alice: User, bob: User) -> None:
    """A claim by the requester kept everyone else from deciding an item they may not
    approve themselves."""
    item = pause(user=alice)
    client = client_for(alice)

    outcome = claims.claim(item.pk, alice)
    page = client.get(f"/items/{item.pk}/").content.decode()
    response = client.post(f"/items/{item.pk}/claim/", HTTP_HX_REQUEST="true")

    assert (http_status(outcome), outcome.code) == (403, "self_approval")
    assert outcome.message == (
        "You started this run, so you cannot approve it; another reviewer must. Claiming it "
        "would keep them from deciding it."
    )
    assert 'id="claim-button"' not in page
    assert (response.status_code, response["X-BeamWeaver-Refusal"]) == (403, "1")
    assert "Claiming it would keep them from deciding it." in response.content.decode()
    item.refresh_from_db()
    assert item.claimed_by is None
    assert approve(item, bob).code == "accepted"


def test_the_runs_requester_may_claim_a_question_they_may_answer(alice: User) -> None:
    item = pause("approval", {"amount": 1}, user=alice)

    assert claims.claim(item.pk, alice).code == "claim_taken"


def test_a_question_may_be_handed_to_the_runs_requester_who_may_answer_it(
    alice: User, bob: User
) -> None:
    """Claim and reassign say the same rule: the requester may not approve their own
    run's tool call, but may answer its question (reassign refused them for both)."""
    item = pause("approval", {"amount": 1}, user=alice)
    manager = make_manager("manager")

    assert "alice" in routing(item, manager)["reviewers"]
    assert claims.reassign(item.pk, manager, "alice").code == "reassigned"


def test_a_quorum_item_cannot_be_claimed(settings: Any, alice: User) -> None:
    use_policies(settings, {"name": "two", "approvals": 2})
    item = pause()

    outcome = claims.claim(item.pk, alice)

    assert (http_status(outcome), outcome.code) == (409, "quorum")


def test_claiming_a_decided_item_is_gone(alice: User) -> None:
    item = pause()
    approve(item, alice)

    assert http_status(claims.claim(item.pk, alice)) == 410


def test_the_claim_buttons_work_without_htmx(alice: User) -> None:
    item = pause()
    client = client_for(alice)

    page = client.get(f"/items/{item.pk}/").content.decode()
    response = client.post(f"/items/{item.pk}/claim/")

    assert 'id="claim-button"' in page
    assert response.status_code == 302 and response["Location"] == f"/items/{item.pk}/"
    after = client.get(f"/items/{item.pk}/").content.decode()
    assert 'id="release-button"' in after
    assert 'Claimed by</dt><dd id="item-claim"><strong>you</strong>' in after


def test_an_htmx_claim_answers_with_the_routing_partial(alice: User, bob: User) -> None:
    item = pause()
    claims.claim(item.pk, bob)

    response = client_for(alice).post(f"/items/{item.pk}/claim/", HTTP_HX_REQUEST="true")

    assert response.status_code == 409
    html = response.content.decode().strip()
    assert html.startswith('<section id="item-routing"')
    assert "bob claimed this item first." in html


def test_every_routing_and_batch_action_shows_its_progress(db: Any) -> None:
    manager = make_manager("mia")
    item = pause()
    client = client_for(manager)

    page = client.get(f"/items/{item.pk}/").content.decode()
    inbox = client.get("/").content.decode()

    forms = re.findall(r'<form[^>]* hx-target="#item-routing"[^>]*>', page)
    assert len(forms) == 3  # claim, reassign, extend (release once claimed)
    assert all('hx-disabled-elt="find button"' in form for form in forms)
    client.post(f"/items/{item.pk}/claim/")
    page = client.get(f"/items/{item.pk}/").content.decode()
    release = re.search(r'<form[^>]*/unclaim/" hx-target="#item-routing"[^>]*>', page)
    assert release and 'hx-disabled-elt="find button"' in release.group(0)
    assert 'hx-disabled-elt="find button"' in re.search(
        r'<form id="batch-form"[^>]*>', inbox, re.S
    ).group(0)  # type: ignore[union-attr]
    assert '<span class="spinner htmx-indicator" role="status">Deciding…</span>' in inbox


def test_a_refused_decision_from_the_page_is_marked_as_a_policy_refusal(
    alice: User, bob: User
) -> None:
    item = pause(user=alice)

    response = client_for(alice).post(
        f"/items/{item.pk}/decide/",
        {
            "client_decision_id": uuid.uuid4().hex,
            "digest": item.digest,
            "interrupt_id": item.interrupt_id,
            "d0-type": "approve",
        },
        HTTP_HX_REQUEST="true",
    )

    assert response.status_code == 403
    assert response["X-BeamWeaver-Refusal"] == "self_approval"
    assert "you cannot approve it" in response.content.decode()


def test_a_manager_extends_a_deadline_from_the_page(settings: Any) -> None:
    use_policies(settings, {"name": "p", "deadline_seconds": 600})
    manager = make_manager("manager")
    item = pause()

    response = client_for(manager).post(
        f"/items/{item.pk}/extend/", {"hours": "4"}, HTTP_HX_REQUEST="true"
    )
    refused = client_for(manager).post(f"/items/{item.pk}/extend/", {"hours": "5"})

    assert response.status_code == 200
    assert "Deadline extended from " in response.content.decode()
    assert refused.status_code == 302


def test_an_item_without_a_deadline_offers_to_set_one_not_to_extend_it(settings: Any) -> None:
    use_policies(settings, {"name": "timed", "tool": "notify", "deadline_seconds": 600})
    manager = make_manager("manager")
    untimed = pause()
    timed = pause(input={"calls": [{"name": "notify", "args": {}}]})
    assert untimed.due_at is None and timed.due_at is not None
    client = client_for(manager)

    untimed_page = client.get(f"/items/{untimed.pk}/").content.decode()
    timed_page = client.get(f"/items/{timed.pk}/").content.decode()
    response = client.post(f"/items/{untimed.pk}/extend/", {"hours": "4"}, HTTP_HX_REQUEST="true")

    assert '<label for="extend-by">Set a deadline</label>' in untimed_page
    assert "Extend the deadline by" not in untimed_page
    assert '<label for="extend-by">Extend the deadline by</label>' in timed_page
    assert "Set a deadline" not in timed_page
    text = response.content.decode()
    assert "Deadline set to " in text and "(the item had none)" in text
    assert "extended from none" not in text
    assert '<label for="extend-by">Extend the deadline by</label>' in text
