"""Who may decide: N-of-M approvals, no self-approval, reviewer groups, allowed
responders, notes and preset reasons, all through `reviews.services.decide`."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.contrib.auth.models import Group, User

from beamweaver_core.models import Run
from reviews.http_statuses import http_status
from reviews.models import Approval, AuditEvent, Decision, ReviewItem
from reviews.services import DecisionRequest, decide
from tests.reviews.conftest import make_manager, make_reviewer, pause, run_next, use_policies

pytestmark = pytest.mark.django_db

APPROVE = {"decisions": [{"type": "approve"}]}
REJECT = {"decisions": [{"type": "reject", "message": "No."}]}


def answer(item: ReviewItem, user: User, value: Any, **kwargs: Any) -> Any:
    fields: dict[str, Any] = {
        "item_id": item.pk,
        "user": user,
        "client_decision_id": uuid.uuid4().hex,
        "digest": item.digest,
        "interrupt_id": item.interrupt_id,
        "answer": value,
    }
    fields.update(kwargs)
    return decide(DecisionRequest(**fields))


@pytest.fixture
def two_of_three(settings: Any) -> dict[str, User]:
    use_policies(settings, {"name": "two", "approvals": 2})
    return {name: make_reviewer(name) for name in ("ann", "ben", "cat", "requester")}


def test_an_item_needing_two_approvals_waits_for_the_second(two_of_three: dict[str, User]) -> None:
    item = pause(user=two_of_three["requester"])

    first = answer(item, two_of_three["ann"], APPROVE)

    assert (http_status(first), first.code) == (202, "approval_recorded")
    assert first.message == (
        "Approval recorded (1 of 2: ann); waiting for 1 more from other reviewers."
    )
    item.refresh_from_db()
    assert item.status == "pending"
    assert not Run.objects.filter(kind="resume").exists()
    assert AuditEvent.objects.filter(action="approved", actor=two_of_three["ann"]).count() == 1

    second = answer(item, two_of_three["ben"], APPROVE)

    assert (http_status(second), second.code) == (200, "accepted")
    decision = Decision.objects.get(item=item)
    assert (decision.user, decision.summary) == (two_of_three["ben"], "approve (2 of 2 approvals)")
    assert run_next().status == "succeeded"


def test_the_same_reviewer_cannot_approve_twice(two_of_three: dict[str, User]) -> None:
    item = pause()
    answer(item, two_of_three["ann"], APPROVE)

    again = answer(item, two_of_three["ann"], APPROVE)

    assert (http_status(again), again.code) == (409, "already_approved")
    assert "it needs 1 more approval(s) from other reviewers" in again.message
    assert Approval.objects.count() == 1


def test_a_resent_approval_is_replayed(two_of_three: dict[str, User]) -> None:
    item = pause()
    answer(item, two_of_three["ann"], APPROVE, client_decision_id="click-1")

    again = answer(item, two_of_three["ann"], APPROVE, client_decision_id="click-1")

    assert (http_status(again), again.code, again.replayed) == (202, "approval_recorded", True)


def test_any_reject_decides_a_quorum_item_at_once(two_of_three: dict[str, User]) -> None:
    item = pause()
    answer(item, two_of_three["ann"], APPROVE)

    outcome = answer(item, two_of_three["ben"], REJECT)

    assert (http_status(outcome), outcome.code) == (200, "accepted")
    assert Decision.objects.get().decision_types == ["reject"]


def test_an_edit_is_refused_on_a_quorum_item(two_of_three: dict[str, User]) -> None:
    item = pause()
    edit = {
        "decisions": [
            {
                "type": "edit",
                "edited_action": {
                    "name": "send_email",
                    "args": {"to": "a@example.com", "subject": "s", "body": "b"},
                },
            }
        ]
    }

    outcome = answer(item, two_of_three["ann"], edit)

    assert (http_status(outcome), outcome.code) == (422, "invalid")
    assert "an edit cannot be combined across reviewers" in outcome.problems[0]["message"]


def test_the_user_who_started_the_run_cannot_approve_it(alice: User, bob: User) -> None:
    item = pause(user=alice)
    assert item.requested_by == alice

    refused = answer(item, alice, APPROVE)

    assert (http_status(refused), refused.code) == (403, "self_approval")
    assert refused.message == (
        "You started this run, so you cannot approve it; another reviewer must."
    )
    assert http_status(answer(item, alice, REJECT)) == 200


def test_a_requesters_approval_never_counts_towards_a_quorum(
    two_of_three: dict[str, User],
) -> None:
    item = pause(user=two_of_three["requester"])

    outcome = answer(item, two_of_three["requester"], APPROVE)

    assert outcome.code == "self_approval"
    assert Approval.objects.count() == 0


def test_the_requester_of_a_resumed_run_is_still_the_one_who_started_it(
    alice: User, bob: User
) -> None:
    """The run that pauses again was queued by the reviewer's resume; the starter counts."""
    first = pause(input={"calls": [{"name": "notify", "args": {}}]}, user=alice)
    answer(first, bob, APPROVE)
    run_next()

    assert first.requested_by == alice


def test_a_manager_outside_the_groups_sees_the_item_but_may_not_decide(settings: Any) -> None:
    use_policies(settings, {"name": "finance", "groups": ["finance"]})
    manager = make_manager("manager")
    item = pause()

    outcome = answer(item, manager, APPROVE)

    assert (http_status(outcome), outcome.code) == (403, "not_allowed")


def test_an_outsider_gets_404_and_an_allowed_responder_decides(settings: Any) -> None:
    use_policies(settings, {"name": "p", "groups": ["finance"], "responders": ["dora"]})
    outsider, dora = make_reviewer("outsider"), make_reviewer("dora")
    item = pause()

    assert http_status(answer(item, outsider, APPROVE)) == 404
    assert http_status(answer(item, dora, APPROVE)) == 200


def test_a_group_member_decides(settings: Any) -> None:
    use_policies(settings, {"name": "p", "groups": ["finance"]})
    member = make_reviewer("member")
    item = pause()
    member.groups.add(Group.objects.get(name="finance"))

    assert http_status(answer(item, User.objects.get(pk=member.pk), APPROVE)) == 200


def test_the_private_note_is_kept_for_the_audit_and_never_sent_to_the_run(alice: User) -> None:
    item = pause()

    answer(item, alice, REJECT, note="Customer is known for chargebacks.")

    decision = Decision.objects.get()
    assert decision.note == "Customer is known for chargebacks."
    assert AuditEvent.objects.get(action="decided").note == decision.note
    resume = Run.objects.get(kind="resume")
    assert "chargebacks" not in str(resume.input)
    assert resume.input[item.interrupt_id] == REJECT


def test_a_preset_reason_fills_the_message_of_a_reject_without_one(alice: User) -> None:
    item = pause()

    answer(item, alice, {"decisions": [{"type": "reject"}]}, reason="policy")

    decision = Decision.objects.get()
    assert decision.reason_code == "policy"
    assert decision.answer["decisions"] == [
        {"type": "reject", "message": "This action is against our policy; do not do it."}
    ]


def test_an_unknown_reason_is_refused(alice: User) -> None:
    item = pause()

    outcome = answer(item, alice, REJECT, reason="made-up")

    assert (http_status(outcome), outcome.code) == (422, "invalid")
    assert outcome.problems[0]["field"] == "reason"
