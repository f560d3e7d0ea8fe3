"""The decision service: every outcome of `reviews.services.decide`."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection

from beamweaver_core.agent import HITL
from beamweaver_core.models import Run
from beamweaver_core.runtime import service
from reviews.http_statuses import http_status
from reviews.models import AuditEvent, Decision, ReviewItem
from reviews.services import DecisionRequest, decide
from tests.reviews.conftest import make_reviewer, pause, run_next

pytestmark = pytest.mark.django_db

EMAIL = {"to": "ops@example.com", "subject": "Weekly report", "body": "All good.\nBye."}


def request(item: ReviewItem, user: User, answer: Any = None, **kwargs: Any) -> DecisionRequest:
    fields: dict[str, Any] = {
        "item_id": item.pk,
        "user": user,
        "client_decision_id": uuid.uuid4().hex,
        "digest": item.digest,
        "interrupt_id": item.interrupt_id,
        "answer": answer,
    }
    fields.update(kwargs)
    return DecisionRequest(**fields)


def approve(item: ReviewItem, user: User, **kwargs: Any) -> Any:
    return decide(request(item, user, {"decisions": [{"type": "approve"}]}, **kwargs))


def test_an_accepted_decision_is_stored_audited_and_resumes_the_run(alice: User) -> None:
    item = pause()

    outcome = approve(item, alice)

    assert (http_status(outcome), outcome.code, outcome.replayed) == (200, "accepted", False)
    item.refresh_from_db()
    assert item.status == "decided" and item.decided_at is not None
    decision = Decision.objects.get(item=item)
    assert (decision.user, decision.summary, decision.digest_seen) == (
        alice,
        "approve",
        item.digest,
    )
    bound = list(HITL.bind_decisions(HITL.from_value(item.payload), [{"type": "approve"}]))
    assert decision.answer == {"decisions": bound}
    assert decision.bindings == [{"index": 0, "digest": bound[0]["binding"]}]
    resume = Run.objects.get(thread_id=item.thread_id, kind="resume")
    assert decision.resume_run == resume
    assert resume.input == {item.interrupt_id: {"decisions": bound}}
    audit = AuditEvent.objects.get(action="decided")
    assert (audit.actor, audit.item, audit.outcome, audit.digest_seen) == (
        alice,
        item,
        "accepted",
        item.digest,
    )
    finished = run_next()
    assert finished.status == "succeeded"


def test_the_same_client_decision_id_again_returns_the_first_outcome(alice: User) -> None:
    item = pause()
    first = approve(item, alice, client_decision_id="click-1")

    again = approve(item, alice, client_decision_id="click-1")

    assert (http_status(again), again.code, again.replayed) == (
        http_status(first),
        first.code,
        True,
    )
    assert again.decision == first.decision
    assert Decision.objects.count() == 1
    assert Run.objects.filter(kind="resume").count() == 1


def test_a_replay_answers_with_the_outcome_code_stored_on_the_first_decision(
    alice: User,
) -> None:
    """The decision keeps its outcome code (not an HTTP status) and a replay reads it."""
    item = pause()
    approve(item, alice, client_decision_id="click-1")
    stored = Decision.objects.get(item=item)
    assert stored.outcome == "accepted"
    assert "status_code" not in {f.name for f in Decision._meta.get_fields()}
    # Whatever the row says is what the replay answers: it is read, not re-derived.
    Decision.objects.filter(pk=stored.pk).update(outcome="approval_recorded")

    again = approve(item, alice, client_decision_id="click-1")

    assert (again.code, again.replayed, again.decision) == ("approval_recorded", True, stored)
    assert http_status(again) == 202
    assert AuditEvent.objects.filter(action="refused").count() == 0


def test_a_client_decision_id_reused_with_another_answer_is_refused(alice: User) -> None:
    item = pause()
    approve(item, alice, client_decision_id="click-1")

    outcome = decide(
        request(item, alice, {"decisions": [{"type": "reject"}]}, client_decision_id="click-1")
    )

    assert (http_status(outcome), outcome.code) == (422, "key_reused")
    assert Decision.objects.get().summary == "approve"


def test_a_second_decision_is_refused_naming_who_decided(alice: User, bob: User) -> None:
    item = pause()
    approve(item, alice)

    outcome = decide(request(item, bob, {"decisions": [{"type": "reject"}]}))

    assert (http_status(outcome), outcome.code) == (409, "already_decided")
    assert outcome.message.startswith("Already decided by alice at ")
    assert outcome.message.endswith("(approve).")
    assert Decision.objects.count() == 1
    assert Run.objects.filter(kind="resume").count() == 1
    refused = AuditEvent.objects.get(action="refused")
    assert (refused.actor, refused.outcome, refused.summary) == (
        bob,
        "already_decided",
        "already_decided",
    )
    assert refused.decision == {"decisions": [{"type": "reject"}]}


def test_a_second_decision_by_the_same_reviewer_says_you(alice: User) -> None:
    item = pause()
    approve(item, alice)

    outcome = approve(item, alice)

    assert http_status(outcome) == 409
    assert outcome.message.startswith("Already decided by you at ")


def test_a_changed_payload_is_refused(alice: User) -> None:
    item = pause()

    outcome = approve(item, alice, digest="0" * 64)

    assert (http_status(outcome), outcome.code) == (409, "payload_changed")
    assert outcome.message == (
        "The proposal changed since you loaded it; reload to see the current version."
    )
    item.refresh_from_db()
    assert item.status == "pending"
    assert not Run.objects.filter(kind="resume").exists()


def test_an_answer_for_another_interrupt_is_stale(alice: User) -> None:
    item = pause()

    outcome = approve(item, alice, interrupt_id="not-this-one")

    assert (http_status(outcome), outcome.code) == (409, "stale")


def test_an_item_of_a_cancelled_run_is_gone(alice: User) -> None:
    item = pause()
    service.cancel_run(item.run_id)

    outcome = approve(item, alice)

    assert (http_status(outcome), outcome.code) == (410, "gone")
    assert outcome.message == ("This item is cancelled (the run was cancelled); nothing to decide.")
    assert not Decision.objects.exists()


def test_an_expired_item_is_gone(alice: User) -> None:
    item = pause()
    ReviewItem.objects.filter(pk=item.pk).update(status="expired", status_reason="deadline")

    outcome = approve(item, alice)

    assert (http_status(outcome), outcome.code) == (410, "gone")


def test_unknown_and_forbidden_items_look_the_same(alice: User) -> None:
    item = pause()
    outsider = make_reviewer("mallory", reviewer=False)

    unknown = approve(item, alice, item_id=item.pk + 1000)
    forbidden = approve(item, outsider)

    assert (http_status(unknown), unknown.code, unknown.message) == (
        404,
        "not_found",
        "No such review item.",
    )
    assert (http_status(forbidden), forbidden.code, forbidden.message) == (
        404,
        "not_found",
        "No such review item.",
    )
    assert set(AuditEvent.objects.filter(action="refused").values_list("outcome", flat=True)) == {
        "not_found"
    }
    item.refresh_from_db()
    assert item.status == "pending"


def test_an_item_hidden_from_the_user_is_not_found_even_given_the_run_it_paused_on(
    alice: User, bob: User
) -> None:
    """The caller's run id saves reading the item before its lock, not the check that the
    user may see it: the item is read under the lock among those they see."""
    item = pause()
    ReviewItem.objects.filter(pk=item.pk).update(responder_ids=[alice.pk])

    outcome = approve(item, bob, run_id=item.run_id)

    assert (http_status(outcome), outcome.code, outcome.message) == (
        404,
        "not_found",
        "No such review item.",
    )
    refused = AuditEvent.objects.get(action="refused")
    assert (refused.item_id, refused.outcome) == (item.pk, "not_found")
    item.refresh_from_db()
    assert item.status == "pending"


@pytest.mark.parametrize("given", ["the run it moved from", "a run that does not exist"])
def test_an_item_no_longer_on_the_run_the_caller_gives_is_read_again_and_decided(
    alice: User, given: str
) -> None:
    item = pause()
    newer = Run.objects.create(
        thread_id=item.thread_id, graph=item.graph, status=Run.Status.INTERRUPTED
    )
    ReviewItem.objects.filter(pk=item.pk).update(run=newer)
    run_id = item.run_id if given == "the run it moved from" else uuid.uuid4()

    outcome = approve(item, alice, run_id=run_id)

    assert outcome.code == "accepted"
    assert Decision.objects.get(item=item).resume_run.thread_id == item.thread_id


def test_invalid_decisions_are_refused_with_every_problem_and_the_item_stays_pending(
    alice: User,
) -> None:
    calls = [
        {"name": "send_email", "args": EMAIL},
        {"name": "notify", "args": {"text": "hi"}},
    ]
    item = pause(input={"calls": calls})
    decisions = [
        {"type": "edit", "edited_action": {"name": "send_email", "args": {"to": 5}}},
        {"type": "respond", "message": "no"},
    ]

    outcome = decide(request(item, alice, {"decisions": decisions}))

    assert (http_status(outcome), outcome.code) == (422, "invalid")
    fields = sorted((p["index"], p["field"]) for p in outcome.problems)
    assert fields == [
        (0, "edited_action.args"),
        (0, "edited_action.args"),
        (0, "edited_action.args.to"),
        (1, "type"),
    ]
    item.refresh_from_db()
    assert item.status == "pending"
    assert not Run.objects.filter(kind="resume").exists()
    assert AuditEvent.objects.get(action="refused").outcome == "invalid"


def test_an_edit_cannot_rename_the_tool(alice: User) -> None:
    item = pause()
    edit = {"type": "edit", "edited_action": {"name": "delete_everything", "args": EMAIL}}

    outcome = decide(request(item, alice, {"decisions": [edit]}))

    assert http_status(outcome) == 422
    assert [p["field"] for p in outcome.problems] == ["edited_action.name"]


@pytest.mark.parametrize(
    ("decisions", "expected"),
    [
        ([], "Expected 1 decision(s)"),
        ([{"type": "approve"}, {"type": "approve"}], "Expected 1 decision(s)"),
        ([{"type": "execute"}], "Unknown decision type 'execute'"),
        ([{"type": None}], "Unknown decision type None"),
        ("approve", "Decisions must be a list"),
        ([{"type": "respond"}], "needs a non-empty 'message'"),
    ],
)
def test_malformed_decisions_are_refused(alice: User, decisions: Any, expected: str) -> None:
    item = pause()

    outcome = decide(request(item, alice, {"decisions": decisions}))

    assert http_status(outcome) == 422
    assert expected in outcome.problems[0]["message"]


def test_an_edit_is_validated_against_the_schema_and_its_diff_is_audited(alice: User) -> None:
    item = pause()
    edited = {**EMAIL, "subject": "Monthly report", "priority": 2}
    edit = {"type": "edit", "edited_action": {"name": "send_email", "args": edited}}

    outcome = decide(request(item, alice, {"decisions": [edit]}))

    assert http_status(outcome) == 200
    audit = AuditEvent.objects.get(action="decided")
    assert audit.diff == [
        {
            "index": 0,
            "tool": "send_email",
            "changes": [
                {"field": "priority", "change": "added", "before": None, "after": "2"},
                {
                    "field": "subject",
                    "change": "changed",
                    "before": '"Weekly report"',
                    "after": '"Monthly report"',
                },
            ],
        }
    ]
    assert run_next().status == "succeeded"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("a\x00b", "NUL character"),
        ("a\ud800b", "lone surrogate"),
        (float("nan"), "not a finite number"),
        (float("inf"), "not a finite number"),
    ],
)
def test_values_postgres_cannot_store_are_refused(alice: User, value: Any, message: str) -> None:
    item = pause()
    edit = {
        "type": "edit",
        "edited_action": {"name": "send_email", "args": {**EMAIL, "body": value}},
    }

    outcome = decide(request(item, alice, {"decisions": [edit]}))

    assert http_status(outcome) == 422
    assert message in outcome.problems[0]["message"]
    item.refresh_from_db()
    assert item.status == "pending"


def test_oversized_edited_arguments_are_refused(alice: User) -> None:
    item = pause()
    edit = {
        "type": "edit",
        "edited_action": {"name": "send_email", "args": {**EMAIL, "body": "x" * 70_000}},
    }

    outcome = decide(request(item, alice, {"decisions": [edit]}))

    assert http_status(outcome) == 422
    assert outcome.problems[0]["message"] == "The edited arguments exceed 64 KiB."


def test_a_plain_interrupt_takes_any_json_answer(alice: User) -> None:
    item = pause("approval", {"amount": 5})
    assert item.kind == "interrupt"

    outcome = decide(request(item, alice, {"approved": True, "note": "ok"}))

    assert http_status(outcome) == 200
    assert run_next().status == "succeeded"


def test_a_breakpoint_continues(alice: User) -> None:
    item = pause("checkpointed")
    assert (item.kind, item.timing, item.node) == ("breakpoint", "before", "work")

    outcome = decide(request(item, alice, None))

    assert (http_status(outcome), outcome.decision.summary) == (200, "continue")
    assert Run.objects.get(kind="resume").input == {item.interrupt_id: None}
    assert run_next().status == "succeeded"


def test_several_pending_interrupts_are_answered_one_by_one(alice: User) -> None:
    item = pause("pair")
    left, right = ReviewItem.objects.filter(thread_id=item.thread_id).order_by("node")

    assert http_status(decide(request(left, alice, "L"))) == 200
    assert http_status(decide(request(right, alice, "R"))) == 200

    resume = Run.objects.get(kind="resume")
    assert resume.input == {left.interrupt_id: "L", right.interrupt_id: "R"}
    assert run_next().status == "succeeded"


def test_parse_problems_from_the_caller_are_reported_after_the_state_checks(alice: User) -> None:
    item = pause()
    problem = {"index": 0, "field": "edited_action.args.priority", "message": "not a number"}

    outcome = decide(request(item, alice, {"decisions": []}, problems=[problem]))

    assert (http_status(outcome), outcome.problems) == (422, (problem,))


def test_a_missing_digest_or_client_id_is_invalid(alice: User) -> None:
    item = pause()

    outcome = approve(item, alice, digest="", client_decision_id="has spaces")

    assert http_status(outcome) == 422
    assert sorted(p["field"] for p in outcome.problems) == ["client_decision_id", "digest"]


@pytest.mark.django_db(transaction=True)
def test_two_reviewers_deciding_at_the_same_instant_get_one_acceptance() -> None:
    alice, bob = make_reviewer("alice"), make_reviewer("bob")
    item = pause()
    barrier = threading.Barrier(2)
    outcomes: dict[str, Any] = {}

    def race(user: User, kind: str) -> None:
        try:
            barrier.wait(5)
            outcomes[user.username] = decide(request(item, user, {"decisions": [{"type": kind}]}))
        finally:
            connection.close()

    threads = [
        threading.Thread(target=race, args=(alice, "approve")),
        threading.Thread(target=race, args=(bob, "reject")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)

    statuses = sorted(http_status(o) for o in outcomes.values())
    assert statuses == [200, 409]
    winner = next(name for name, o in outcomes.items() if http_status(o) == 200)
    loser = next(o for o in outcomes.values() if http_status(o) == 409)
    assert loser.message.startswith(f"Already decided by {winner} at ")
    assert Decision.objects.count() == 1
    assert Run.objects.filter(kind="resume").count() == 1
    assert AuditEvent.objects.filter(action="refused").count() == 1
