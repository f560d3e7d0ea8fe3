"""Decisions that come too late or for the wrong thing (reliability.md cases 5 to 8):
stale interrupt ids, a payload changed under the reviewer, items cancelled, expired or
completed, and threads with several pending interrupts."""

from __future__ import annotations

import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import transaction
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from beamweaver_core.checkpoint import PostgresCheckpointer
from beamweaver_core.models import Run
from beamweaver_core.runtime import registry, service
from beamweaver_core.types import Interrupt
from reviews import deadlines
from reviews.http_statuses import http_status
from reviews.models import Decision, ReviewItem
from reviews.receivers import on_run_paused
from reviews.services import decide
from tests.reliability.support import (
    APPROVE,
    EMAIL,
    SEND_EMAIL,
    audit_view,
    decide_race,
    dispatch_view,
    executed,
    pause,
    pause_agent,
    race,
    request,
    run_queued,
)
from tests.reviews.conftest import client_for, make_reviewer

REFUND = {"name": "issue_refund", "args": {"order_id": "A-17", "amount": 40}}


def pending(thread_id: str) -> list[ReviewItem]:
    return list(ReviewItem.objects.filter(thread_id=thread_id, status="pending").order_by("id"))


def answers(graph: str, thread_id: str) -> Any:
    state = registry.compiled_graph(graph, PostgresCheckpointer()).get_state(
        {"configurable": {"thread_id": thread_id}}
    )
    return state.values.get("answers"), [i.id for i in state.interrupts]


def form_fields(client: Any, item: ReviewItem) -> dict[str, str]:
    import re

    html = client.get(f"/items/{item.pk}/").content.decode()
    return dict(re.findall(r'<input type="hidden" name="(\w+)"[^>]* value="([^"]*)"', html))


@pytest.mark.django_db(transaction=True)
def test_a_decision_for_an_interrupt_the_run_moved_past_changes_nothing(effects_log: Path) -> None:
    """Case 5: the thread paused at I1, I1 was decided and the run paused again at I2.
    Replaying I1's decision returns its first outcome; another answer to I1 is 409; I1's
    answer sent to I2 is 409 stale. I2 stays pending and untouched, nothing runs."""
    alice, bob = make_reviewer("alice"), make_reviewer("bob")
    first = pause_agent([SEND_EMAIL], [REFUND], thread_id="moved-on")
    loaded_by_bob = request(first, bob, APPROVE)
    bob_page = client_for(bob)
    bob_form = form_fields(bob_page, first)
    assert http_status(decide(request(first, alice, APPROVE, client_decision_id="a-1"))) == 200
    run_queued()
    [second] = pending("moved-on")
    before = (second.digest, second.run_id, second.payload_json)

    replay = decide(request(first, alice, APPROVE, client_decision_id="a-1"))
    late = decide(loaded_by_bob)
    misdirected = decide(
        request(second, bob, APPROVE, interrupt_id=first.interrupt_id, digest=first.digest)
    )
    late_form = bob_page.post(f"/items/{first.pk}/decide/", {**bob_form, "d0-type": "approve"})
    misdirected_form = bob_page.post(
        f"/items/{second.pk}/decide/", {**bob_form, "d0-type": "approve"}
    )

    assert (http_status(replay), replay.replayed) == (200, True)
    assert (http_status(late), late.code) == (409, "already_decided")
    assert (http_status(misdirected), misdirected.code) == (409, "stale")
    assert (late_form.status_code, misdirected_form.status_code) == (409, 409)
    second.refresh_from_db()
    assert (second.status, (second.digest, second.run_id, second.payload_json)) == (
        "pending",
        before,
    )
    assert [code for *_, code in audit_view(second)] == ["stale", "stale"]
    assert dispatch_view("moved-on") == [{first.interrupt_id: APPROVE}]
    assert run_queued() == []
    assert executed(effects_log, "moved-on") == [("send_email", EMAIL)]


@pytest.mark.django_db(transaction=True)
def test_an_approval_of_a_payload_that_changed_under_the_reviewer_is_refused(
    effects_log: Path,
) -> None:
    """Case 6: bob loads the proposal; the run re-pauses on the same interrupt with other
    arguments before he approves (as a re-executed step would): his form is 409 with a
    reload message, nothing runs, the item stays pending with the new digest."""
    bob = make_reviewer("bob")
    seen = pause_agent(thread_id="drift")
    bob_page = client_for(bob)
    bob_form = form_fields(bob_page, seen)
    changed = {**seen.payload}
    changed["action_requests"] = [
        {**changed["action_requests"][0], "args": {**EMAIL, "to": "everyone@example.com"}}
    ]

    with transaction.atomic():
        on_run_paused(
            Run,
            run=Run.objects.get(id=seen.run_id),
            interrupts=(Interrupt(id=seen.interrupt_id, value=changed, node=seen.node),),
        )
    response = bob_page.post(f"/items/{seen.pk}/decide/", {**bob_form, "d0-type": "approve"})
    run_queued()

    current = ReviewItem.objects.get(pk=seen.pk)
    assert response.status_code == 409
    assert "The proposal changed since you loaded it" in response.content.decode()
    assert (current.status, current.interrupt_id) == ("pending", seen.interrupt_id)
    assert current.digest != seen.digest
    assert "everyone@example.com" in bob_page.get(f"/items/{seen.pk}/").content.decode()
    assert [(a, code) for a, _, code, _ in audit_view(seen)] == [
        ("updated", ""),
        ("refused", "payload_changed"),
    ]
    assert dispatch_view("drift") == []
    assert executed(effects_log, "drift") == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("ending", ["cancelled", "expired", "completed"])
def test_deciding_after_the_item_ended_is_gone_and_runs_nothing(
    ending: str, effects_log: Path
) -> None:
    """Case 7 (a), (b) and completion: 410, audited, no resume, no side effect."""
    alice = make_reviewer("alice")
    item = pause_agent(thread_id=f"ended-{ending}")
    if ending == "cancelled":
        service.cancel_run(item.run_id)
    elif ending == "expired":
        # Its deadline passed with `on_expiry: reject`: the workers' sweep expires it.
        ReviewItem.objects.filter(pk=item.pk).update(
            policy={"on_expiry": "reject"}, due_at=timezone.now() - timedelta(seconds=1)
        )
        assert deadlines.sweep().expired == 1
        run_queued()
    else:
        # An operator script resumes the thread directly (the run then completes without
        # this item's answer).
        service.resume_thread(
            item.thread_id, {item.interrupt_id: {"decisions": [{"type": "reject"}]}}
        )
        run_queued()

    outcome = decide(request(item, alice, APPROVE))
    run_queued()

    assert (http_status(outcome), outcome.code) == (410, "gone")
    assert audit_view(item)[-1] == ("refused", "alice", "gone", "gone")
    assert not Decision.objects.filter(item=item).exists()
    assert executed(effects_log, item.thread_id) == []


@pytest.mark.django_db(transaction=True)
def test_cancel_racing_an_approval_ends_in_exactly_one_terminal_state(effects_log: Path) -> None:
    """Case 7 (c): cancel and approve released together, 40 rounds: either the run is
    cancelled and nothing runs, or the approval stands, the cancel is refused and the
    email goes out once; never both."""
    alice = make_reviewer("alice")
    items = [pause_agent(thread_id=f"cancel-race-{i}") for i in range(40)]
    endings = set()

    def cancel(run_id: Any, head_start: float) -> str:
        # Released together, the cancel (one locking statement) nearly always beat the
        # decision (a few reads before its lock): CI once saw 40 cancels of 40. Every other
        # round gives the decision a head start, so both endings are met; the rounds
        # without one are the race itself.
        time.sleep(head_start)
        try:
            service.cancel_run(run_id)
        except service.RunStateError:
            return "refused"
        return "cancelled"

    for index, item in enumerate(items):
        cancelled, outcome = race(
            lambda run_id=item.run_id, wait=0.05 * (index % 2): cancel(run_id, wait),
            lambda item=item: decide(request(item, alice, APPROVE)),
        )
        run_queued()
        ran = executed(effects_log, item.thread_id)
        if cancelled == "cancelled":
            assert http_status(outcome) == 410 and ran == []
        else:
            assert http_status(outcome) == 200 and ran == [("send_email", EMAIL)]
        endings.add(cancelled)
    assert endings == {"cancelled", "refused"}


@pytest.mark.django_db(transaction=True)
def test_several_pending_interrupts_are_answered_one_item_at_a_time() -> None:
    """Case 8: with two interrupts pending, an answer naming the other interrupt, an
    unknown one, or one of another thread is 409 stale; a command without --interrupt is
    refused; answering one resolves only that one, the other stays pending."""
    alice = make_reviewer("alice")
    pause("pair", {}, thread_id="two")
    other = pause("pair", {}, thread_id="elsewhere")
    left, right = pending("two")

    wrong = [
        decide(request(left, alice, "L", interrupt_id=right.interrupt_id)),
        decide(request(left, alice, "L", interrupt_id=uuid.uuid4().hex)),
        decide(request(left, alice, "L", interrupt_id=other.interrupt_id)),
        decide(request(other, alice, "L", interrupt_id=left.interrupt_id)),
    ]
    with pytest.raises(CommandError, match="2 pending interrupts; choose one with --interrupt"):
        call_command("resume", "two", "--value", '"L"', "--user", "alice")
    with pytest.raises(CommandError, match="has no pending interrupt 'nope'"):
        call_command("resume", "two", "--value", '"L"', "--interrupt", "nope", "--user", "alice")

    assert [(http_status(o), o.code) for o in wrong] == [(409, "stale")] * 4
    assert dispatch_view("two") == []
    assert http_status(decide(request(left, alice, "L"))) == 200
    run_queued()
    right.refresh_from_db()
    assert (right.status, answers("pair", "two")) == ("pending", (["left:L"], [right.interrupt_id]))
    assert http_status(decide(request(right, alice, "R"))) == 200
    run_queued()
    assert answers("pair", "two") == (["left:L", "right:R"], [])


@pytest.mark.django_db(transaction=True)
def test_both_interrupts_decided_at_once_resume_the_thread_once() -> None:
    """Case 8: two reviewers answer the two pending interrupts at the same instant; the
    answers join one resume (or the second resumes what the first left), never lost."""
    alice, bob = make_reviewer("alice"), make_reviewer("bob")
    for round_ in range(15):
        thread = f"both-{round_}"
        pause("pair", {}, thread_id=thread)
        left, right = pending(thread)

        outcomes = decide_race(request(left, alice, "L"), request(right, bob, "R"))
        run_queued()

        assert [http_status(o) for o in outcomes] == [200, 200]
        assert answers("pair", thread) == (["left:L", "right:R"], [])
        assert Run.objects.filter(thread_id=thread, status="failed").count() == 0


ANSWER_IDS = st.lists(st.sampled_from(["left", "right", "unknown", "foreign"]), max_size=4)
VALUES = st.lists(st.text(alphabet="xyz", max_size=3), min_size=4, max_size=4)


@pytest.mark.django_db
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(names=ANSWER_IDS, values=VALUES)
def test_a_resume_map_only_ever_resolves_pending_ids_of_its_thread(
    names: list[str], values: list[str]
) -> None:
    """Case 8 with generated maps handed to the runtime's `resume_thread`: a map naming
    only pending interrupts of the thread resolves exactly those; a map with any other id
    (unknown, another thread's) or no id resolves nothing. Either way the interrupts left
    stay pending, and the other thread is untouched."""
    thread, foreign = uuid.uuid4().hex, uuid.uuid4().hex
    pause("pair", {}, thread_id=thread)
    pause("pair", {}, thread_id=foreign)
    left, right = pending(thread)
    ids = {
        "left": left.interrupt_id,
        "right": right.interrupt_id,
        "unknown": uuid.uuid4().hex,
        "foreign": pending(foreign)[0].interrupt_id,
    }
    answer_map = {ids[name]: value for name, value in zip(names, values, strict=False)}
    names_of = {left.interrupt_id: "left", right.interrupt_id: "right"}

    service.resume_thread(thread, answer_map)
    run_queued()

    resolved, still_pending = answers("pair", thread)
    if answer_map and set(answer_map) <= set(names_of):
        assert sorted(resolved) == sorted(f"{names_of[k]}:{v}" for k, v in answer_map.items())
    else:
        assert resolved is None
    assert set(still_pending) == set(names_of) - set(answer_map) if resolved else set(names_of)
    assert answers("pair", foreign) == (None, [i.interrupt_id for i in pending(foreign)])
