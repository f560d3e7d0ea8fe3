"""The decision policy is one table of rules (`reviews.rules.RULES`): for every user,
item and policy, what the item page offers is exactly what the decision service's
refusal lets through (a claim by someone else aside: the page leaves it to the refusal)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.db import transaction
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reviews import quorum
from reviews.models import Approval, ReviewItem
from reviews.rules import RULES, decision_offer, decision_refusal
from tests.reviews.conftest import make_manager, make_reviewer, pause

pytestmark = pytest.mark.django_db

PEOPLE = ("requester", "member", "responder", "reviewer", "manager", "outsider")
ANSWERS = {
    ReviewItem.Kind.TOOL_REVIEW: [
        {"decisions": [{"type": "approve"}]},
        {"decisions": [{"type": "edit", "edited_action": {"name": "send_email", "args": {}}}]},
        {"decisions": [{"type": "reject", "message": "no"}]},
        {"decisions": [{"type": "respond", "message": "later"}]},
    ],
    ReviewItem.Kind.BREAKPOINT: [None],
    ReviewItem.Kind.INTERRUPT: [{"approved": True}, "yes"],
}


@pytest.fixture
def world(db: Any) -> dict[str, Any]:
    people = {name: make_reviewer(name) for name in PEOPLE if name not in ("manager", "outsider")}
    people["manager"] = make_manager("manager")
    people["outsider"] = make_reviewer("outsider", reviewer=False)
    finance, leads = Group.objects.create(name="finance"), Group.objects.create(name="leads")
    people["member"].groups.add(finance)
    people["reviewer"].groups.add(leads)
    items = {
        ReviewItem.Kind.TOOL_REVIEW: pause(),
        ReviewItem.Kind.BREAKPOINT: pause("checkpointed"),
        ReviewItem.Kind.INTERRUPT: pause("approval", {"amount": 5}),
    }
    assert {kind: item.kind for kind, item in items.items()} == {k: k for k in items}
    people = {name: User.objects.get(pk=user.pk) for name, user in people.items()}
    return {"people": people, "items": items, "finance": finance, "leads": leads}


policies = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(list(ANSWERS)),
        "viewer": st.sampled_from(PEOPLE),
        "groups": st.booleans(),
        "responders": st.booleans(),
        "assignee": st.sampled_from([None, "reviewer"]),
        "escalated": st.booleans(),
        "approvals": st.sampled_from([1, 2, 3]),
        "requester": st.sampled_from([None, "requester", "member"]),
        "claimer": st.sampled_from([None, "member", "reviewer", "responder"]),
        "voters": st.sets(st.sampled_from(["member", "reviewer", "responder", "requester"])),
    }
)


def _item(world: dict[str, Any], case: dict[str, Any]) -> ReviewItem:
    """The item of `case.kind` under the policy the case describes (not saved)."""
    people = world["people"]
    item = ReviewItem.objects.get(pk=world["items"][case["kind"]].pk)
    item.reviewer_group_ids = [world["finance"].pk] if case["groups"] else []
    item.responder_ids = [people["responder"].pk] if case["responders"] else []
    item.assignee_id = people[case["assignee"]].pk if case["assignee"] else None
    item.escalation_group_id = world["leads"].pk
    item.escalated_at = timezone.now() if case["escalated"] else None
    item.required_approvals = case["approvals"]
    item.requested_by_id = people[case["requester"]].pk if case["requester"] else None
    claimer = people[case["claimer"]] if case["claimer"] else None
    item.claimed_by, item.claimed_by_id = claimer, claimer.pk if claimer else None
    return item


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=policies)
def test_what_is_offered_is_exactly_what_the_policy_does_not_refuse(
    world: dict[str, Any], case: dict[str, Any]
) -> None:
    item = _item(world, case)
    user = world["people"][case["viewer"]]
    with transaction.atomic():
        for name in sorted(case["voters"]):
            Approval.objects.create(
                item=item,
                user=world["people"][name],
                client_decision_id=uuid.uuid4().hex,
                digest_seen=item.digest,
                body_json="{}",
            )

        offer = decision_offer(user, item)
        for answer in ANSWERS[item.kind]:
            executes = quorum.executes(item, answer)
            refusal = decision_refusal(user, item, executes=executes)
            offered = offer.execute if executes else offer.decide

            assert offered == (refusal is None or refusal.code == "claimed"), (answer, refusal)
            if not offered:
                assert refusal is not None and offer.why == refusal.code
        assert offer.execute <= offer.decide
        assert offer.edit == (offer.execute and not quorum.applies(item))
        assert (offer.why == "") == offer.execute
        transaction.set_rollback(True)


def test_the_rules_are_read_in_the_order_the_service_reports_refusals() -> None:
    codes = [rule.code for rule in RULES]

    assert codes == ["not_allowed", "self_approval", "already_approved", "claimed"]
    assert [rule.code for rule in RULES if rule.offered_anyway] == ["claimed"]
