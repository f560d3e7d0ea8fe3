"""Batch decisions from the inbox: every selected item goes through `decide` with the digest
shown in the list, and the report says what happened to each one."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from beamweaver_core.models import Run
from reviews import batch, claims
from reviews.http_statuses import http_status
from reviews.models import Decision, ReviewItem
from tests.reviews.conftest import client_for, pause, use_policies

pytestmark = pytest.mark.django_db


def selected(*items: ReviewItem) -> list[str]:
    return [f"{i.pk}:{i.digest}" for i in items]


def post_batch(user: User, items: list[str], action: str, **extra: Any) -> Any:
    data = {"items": items, "action": action, "batch_id": "batch1", **extra}
    return client_for(user).post("/batch/", data, HTTP_HX_REQUEST="true")


def test_approving_several_items_decides_each_through_the_service(alice: User) -> None:
    items = [pause() for _ in range(3)]

    response = post_batch(alice, selected(*items), "approve")

    assert response.status_code == 200
    html = response.content.decode()
    assert "<strong>3 applied.</strong>" in html
    assert Decision.objects.filter(user=alice, summary="approve").count() == 3
    assert Run.objects.filter(kind="resume").count() == 3
    assert 'id="inbox-list"' in html and 'hx-swap-oob="true"' in html


def test_the_report_names_each_refused_item_and_why(alice: User, bob: User) -> None:
    fine = [pause() for _ in range(7)]
    taken = pause()
    claims.claim(taken.pk, bob)

    response = post_batch(alice, selected(*fine, taken), "approve")

    html = response.content.decode()
    assert (
        "<strong>7 applied, 1 refused because: bob claimed this item; ask them or a manager "
        "to release it.</strong>"
    ) in html
    assert f"#{taken.pk} send_email</a>: refused (claimed)" in html


def test_a_rejection_batch_carries_the_message_reason_and_note(alice: User) -> None:
    items = [pause(), pause()]

    post_batch(alice, selected(*items), "reject", reason="policy", note="Spam wave.")

    for decision in Decision.objects.all():
        assert decision.answer == {
            "decisions": [
                {"type": "reject", "message": "This action is against our policy; do not do it."}
            ]
        }
        assert (decision.reason_code, decision.note) == ("policy", "Spam wave.")


def test_an_item_that_changed_since_the_list_was_shown_is_refused(alice: User) -> None:
    item = pause()

    report = batch.decide_many(alice, [(item.pk, "0" * 64)], "approve", batch_id="b")

    assert [(http_status(line.outcome), line.code) for line in report.lines] == [
        (409, "payload_changed")
    ]
    assert report.summary.startswith("0 applied, 1 refused because: The proposal changed")


def test_a_breakpoint_can_be_continued_but_not_rejected_in_a_batch(alice: User) -> None:
    breakpoint_item = pause("checkpointed")

    rejected = batch.decide_many(
        alice, [(breakpoint_item.pk, breakpoint_item.digest)], "reject", batch_id="b1"
    )
    approved = batch.decide_many(
        alice, [(breakpoint_item.pk, breakpoint_item.digest)], "approve", batch_id="b2"
    )

    assert rejected.lines[0].message.startswith("A breakpoint can only be continued")
    assert (http_status(approved.lines[0].outcome), approved.summary) == (200, "1 applied.")


def test_resending_the_same_batch_replays_instead_of_deciding_twice(alice: User) -> None:
    items = [pause(), pause()]
    post_batch(alice, selected(*items), "approve")

    again = post_batch(alice, selected(*items), "approve")

    assert "<strong>2 applied.</strong>" in again.content.decode()
    assert Decision.objects.count() == 2
    assert Run.objects.filter(kind="resume").count() == 2


def test_items_the_user_may_not_see_are_reported_as_missing(settings: Any, alice: User) -> None:
    use_policies(settings, {"name": "p", "groups": ["finance"]})
    hidden = pause()

    report = batch.decide_many(alice, [(hidden.pk, hidden.digest)], "approve", batch_id="b")

    assert [(http_status(line.outcome), line.message) for line in report.lines] == [
        (404, "No such item.")
    ]


def test_quorum_items_record_an_approval_each(settings: Any, alice: User) -> None:
    use_policies(settings, {"name": "two", "approvals": 2})
    item = pause()

    report = batch.decide_many(alice, [(item.pk, item.digest)], "approve", batch_id="b")

    assert report.summary == "1 applied (1 waiting for more approvals)."


def test_an_empty_selection_or_unknown_action_is_refused(alice: User) -> None:
    item = pause()

    empty = post_batch(alice, [], "approve")
    unknown = post_batch(alice, selected(item), "delete")

    assert empty.status_code == unknown.status_code == 422
    assert "Select at least one item first." in empty.content.decode()
    assert "Choose Approve or Reject." in unknown.content.decode()


def test_the_inbox_offers_a_checkbox_per_pending_row(alice: User) -> None:
    item = pause()

    html = client_for(alice).get("/").content.decode()

    assert f'value="{item.pk}:{item.digest}"' in html
    assert 'form="batch-form"' in html and 'id="batch-form"' in html


def test_a_batch_without_htmx_renders_the_inbox_with_the_report(alice: User) -> None:
    item = pause()

    response = client_for(alice).post(
        "/batch/", {"items": selected(item), "action": "approve", "batch_id": "b"}
    )

    html = response.content.decode()
    assert response.status_code == 200
    assert "<strong>1 applied.</strong>" in html
    assert html.count('id="inbox-list"') == 1


def test_a_question_needs_a_typed_answer_not_a_batch(alice: User) -> None:
    question = pause("approval", {"amount": 5})

    report = batch.decide_many(alice, [(question.pk, question.digest)], "approve", batch_id="b")

    assert report.lines[0].message == "A question needs a typed answer; open the item to answer it."
    assert not Decision.objects.exists()
