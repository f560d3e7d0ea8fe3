"""Queries per serving path (issue 16 point 1), so that CI catches a regression without
timing anything: an interrupt (the start request; the claim and the run to its pause
with the review item, its audit row and its notification), a live inbox push, and a
decision POST. Each limit is the count measured when the test was written (transactions'
BEGIN and COMMIT included; the checkpoint's own writes go through the engine's
connection and are counted by `bench` as commits per step instead)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from reviews.live.rounds import render_round
from reviews.models import AuditEvent, ReviewItem
from tests.reviews.conftest import client_for, form_post, make_reviewer, pause, run_next
from tests.reviews.test_live_views import inbox_of

# Transactional: the hooks that run on commit run (and are counted) as on a server.
pytestmark = pytest.mark.django_db(transaction=True)

START_POST = 7
"""Session, user, the permissions and groups (one statement), the run and its thread."""
RUN_TO_PAUSE = 16
"""The claim; the outcome with the thread's status (one statement: 17 when the thread's
was its own) and its event; the item's locking
read, the policies' generation (they are compiled once per change, `reviews.policy_cache`:
one statement, as reading the admin's policies was when there are none; two fewer with
policies whose groups and users used to be prefetched), the item, the audit row; the notification's audience (the reviewers
with their groups and whether they manage, one statement; an outbox row per configured
channel: none here); the next waiting run of the thread. Run webhooks are off, so the
outcome looks none up."""
INBOX_PUSH = 4
"""One socket's re-check; the page's size and the four capped counts (one statement);
the page's ids; the rows of the push (the page's rows and the filter menus are not read
for a push)."""
INBOX_PAGE = 7
"""Session, user, the permissions and groups (one statement); the page's size and the
four capped counts (one statement); the page's ids, its rows; the filter menus."""
DECISION_POST = 23
"""Session, user, the permissions and groups (one statement); the item among those the
user sees; the decision service (the locked run the item paused on, taken from the item
read, its locked thread and the locked item among those the user sees, in
`runtime.locks`' order, the resume run, the decision naming
it in one insert, the item, the audit row; the DECIDED notification's audience is the
item's holder, assignee and requester, none here, so no reviewer is read for it: 24
when it was read anyway); then the panel it answers with
(the item as the service left it, not read again; its decision, the next pending item,
its viewers)."""


@pytest.fixture
def serving(django_assert_max_num_queries: Any) -> Any:
    alice = make_reviewer("alice")
    make_reviewer("bob")
    pause()  # caches warm, as on a running server
    client = client_for(alice)
    client.get("/")
    return alice, client, django_assert_max_num_queries


def test_an_interrupt_costs_a_bounded_number_of_queries(serving: Any) -> None:
    alice, client, at_most = serving
    data = {"graph": "tool_review", "input_json": json.dumps({})}
    with at_most(START_POST):
        assert client.post("/runs/new/", data).status_code == 302
    with at_most(RUN_TO_PAUSE):
        run_next()
    item = ReviewItem.objects.latest("pk")
    assert AuditEvent.objects.filter(item=item, action="created").exists()
    page = inbox_of(alice)
    with at_most(INBOX_PUSH):
        (frames,) = render_round([(page, {item.pk: True})])
    assert f'id="item-row-{item.pk}"' in frames[0]


def test_an_inbox_page_costs_a_bounded_number_of_queries(serving: Any) -> None:
    _alice, client, at_most = serving
    item = pause()
    with at_most(INBOX_PAGE):
        response = client.get("/")
    assert f'id="item-row-{item.pk}"' in response.content.decode()


def test_a_decision_post_costs_a_bounded_number_of_queries(serving: Any) -> None:
    _alice, client, at_most = serving
    item = pause()
    fields = form_post(item, **{"d0-type": "approve"})
    with at_most(DECISION_POST):
        response = client.post(f"/items/{item.pk}/decide/", fields, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert ReviewItem.objects.get(pk=item.pk).status == ReviewItem.Status.DECIDED
