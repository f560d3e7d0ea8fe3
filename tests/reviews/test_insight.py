"""Insight: the analytics page (numbers and server-rendered SVG charts) and the policy
simulation that replays recorded tool calls against a candidate `interrupt_on`."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.utils import timezone

from beamweaver_core.models import Thread, ToolExecution
from reviews import analytics, simulation
from reviews.models import Decision, ReviewItem
from tests.reviews.conftest import (
    SECRET,
    client_for,
    decide_as,
    make_reviewer,
    pause,
    use_policies,
)

pytestmark = pytest.mark.django_db

REFUND = {"calls": [{"name": "issue_refund", "args": {"order_id": "7", "amount": 500.0}}]}


def answer(item: ReviewItem, user: User, decisions: list[dict[str, Any]]) -> Any:
    return decide_as(user, item, decisions)


def backdate(item: ReviewItem, minutes: int) -> None:
    ReviewItem.objects.filter(pk=item.pk).update(
        created_at=timezone.now() - timedelta(minutes=minutes)
    )


def test_the_report_counts_pending_ages_timings_and_the_mix(alice: User, bob: User) -> None:
    old, recent, fast, slow = pause(), pause(), pause(), pause(input=REFUND)
    backdate(old, 5 * 60)
    backdate(fast, 10)
    backdate(slow, 120)
    answer(fast, alice, [{"type": "approve"}])
    answer(slow, bob, [{"type": "reject", "message": "no"}])

    report = analytics.report(ReviewItem.objects.all(), 30)

    assert report.pending == 2
    assert dict(report.age_buckets) == {
        "under 1 hour": 1,
        "1 to 4 hours": 0,
        "4 to 24 hours": 1,
        "1 to 3 days": 0,
        "over 3 days": 0,
    }
    assert 5 * 3600 - 5 < report.oldest_pending < 5 * 3600 + 60  # type: ignore[operator]
    timing = {t.name: t for t in report.by_reviewer}
    assert (timing["alice"].count, round(timing["alice"].median / 60)) == (1, 10)
    assert round(timing["bob"].median / 60) == 120
    assert {t.name for t in report.by_tool} == {"send_email", "issue_refund"}
    assert report.mix == [("approve", 1), ("reject", 1)]
    assert report.decided == 2 and recent.is_pending


def test_expiries_are_counted_apart_from_decisions(settings: Any) -> None:
    use_policies(settings, {"name": "p", "deadline_seconds": 60, "on_expiry": "reject"})
    item = pause()
    from reviews import deadlines

    deadlines.sweep(timezone.now() + timedelta(minutes=2))

    report = analytics.report(ReviewItem.objects.all(), 7)
    assert (report.expired, report.decided) == (1, 0)
    assert report.mix == [("expired", 1)]
    assert report.per_day[-1][2] == 1
    assert not Decision.objects.filter(item=item).exists()


def test_percentile_interpolates() -> None:
    assert analytics.percentile([10, 20, 30, 40], 0.5) == 25
    assert analytics.percentile([], 0.9) == 0.0
    assert analytics.percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.9) == pytest.approx(9.1)


def test_the_analytics_page_shows_svg_charts_with_escaped_labels(alice: User) -> None:
    hostile = {"calls": [{"name": "<script>x</script>", "args": {}}]}
    item = pause(input=hostile)
    pause()
    answer(item, alice, [{"type": "approve"}])

    response = client_for(alice).get("/analytics/?days=7")

    html = response.content.decode()
    assert response.status_code == 200
    assert html.count("<svg ") >= 4
    assert "<script>x</script>" not in html
    assert "&lt;script&gt;x&lt;/script&gt;" in html
    assert "<strong>1</strong><span>pending now</span>" in html


def test_the_analytics_page_has_clear_empty_states(alice: User) -> None:
    html = client_for(alice).get("/analytics/").content.decode()

    assert "Nothing is pending." in html
    assert "No decisions in the last 30 days." in html
    assert "<svg " not in html


def test_analytics_only_count_items_the_user_may_see(settings: Any) -> None:
    use_policies(settings, {"name": "p", "groups": ["finance"]})
    pause()
    outsider = make_reviewer("outsider")

    html = client_for(outsider).get("/analytics/").content.decode()

    assert "<strong>0</strong><span>pending now</span>" in html


# Simulation


def test_a_candidate_policy_is_parsed_with_clear_problems() -> None:
    good, none = simulation.parse_policy('{"a": true, "b": false, "c": {"when": {"x": 1}}}')
    _, problems = simulation.parse_policy(
        '{"a": 3, "b": {"when": {"x": {"~": 1}}}, "c": {"nope": 1}, "d": {"when": {"x": {"matches": "("}}}}'
    )

    assert none == [] and set(good) == {"a", "c"}
    assert problems[0] == "a: use true, false or an object, not 3."
    assert problems[1].startswith("b.when.x: unknown operator '~'")
    assert problems[2].startswith("c: unknown option(s) ['nope']")
    assert problems[3].startswith("d.when.x: '(' is not a regular expression")
    assert simulation.parse_policy("[]")[1] == [
        'The policy must be a JSON object of tool names, like {"send_email": true}.'
    ]


@pytest.mark.parametrize(
    ("when", "args", "expected"),
    [
        ({"amount": {">": 100}}, {"amount": 250}, True),
        ({"amount": {">": 100}}, {"amount": 50}, False),
        ({"amount": {">": 100, "<=": 1000}}, {"amount": 5000}, False),
        ({"to": {"matches": "@example\\.com$"}}, {"to": "a@example.com"}, True),
        ({"to": "a@b.c"}, {"to": "a@b.c"}, True),
        ({"meta.region": {"in": ["eu", "us"]}}, {"meta": {"region": "eu"}}, True),
        ({"tags": {"contains": "urgent"}}, {"tags": ["urgent"]}, True),
        ({"note": {"exists": False}}, {}, True),
    ],
)
def test_conditions(when: dict[str, Any], args: dict[str, Any], expected: bool) -> None:
    assert simulation.needs_review(simulation.Candidate("t", when), args) is expected


def test_a_condition_that_cannot_be_evaluated_is_undecidable() -> None:
    candidate = simulation.Candidate("t", {"amount": {">": 100}})

    with pytest.raises(simulation.Undecidable):
        simulation.needs_review(candidate, {"amount": "lots"})
    with pytest.raises(simulation.Undecidable):
        simulation.needs_review(candidate, {})


def _executed(thread_id: str, tool: str, args: dict[str, Any]) -> None:
    Thread.objects.get_or_create(id=thread_id, defaults={"graph": "tool_review"})
    ToolExecution.objects.create(
        key=uuid.uuid4().hex, thread_id=thread_id, tool=tool, args=args, status="done"
    )


def test_replaying_reviews_and_unreviewed_executions(alice: User) -> None:
    approved = pause(input=REFUND)
    rejected = pause(
        input={"calls": [{"name": "issue_refund", "args": {"order_id": "8", "amount": 20.0}}]}
    )
    answer(approved, alice, [{"type": "approve"}])
    _executed(approved.thread_id, "issue_refund", {"order_id": "7", "amount": 500.0})
    answer(rejected, alice, [{"type": "reject", "message": "no"}])
    _executed("t-free", "issue_refund", {"order_id": "9", "amount": 150.0})
    _executed("t-free", "lookup_order", {"order_id": "9"})

    calls, truncated = simulation.recorded_calls(alice, timezone.now() - timedelta(days=1))
    candidates, _ = simulation.parse_policy('{"issue_refund": {"when": {"amount": {">": 100}}}}')
    result = simulation.simulate(candidates, calls)

    assert not truncated
    by_tool = {t.tool: t for t in result.tools}
    assert (by_tool["issue_refund"].calls, by_tool["issue_refund"].reviewed_now) == (3, 2)
    assert by_tool["issue_refund"].would_review == 2
    assert (by_tool["lookup_order"].calls, by_tool["lookup_order"].would_review) == (1, 0)
    assert (result.calls, result.reviewed_now, result.would_review) == (4, 2, 2)


def test_the_simulation_page_replays_and_charts(alice: User) -> None:
    pause(input=REFUND)
    _executed("t-free", "lookup_order", {"order_id": "9"})
    client = client_for(alice)

    page = client.get("/simulate/")
    response = client.post(
        "/simulate/",
        {
            "days": "7",
            "graph": "",
            "policy": json.dumps({"issue_refund": True, "lookup_order": True}),
        },
    )

    assert "&quot;issue_refund&quot;: true" in page.content.decode()
    html = response.content.decode()
    assert response.status_code == 200
    assert "Result: 2 reviews instead of 1, over 2 recorded calls" in html
    assert "<svg " in html


def test_the_simulation_page_shows_policy_problems_inline(alice: User) -> None:
    response = client_for(alice).post("/simulate/", {"days": "7", "policy": '{"x": {"when": 5}}'})

    assert response.status_code == 422
    assert (
        "x: &#x27;when&#x27; must be an object of argument conditions." in response.content.decode()
    )


def _would_review(user: User, pattern: str) -> int:
    calls, _ = simulation.recorded_calls(user, timezone.now() - timedelta(days=1))
    candidates, problems = simulation.parse_policy(
        json.dumps({"send_email": {"when": {"body": {"matches": pattern}}}})
    )
    assert problems == []
    (result,) = simulation.simulate(candidates, calls).tools
    return result.would_review


def test_a_condition_sees_a_withheld_value_as_the_page_shows_it(alice: User) -> None:
    """A `matches` on the raw arguments told a reviewer whether a guessed prefix of a
    secret withheld from them was right; the recorded calls (reviewed or only executed)
    are replayed as the pages show them."""
    args = {"to": "ops@example.com", "subject": "key", "body": f"use {SECRET} please"}
    pause(input={"calls": [{"name": "send_email", "args": args}]})
    _executed("t-free", "send_email", args)

    assert _would_review(alice, "sk-live0123") == 0
    assert _would_review(alice, r"^use \[redacted\] please$") == 2


def test_a_reviewer_who_may_reveal_secrets_simulates_on_the_real_arguments(alice: User) -> None:
    alice.user_permissions.add(Permission.objects.get(codename="reveal_secrets"))
    alice = User.objects.get(pk=alice.pk)
    args = {"to": "ops@example.com", "subject": "key", "body": f"use {SECRET} please"}
    pause(input={"calls": [{"name": "send_email", "args": args}]})

    assert _would_review(alice, "sk-live0123") == 1
