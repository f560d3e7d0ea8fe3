"""`threads.search` and `threads.count` show each thread as `threads.get` does.

A listing reads the latest checkpoints of all its threads at once (`lookup.snapshots`,
one checkpointer statement: `test_query_counts.py`), `threads.get` reads its one thread
alone (`lookup.snapshot`); both must show the same thing for a thread in any state. Served
through Django's test client, the runs executed in this process (`run_next`).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tests.protocol.conftest import client_of, post
from tests.reviews.conftest import run_next

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("protocol_graphs")]


def _started(client: Client, body: dict[str, Any], *, run: bool = True) -> str:
    """A new thread with a run of `body` started on it (and executed, if `run`)."""
    thread = str(post(client, "/threads", {})["thread_id"])
    post(client, f"/threads/{thread}/runs", body)
    if run:
        run_next()
    return thread


def _answered(client: Client, thread: str, assistant: str, resume: Any) -> None:
    post(
        client,
        f"/threads/{thread}/runs",
        {"assistant_id": assistant, "command": {"resume": resume}},
    )
    run_next()


def test_a_searched_thread_is_shown_as_threads_get_shows_it_in_every_state() -> None:
    """Idle with values, paused on a question, on a tool review (with messages), inside a
    subgraph, at a breakpoint of its run, with one of two parallel questions answered,
    failed, finished after a resume, busy with a queued run, never run: the search's
    entry of each equals its `threads.get`, and so does a `values` search's."""
    client = client_of("alice")
    threads = {
        "idle": _started(client, {"assistant_id": "linear", "input": {"log": []}}),
        "paused": _started(client, {"assistant_id": "ask", "input": {"amount": 3}}),
        "tool review": _started(
            client,
            {"assistant_id": "mailer", "input": {"messages": [{"role": "user", "content": "hi"}]}},
        ),
        "subgraph": _started(client, {"assistant_id": "nested_ask", "input": {"log": []}}),
        "breakpoint": _started(
            client, {"assistant_id": "linear", "input": {"log": []}, "interrupt_before": ["two"]}
        ),
        "half answered": _started(client, {"assistant_id": "parallel", "input": {}}),
        "failed": _started(client, {"assistant_id": "explode", "input": {}}),
        "resumed": _started(client, {"assistant_id": "ask", "input": {"amount": 4}}),
        "never run": str(post(client, "/threads", {})["thread_id"]),
    }
    asked = _get(client, threads["half answered"])["interrupts"].values()
    left = next(q["id"] for (q,) in asked if q["value"] == "left?")
    _answered(client, threads["half answered"], "parallel", {left: "L"})
    _answered(client, threads["resumed"], "ask", "yes")
    threads["busy"] = _started(client, {"assistant_id": "linear", "input": {"log": []}}, run=False)

    shown = {name: _get(client, thread) for name, thread in threads.items()}
    assert {name: t["status"] for name, t in shown.items()} == {
        "idle": "idle",
        "paused": "interrupted",
        "tool review": "interrupted",
        "subgraph": "interrupted",
        "breakpoint": "interrupted",
        "half answered": "interrupted",
        "failed": "error",
        "resumed": "idle",
        "never run": "idle",
        "busy": "busy",
    }
    searched = _searched(client, {"limit": 100})
    assert {name: searched[thread] for name, thread in threads.items()} == shown
    assert shown["breakpoint"]["values"] == {"log": ["one"]}
    assert [len(i) for i in shown["half answered"]["interrupts"].values()] == [1]
    assert shown["tool review"]["values"]["messages"][0]["content"] == "hi"

    finished = _searched(client, {"values": {"log": ["one", "two", "three"]}})
    assert finished == {threads["idle"]: shown["idle"]}


def _get(client: Client, thread: str) -> dict[str, Any]:
    response = client.get(f"/lg/threads/{thread}")
    assert response.status_code == 200, response.content
    return dict(response.json())


def _searched(client: Client, body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    response = client.post("/lg/threads/search", body, content_type="application/json")
    assert response.status_code == 200, response.content
    return {t["thread_id"]: t for t in response.json()}
