"""The policy simulation leaks nothing hidden and cannot be made to run for minutes
(issue 13, findings 1 and 5; reliability.md, hostile corpus: simulation leaks, ReDoS)."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import pytest
from django.contrib.auth.models import Group, User

from beamweaver_core import patterns
from beamweaver_core.models import ToolExecution
from reviews import simulation
from tests.reviews.conftest import client_for, decide_as, make_reviewer, pause, use_policies

pytestmark = pytest.mark.django_db

SECRET = {"order_id": "FIN-7731-ACME", "amount": 900.0}
CATASTROPHIC = "^(a+)+$"  # exponential backtracking on "aaaa…a!" in a backtracking engine


def _result(html: str) -> str:
    found = re.search(
        r'<section class="card chart"[^>]*id="simulation-result">.*?</section>', html, re.S
    )
    assert found, html
    return found.group(0)


def _rows(result: str) -> dict[str, tuple[int, ...]]:
    """Per tool: calls, reviews now, reviews with the candidate."""
    cells = re.findall(
        r'<code>([^<]+)</code></td><td class="num">(\d+)</td><td class="num">(\d+)</td>'
        r'<td class="num">(\d+)</td>',
        result,
    )
    return {tool: tuple(int(n) for n in counts) for tool, *counts in cells}


def _simulate(client: Any, policy: dict[str, Any]) -> str:
    response = client.post("/simulate/", {"days": "7", "graph": "", "policy": json.dumps(policy)})
    assert response.status_code == 200, response.content.decode()
    return _result(response.content.decode())


@pytest.fixture
def hidden_refund(settings: Any) -> dict[str, User]:
    """A finance-only refund, approved by a finance reviewer and executed, next to an
    e-mail every reviewer may see."""
    use_policies(settings, {"name": "finance", "tool": "issue_refund", "groups": ["finance"]})
    finance = Group.objects.create(name="finance")
    carol = make_reviewer("carol")
    carol.groups.add(finance)
    outsider = make_reviewer("mallory")
    refund = pause(input={"calls": [{"name": "issue_refund", "args": SECRET}]})
    pause()  # a send_email anyone may review
    decide_as(carol, refund, [{"type": "approve"}])
    ToolExecution.objects.create(
        key=uuid.uuid4().hex, thread_id=refund.thread_id, tool="issue_refund", args=SECRET
    )
    return {"carol": carol, "outsider": outsider}


def test_the_simulation_form_lists_no_tool_of_a_hidden_item(hidden_refund: dict[str, User]) -> None:
    outsider = client_for(hidden_refund["outsider"]).get("/simulate/").content.decode()
    finance = client_for(hidden_refund["carol"]).get("/simulate/").content.decode()

    assert "send_email" in outsider
    assert "issue_refund" not in outsider
    assert "issue_refund" in finance


def test_a_matches_condition_is_no_oracle_on_a_hidden_item(hidden_refund: dict[str, User]) -> None:
    """The attack: guess the hidden order id one character at a time with `matches`."""
    client = client_for(hidden_refund["outsider"])

    right = _simulate(client, {"issue_refund": {"when": {"order_id": {"matches": "^FIN-7"}}}})
    wrong = _simulate(client, {"issue_refund": {"when": {"order_id": {"matches": "^XYZ"}}}})
    counted = _simulate(client, {"issue_refund": True, "send_email": True})

    assert right == wrong
    assert _rows(right)["issue_refund"] == (0, 0, 0)
    assert "over 1 recorded call" in counted  # the e-mail only, not the refund nor its run
    finance = _simulate(
        client_for(hidden_refund["carol"]),
        {"issue_refund": {"when": {"order_id": {"matches": "^FIN-7"}}}},
    )
    assert _rows(finance)["issue_refund"] == (1, 1, 1)  # who may see it still simulates it


def test_recorded_calls_are_those_the_user_may_see(hidden_refund: dict[str, User]) -> None:
    from datetime import timedelta

    from django.utils import timezone

    since = timezone.now() - timedelta(days=1)
    outsider, _ = simulation.recorded_calls(hidden_refund["outsider"], since)
    carol, _ = simulation.recorded_calls(hidden_refund["carol"], since)

    assert {c.tool for c in outsider} == {"send_email"}
    assert sorted(c.tool for c in carol) == ["issue_refund", "send_email"]


@pytest.mark.timeout(60)
def test_a_catastrophic_pattern_runs_in_linear_time(alice: User) -> None:
    """`^(a+)+$` on 5,000 `a`s and a `!`: years on a backtracking engine (the red team's
    26 characters took 5.6 s, doubling per character); RE2 answers at once."""
    pause(input={"calls": [{"name": "send_email", "args": {"to": "a" * 5000 + "!"}}]})

    html = _simulate(client_for(alice), {"send_email": {"when": {"to": {"matches": CATASTROPHIC}}}})

    assert "0 reviews instead of 1" in html
    compiled = patterns.compile_pattern(CATASTROPHIC)
    assert type(compiled).__module__.split(".")[0] == patterns.ENGINE == "re2"
    assert (
        simulation.needs_review(
            simulation.Candidate("t", {"x": {"matches": CATASTROPHIC}}), {"x": "a" * 100_000 + "!"}
        )
        is False
    )


def test_a_pattern_re2_cannot_run_is_refused_with_a_clear_error(alice: User) -> None:
    response = client_for(alice).post(
        "/simulate/",
        {
            "days": "7",
            "policy": json.dumps(
                {"send_email": {"when": {"to": {"matches": "@(?!example\\.com$)"}}}}
            ),
        },
    )

    html = response.content.decode()
    assert response.status_code == 422
    assert "send_email.when.to:" in html
    assert "is not a regular expression RE2 accepts" in html
    assert "look-ahead" in html


@pytest.fixture
def alice(db: Any) -> User:
    return make_reviewer("alice")
