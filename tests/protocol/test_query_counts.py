"""Statements per protocol request of an HTTP HITL round trip (create a thread, start a
run to its interrupt, resume it, read each outcome), so that CI catches a regression
without timing anything (issue 15's round-trip benchmark is in `bench/`). Each limit is
the count measured when the test was written, BEGIN and COMMIT included; the
checkpointer's own reads go through its own cursors and are not in Django's log (the
searches' are counted at the driver: `SEARCH_CHECKPOINT_READS`)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from beamweaver_core.protocol import waiting
from tests.protocol.conftest import client_of, post
from tests.reviews.conftest import run_next
from tests.support.transactions import counting_transactions

# Transactional: the hooks that run on commit run (and are counted) as on a server.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("protocol_graphs")]

CALLER = 1
"""Every authenticated request: the token with its user, the user's permissions and its
groups (what they may see), in one statement (`reviews.token_check`)."""
THREAD_CREATE = 5
"""The caller; whether the thread exists; the insert (BEGIN, COMMIT). A thread just
created has no runs to read for its status."""
RUN_START = 11
"""The caller; the visible thread with whether it is busy (one statement); then one
transaction (BEGIN, COMMIT; `start_run` opens no savepoint in the caller's): the thread
locked, whether the caller still sees it and its latest run (whether the caller may start
work on it: none here; asked under the lock, which a pause that hides the thread takes
first), the thread's upsert (which adds the assistant's metadata keys it lacks), its
queued runs, the run and its protocol record. The answer shows the record just stored,
without reading it again."""
RUN_RESUME = 21
"""The caller; the visible thread with whether it is busy and its latest run's options
(the graph's breakpoints, for its pending interrupts), in one statement; then one
transaction: the decision service (the item with the run it paused on; the run, its
thread's queued run, its thread, then the item among those the caller sees, locked in
`runtime.locks`' order; the queued run and the thread locked again, its latest run's
context and options, the resume run, the decision naming it in one insert, the item's
status, the audit row; the DECIDED notification names only the run's requester, who is
the caller here and is not told of their own decision, so no audience is read (it was: 22);
no replayed decision or approval is looked up for the answer's own new id) and the resume
run's protocol record;
after the commit, that record as stored. The answer service and `resume_thread` open no
savepoint of their own (the decision service's two stay), and the resume run comes back
from the decision service rather than being read again."""
JOIN = 5
"""The caller; the visible thread and the run (stopped already here, so not read again:
`waiting.until_stopped`); the caller and the visible thread again (the thread may have
hidden from them meanwhile), with its latest run's options, for its values. It read the
stopped run again: 6."""

WAIT = 14
"""`runs.wait` on a thread: its run's start (`RUN_START`); the run again (stopped); the
caller and the visible thread again (the thread may have hidden from them meanwhile),
with its latest run's options, for its values, as `JOIN` ends. It read the thread again,
then the thread and its options once more for the result: 16."""

GET_STATE = 2
"""`threads.get_state`: the caller; the visible thread with its latest run's options (the
graph's breakpoints, for its pending interrupts), in one statement; the checkpoint is the
checkpointer's read. It read the options in a statement of their own: 3."""

THREAD_GET = 2
"""`threads.get`: the caller; the visible thread with whether it is busy and its latest
run's options (the graph's breakpoints, for its pending interrupts), in one statement;
the checkpoint is the checkpointer's read. It asked whether the thread was busy, read
its latest run and then that run's options in statements of their own: 5."""
THREAD_GET_FAILED = 3
"""`threads.get` of a failed thread: `THREAD_GET` and its latest run, whose error is the
thread's. It was 5 too."""
THREAD_SEARCH = 3
"""`threads.search`, whatever the page's size: the caller; the visible threads with
whether each is busy and its latest run's options, in one statement; the latest runs of
those that failed, in one (none when none failed); each checkpoint is the checkpointer's
read. It read each thread's busy state, latest run and options in statements of their
own: 2 + 3 per thread."""
SEARCH_CHECKPOINT_READS = 1
"""`threads.search` and `threads.count`'s statements on the checkpointer's tables, whatever
the number of threads shown: the latest checkpoint of every thread, with its pending
writes and the blobs of its values, in one statement (`Checkpointer.load_heads`). These go
through the checkpointer's own cursors, which Django's query log does not see: counted at
the driver (`counting_transactions`). It read each thread's checkpoint in a statement of
its own: 1 per thread with a graph (1 for a page of one, 6 for a page of six)."""
RUN_LIST = 3
"""`runs.list`, whatever the page's size: the caller; the visible thread; its runs with
their protocol records, in one statement. It read each run's record in a statement of
its own: 2 + 1 + 1 per run."""
JOIN_STREAM_OPEN = 3
"""`runs.join_stream` up to its first byte: the caller; the visible thread; the run with its
protocol record, in one statement (`lookup.run(..., record=True)`, as `runs.get`). It read
the record in a statement of its own: 4."""

RUN_GET = 3
"""`runs.get`: the caller; the visible thread; the run with its protocol record, in one
statement. It read the record in a statement of its own: 4."""


def _after_a_worker_ran_it(until_stopped: Callable[..., Any]) -> Callable[..., Any]:
    """`waiting.until_stopped`, once a worker on a thread (and a connection) of its own
    executed the queued run: the worker's statements are not the request's."""

    async def waited(*args: Any, **kwargs: Any) -> Any:
        def work() -> None:
            try:
                run_next()
            finally:
                connections.close_all()

        worker = threading.Thread(target=work)
        worker.start()
        worker.join()
        return await until_stopped(*args, **kwargs)

    return waited


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


ROUND_TRIP = 78
"""Every statement of one durable HITL round trip as a server serves it: the requests
above (create, start, join, resume, join; the start locks the thread and reads its
latest run, to know whether the caller may start work on it) and the worker's two runs
(`run_next`: the claim with the thread's head, the fenced steps, the outcome's transaction
(the outcome with its thread's status in one statement) with the pause's review item,
audit row and notification audience, or the end's pending items; run webhooks are off
here, so no outcome looks one up), BEGIN and COMMIT included; the checkpointer's own
statements are not in Django's log, its commits are. It was 79 while the decision's
maker was read as its notification's audience."""
ROUND_TRIP_COMMITS = 10
"""The round trip's commits: the thread; the start; each run's claim, its steps (one
each: the pause, the resume and the last node) and its outcome; the decision with its
resume run."""


def test_a_durable_hitl_round_trip_with_its_worker_costs_a_bounded_number_of_statements(
    counted: Any,
) -> None:
    client, _ = counted
    with CaptureQueriesContext(connection) as queries:
        thread = post(client, "/threads", {})["thread_id"]
        started = post(client, f"/threads/{thread}/runs", {"assistant_id": "ask", "input": {}})
        run_next()
        client.get(f"/lg/threads/{thread}/runs/{started['run_id']}/join").json()
        resumed = post(
            client, f"/threads/{thread}/runs", {"assistant_id": "ask", "command": {"resume": "yes"}}
        )
        run_next()
        done = client.get(f"/lg/threads/{thread}/runs/{resumed['run_id']}/join").json()
    assert done == {"answer": "yes", "log": ["finish"]}
    statements = [q["sql"] for q in queries.captured_queries]
    commits = sum(1 for sql in statements if sql.strip().upper() == "COMMIT")
    assert len(statements) <= ROUND_TRIP and commits <= ROUND_TRIP_COMMITS


def test_reading_a_paused_threads_state_costs_a_bounded_number_of_statements(
    counted: Any,
) -> None:
    client, at_most = counted
    thread = post(client, "/threads", {})["thread_id"]
    post(client, f"/threads/{thread}/runs", {"assistant_id": "ask", "input": {}})
    run_next()
    with at_most(GET_STATE):
        state = client.get(f"/lg/threads/{thread}/state").json()
    assert state["next"] == ["ask"]
    assert [i["value"]["question"] for i in state["interrupts"]] == ["Approve?"]


def test_reading_a_paused_thread_costs_a_bounded_number_of_statements(counted: Any) -> None:
    client, at_most = counted
    thread = post(client, "/threads", {})["thread_id"]
    post(client, f"/threads/{thread}/runs", {"assistant_id": "ask", "input": {}})
    run_next()
    with at_most(THREAD_GET):
        shown = client.get(f"/lg/threads/{thread}").json()
    assert (shown["status"], shown["error"]) == ("interrupted", None)
    assert [i["value"]["question"] for (i,) in shown["interrupts"].values()] == ["Approve?"]


def test_reading_a_failed_thread_costs_a_bounded_number_of_statements(counted: Any) -> None:
    client, at_most = counted
    thread = post(client, "/threads", {})["thread_id"]
    post(client, f"/threads/{thread}/runs", {"assistant_id": "explode", "input": {}})
    run_next()
    with at_most(THREAD_GET_FAILED):
        shown = client.get(f"/lg/threads/{thread}").json()
    assert (shown["status"], shown["error"]) == (
        "error",
        "the tool backend is down (api_key=[redacted])",
    )


def test_a_thread_search_costs_the_same_statements_for_one_thread_or_several(
    counted: Any,
) -> None:
    client, at_most = counted
    for graph in ("ask", "ask", "explode"):
        thread = post(client, "/threads", {})["thread_id"]
        post(client, f"/threads/{thread}/runs", {"assistant_id": graph, "input": {}})
        run_next()

    def search(limit: int) -> list[tuple[str, str | None]]:
        with at_most(THREAD_SEARCH):
            found = client.post(
                "/lg/threads/search", {"limit": limit}, content_type="application/json"
            ).json()
        return [(t["status"], t["error"]) for t in found]

    failed = ("error", "the tool backend is down (api_key=[redacted])")
    assert search(1) == [failed]
    assert search(3) == [failed, ("interrupted", None), ("interrupted", None)]


def test_a_thread_search_reads_the_checkpoints_of_one_thread_or_several_in_one_statement(
    counted: Any,
) -> None:
    """The checkpointer's statements, counted at the driver: a page of one thread, a page
    of six, a `values` filter that reads every thread it may match, and a count with one
    all read their checkpoints in one statement."""
    client, _ = counted
    for graph in ("ask", "linear", "explode", "ask", "linear", "explode"):
        thread = post(client, "/threads", {})["thread_id"]
        post(client, f"/threads/{thread}/runs", {"assistant_id": graph, "input": {}})
        run_next()

    def checkpoint_reads(path: str, body: dict[str, Any]) -> tuple[Any, int]:
        with counting_transactions() as sent:
            answer = client.post(f"/lg/threads/{path}", body, content_type="application/json")
        assert answer.status_code == 200, answer.content
        return answer.json(), len([s for s in sent.statements if "bw_checkpoint" in s])

    one, reads = checkpoint_reads("search", {"limit": 1})
    assert (len(one), reads) == (1, SEARCH_CHECKPOINT_READS)
    six, reads = checkpoint_reads("search", {"limit": 6})
    assert (len(six), reads) == (6, SEARCH_CHECKPOINT_READS)
    done = {"log": ["one", "two", "three"]}
    matched, reads = checkpoint_reads("search", {"values": done})
    assert ([t["values"] for t in matched], reads) == ([done, done], SEARCH_CHECKPOINT_READS)
    assert checkpoint_reads("count", {"values": done}) == (2, SEARCH_CHECKPOINT_READS)


def test_listing_a_threads_runs_costs_the_same_statements_for_one_run_or_several(
    counted: Any,
) -> None:
    client, at_most = counted
    thread = post(client, "/threads", {})["thread_id"]
    first = post(client, f"/threads/{thread}/runs", {"assistant_id": "ask", "input": {}})
    run_next()
    second = post(
        client, f"/threads/{thread}/runs", {"assistant_id": "ask", "command": {"resume": "yes"}}
    )
    run_next()

    def listed(limit: int) -> list[tuple[str, str, str]]:
        with at_most(RUN_LIST):
            found = client.get(f"/lg/threads/{thread}/runs?limit={limit}").json()
        return [(r["run_id"], r["status"], r["assistant_id"]) for r in found]

    ask = first["assistant_id"]
    assert listed(1) == [(second["run_id"], "success", ask)]
    assert listed(2) == [(second["run_id"], "success", ask), (first["run_id"], "success", ask)]


def test_reading_a_run_costs_a_bounded_number_of_statements(counted: Any) -> None:
    client, at_most = counted
    thread = post(client, "/threads", {})["thread_id"]
    started = post(client, f"/threads/{thread}/runs", {"assistant_id": "ask", "input": {}})
    run_next()
    with at_most(RUN_GET):
        shown = client.get(f"/lg/threads/{thread}/runs/{started['run_id']}").json()
    assert shown == {**started, "status": "success", "updated_at": shown["updated_at"]}


async def _read(response: Any) -> bytes:
    """A streamed answer whole (its body is written as the run stops, in this thread)."""
    return b"".join([chunk async for chunk in response.streaming_content])


def test_a_runs_wait_costs_a_bounded_number_of_statements(
    counted: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    client, at_most = counted
    thread = post(client, "/threads", {})["thread_id"]
    monkeypatch.setattr(waiting, "until_stopped", _after_a_worker_ran_it(waiting.until_stopped))

    with at_most(WAIT):
        response = client.post(
            f"/lg/threads/{thread}/runs/wait",
            {"assistant_id": "ask", "input": {}},
            content_type="application/json",
        )
        body = async_to_sync(_read)(response)

    assert response.status_code == 200
    assert b'"question":"Approve?"' in body


def test_opening_a_join_stream_costs_a_bounded_number_of_statements(counted: Any) -> None:
    client, at_most = counted
    thread = post(client, "/threads", {})["thread_id"]
    started = post(client, f"/threads/{thread}/runs", {"assistant_id": "ask", "input": {}})
    run_next()
    with at_most(JOIN_STREAM_OPEN):
        response = client.get(f"/lg/threads/{thread}/runs/{started['run_id']}/stream")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/event-stream")
