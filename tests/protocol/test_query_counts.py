"""Statements per protocol request of an HTTP HITL round trip (create a thread, start a
run to its interrupt, resume it, read each outcome), so that CI catches a regression
without timing anything (issue 15's round-trip benchmark is in `bench/`). Each limit is
the count measured when the test was written, BEGIN and COMMIT included; the
checkpointer's own reads go through its connection and are not counted here. `runs.wait`
is a run creation (counted here) and then a join (counted here)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.protocol.conftest import client_of, post
from tests.reviews.conftest import run_next

# Transactional: the hooks that run on commit run (and are counted) as on a server.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("protocol_graphs")]

CALLER = 1
"""Every authenticated request: the token with its user, the user's permissions and its
groups (what they may see), in one statement (`reviews.token_check`)."""
THREAD_CREATE = 5
"""The caller; whether the thread exists; the insert (BEGIN, COMMIT). A thread just
created has no runs to read for its status."""
RUN_START = 13
"""The caller; the visible thread; its latest run (whether the caller may start work on
it: none here); whether it is busy; the thread's upsert, its queued
runs, the run and its protocol record, in one transaction (BEGIN, savepoint, COMMIT).
The answer shows the record just stored, without reading it again."""
RUN_RESUME = 28
"""The caller; the visible thread, its latest run's options (the graph's breakpoints),
whether it is busy; then one transaction: the decision service (the item, who may decide
it, the run, the locked item, approvals, decisions, the resume run, the decision naming
it in one insert, the item's status, the audit row, the DECIDED notification's audience)
and the resume run's protocol record; the record again for the answer (an earlier
answer's may stand). The answer service opens no savepoint of its own, and the resume run
comes back from the decision service rather than being read again."""
JOIN = 8
"""The caller; the visible thread and the run; the run again (stopped); the caller and
the visible thread again (the thread may have hidden from them meanwhile); the thread and
its latest run's options for its values."""


@pytest.fixture
def counted(django_assert_max_num_queries: Any) -> Any:
    client = client_of("alice")
    post(client, "/threads", {})  # caches warm, as on a running server
    return client, django_assert_max_num_queries


def test_a_protocol_hitl_round_trip_costs_a_bounded_number_of_statements(counted: Any) -> None:
    client, at_most = counted
    with at_most(THREAD_CREATE):
        thread = post(client, "/threads", {})["thread_id"]
    with at_most(RUN_START):
        started = post(client, f"/threads/{thread}/runs", {"assistant_id": "ask", "input": {}})
    run_next()
    with at_most(JOIN):
        paused = client.get(f"/lg/threads/{thread}/runs/{started['run_id']}/join").json()
    assert [i["value"]["question"] for i in paused["__interrupt__"]] == ["Approve?"]
    with at_most(RUN_RESUME):
        resumed = post(
            client,
            f"/threads/{thread}/runs",
            {"assistant_id": "ask", "command": {"resume": "yes"}},
        )
    run_next()
    with at_most(JOIN):
        done = client.get(f"/lg/threads/{thread}/runs/{resumed['run_id']}/join").json()
    assert done == {"answer": "yes", "log": ["finish"]}
