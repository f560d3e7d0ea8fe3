"""Decisions under concurrency (reliability.md cases 1 to 4): reviewers racing on one item,
double submits and reused client decision ids.

Every test checks three views: the audit log (every attempt, the losers refused), the
dispatch view (what the resume runs deliver to the graph: the winner only), and the side
effects the agent's tools actually had (one per logical action, keyed by idempotency key).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from beamweaver_core.checkpoint import PostgresCheckpointer
from beamweaver_core.models import Run
from beamweaver_core.runtime import registry
from reviews.http_statuses import http_status
from reviews.models import Decision, ReviewItem
from reviews.services import decide
from tests.reliability.support import (
    APPROVE,
    EMAIL,
    REJECT,
    assert_each_action_ran_at_most_once,
    audit_view,
    bindings,
    decide_race,
    dispatch_view,
    executed,
    forked_checkpoints,
    pause_agent,
    race,
    request,
    run_queued,
)
from tests.reviews.conftest import client_for, make_reviewer

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS = 120
EDIT = {
    "decisions": [
        {"type": "edit", "edited_action": {"name": "send_email", "args": {**EMAIL, "priority": 2}}}
    ]
}


def tool_messages(thread_id: str) -> list[tuple[str, str]]:
    graph = registry.compiled_graph("ledger_agent", PostgresCheckpointer())
    state = graph.get_state({"configurable": {"thread_id": thread_id}})
    return [(m.status or "", m.content) for m in state.values["messages"] if m.role == "tool"]


def test_two_reviewers_approving_at_the_same_instant_get_exactly_one_acceptance(
    effects_log: Path,
) -> None:
    """Case 1: in every barrier round one approval wins, the other is 409 naming the
    winner; one decision, one resume, and the email goes out once."""
    alice, bob = make_reviewer("alice"), make_reviewer("bob")
    items = [pause_agent(thread_id=f"instant-{i}") for i in range(ROUNDS)]
    winners = {}

    for item in items:
        outcomes = decide_race(request(item, alice, APPROVE), request(item, bob, APPROVE))
        assert sorted(http_status(o) for o in outcomes) == [200, 409]
        winner = "alice" if http_status(outcomes[0]) == 200 else "bob"
        loser = outcomes[1] if winner == "alice" else outcomes[0]
        assert loser.code == "already_decided"
        assert loser.message.startswith(f"Already decided by {winner} at ")
        winners[item.pk] = winner
    run_queued()

    for item in items:
        other = "bob" if winners[item.pk] == "alice" else "alice"
        assert audit_view(item) == [
            ("decided", winners[item.pk], "accepted", "approve"),
            ("refused", other, "already_decided", "already_decided"),
        ]
        assert dispatch_view(item.thread_id) == [{item.interrupt_id: APPROVE}]
        assert [len(b) for b in bindings(item.thread_id)] == [64]  # bound to what runs
        assert executed(effects_log, item.thread_id) == [("send_email", EMAIL)]
    assert Decision.objects.count() == ROUNDS
    assert Run.objects.filter(kind="resume", status="succeeded").count() == ROUNDS
    assert_each_action_ran_at_most_once(effects_log)
    assert forked_checkpoints() == []
    assert {"alice", "bob"} == set(winners.values())  # the barrier really races


def test_conflicting_decisions_never_both_take_effect(effects_log: Path) -> None:
    """Case 2: approve against reject, barrier-released. The audit shows both attempts
    (the loser refused), the run receives the winner only, and the thread ends with
    either one execution or one rejection message, never both."""
    alice, bob = make_reviewer("alice"), make_reviewer("bob")
    items = [pause_agent(thread_id=f"conflict-{i}") for i in range(60)]
    won = {}

    for item in items:
        approve, reject = decide_race(request(item, alice, APPROVE), request(item, bob, REJECT))
        assert sorted((http_status(approve), http_status(reject))) == [200, 409]
        won[item.pk] = "approve" if http_status(approve) == 200 else "reject"
    run_queued()

    for item in items:
        winner = won[item.pk]
        answer, refused_by = (APPROVE, "bob") if winner == "approve" else (REJECT, "alice")
        assert audit_view(item) == [
            ("decided", "alice" if winner == "approve" else "bob", "accepted", winner),
            ("refused", refused_by, "already_decided", "already_decided"),
        ]
        assert dispatch_view(item.thread_id) == [{item.interrupt_id: answer}]
        ran = executed(effects_log, item.thread_id)
        [(status, content)] = tool_messages(item.thread_id)
        if winner == "approve":
            assert (ran, status) == ([("send_email", EMAIL)], "success")
        else:
            assert (ran, status) == ([], "error")
            assert content == REJECT["decisions"][0]["message"]
    assert set(won.values()) == {"approve", "reject"}
    assert_each_action_ran_at_most_once(effects_log)


def test_a_double_submit_is_one_decision_sequentially_and_concurrently(
    effects_log: Path,
) -> None:
    """Case 3: the same client decision id sent five times one after another, and five
    times at once: the first is accepted, every repeat returns that outcome again
    (replayed), nothing is resumed or executed twice."""
    alice = make_reviewer("alice")
    one_by_one, at_once = pause_agent(thread_id="double-1"), pause_agent(thread_id="double-2")

    sequential = [
        decide(request(one_by_one, alice, APPROVE, client_decision_id="click")) for _ in range(5)
    ]
    concurrent = decide_race(
        *(request(at_once, alice, APPROVE, client_decision_id="clack") for _ in range(5))
    )
    run_queued()

    for outcomes, item in ((sequential, one_by_one), (concurrent, at_once)):
        assert [http_status(o) for o in outcomes] == [200] * 5
        assert sorted(o.replayed for o in outcomes) == [False, True, True, True, True]
        assert len({o.decision.pk for o in outcomes}) == 1
        assert audit_view(item) == [("decided", "alice", "accepted", "approve")]
        assert dispatch_view(item.thread_id) == [{item.interrupt_id: APPROVE}]
        assert executed(effects_log, item.thread_id) == [("send_email", EMAIL)]
    assert_each_action_ran_at_most_once(effects_log)


def form_fields(html: str) -> dict[str, str]:
    return dict(re.findall(r'<input type="hidden" name="(\w+)"[^>]* value="([^"]*)"', html))


def test_a_double_click_on_the_page_submits_once(effects_log: Path) -> None:
    """Case 3 through HTTP: three tabs of one reviewer post the same form at once; each
    gets the accepted outcome (a redirect to the item), one decision is stored."""
    alice = make_reviewer("alice")
    item = pause_agent(thread_id="double-click")
    clients = [client_for(alice) for _ in range(3)]
    fields = form_fields(clients[0].get(f"/items/{item.pk}/").content.decode())
    data = {**fields, "d0-type": "approve"}

    responses = race(*(lambda c=c: c.post(f"/items/{item.pk}/decide/", data) for c in clients))
    run_queued()

    assert [r.status_code for r in responses] == [302, 302, 302]
    assert Decision.objects.filter(item=item).count() == 1
    assert audit_view(item) == [("decided", "alice", "accepted", "approve")]
    assert executed(effects_log, item.thread_id) == [("send_email", EMAIL)]


def test_two_reviewers_posting_the_form_at_once_get_one_acceptance(effects_log: Path) -> None:
    """Case 1 through HTTP: two reviewers' pages post approve at the same instant; one
    is redirected to the decided item, the other sees 409 naming the winner."""
    users = [make_reviewer("alice"), make_reviewer("bob")]
    clients = [client_for(u) for u in users]
    items = [pause_agent(thread_id=f"http-race-{i}") for i in range(12)]
    for item in items:
        url = f"/items/{item.pk}/decide/"
        forms = [form_fields(c.get(f"/items/{item.pk}/").content.decode()) for c in clients]

        responses = race(
            *(
                lambda c=c, f=f, url=url: c.post(url, {**f, "d0-type": "approve"})
                for c, f in zip(clients, forms, strict=True)
            )
        )

        assert sorted(r.status_code for r in responses) == [302, 409]
        refused = next(r for r in responses if r.status_code == 409).content.decode()
        winner = users[[r.status_code for r in responses].index(302)].username
        assert f"Already decided by {winner} at " in refused
    run_queued()
    assert Decision.objects.count() == 12
    assert len(executed(effects_log)) == 12
    assert_each_action_ran_at_most_once(effects_log)


def test_a_client_decision_id_reused_with_another_body_is_refused(effects_log: Path) -> None:
    """Case 4: approve, then an edit under the same client decision id: 422, the approval
    stands and the original arguments are what runs."""
    alice = make_reviewer("alice")
    item = pause_agent(thread_id="reused-id")

    first = decide(request(item, alice, APPROVE, client_decision_id="form-1"))
    second = decide(request(item, alice, EDIT, client_decision_id="form-1"))
    run_queued()

    assert (http_status(first), http_status(second), second.code) == (200, 422, "key_reused")
    assert audit_view(item) == [
        ("decided", "alice", "accepted", "approve"),
        ("refused", "alice", "key_reused", "key_reused"),
    ]
    assert dispatch_view(item.thread_id) == [{item.interrupt_id: APPROVE}]
    assert executed(effects_log, item.thread_id) == [("send_email", EMAIL)]


def test_a_reused_client_decision_id_racing_with_two_bodies_keeps_one(effects_log: Path) -> None:
    """Case 4, concurrently: the same id with an approval and an edit at the same
    instant; one is accepted, the other is 422, and what runs is the accepted one."""
    alice = make_reviewer("alice")
    results: list[Any] = []
    for round_ in range(20):
        item = pause_agent(thread_id=f"reused-race-{round_}")
        approve, edit = decide_race(
            request(item, alice, APPROVE, client_decision_id=f"id-{round_}"),
            request(item, alice, EDIT, client_decision_id=f"id-{round_}"),
        )
        assert sorted((http_status(approve), http_status(edit))) == [200, 422]
        results.append((item, APPROVE if http_status(approve) == 200 else EDIT))
    run_queued()

    for item, answer in results:
        assert dispatch_view(item.thread_id) == [{item.interrupt_id: answer}]
        args = answer["decisions"][0].get("edited_action", {}).get("args", EMAIL)
        assert executed(effects_log, item.thread_id) == [("send_email", args)]
    assert_each_action_ran_at_most_once(effects_log)


def test_a_client_decision_id_reused_on_another_item_is_refused(effects_log: Path) -> None:
    """Case 4: an id already spent on one item cannot decide another one."""
    alice = make_reviewer("alice")
    first, second = pause_agent(thread_id="spent-1"), pause_agent(thread_id="spent-2")
    decide(request(first, alice, APPROVE, client_decision_id="spent"))

    outcome = decide(request(second, alice, APPROVE, client_decision_id="spent"))
    run_queued()

    assert (http_status(outcome), outcome.code) == (422, "key_reused")
    assert ReviewItem.objects.get(pk=second.pk).status == "pending"
    assert dispatch_view(second.thread_id) == []
    assert executed(effects_log, second.thread_id) == []
