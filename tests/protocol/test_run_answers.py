"""The run a run request answers with is the run as stored: the same as `runs.get` gives
for it afterwards, for a start (whose protocol record the answer shows without reading it
again) and for a resume (whose run comes back from the decision service)."""

from __future__ import annotations

import pytest

from tests.protocol.conftest import client_of, post
from tests.reviews.conftest import run_next

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("protocol_graphs")]


def test_a_started_and_a_resumed_run_are_answered_as_stored() -> None:
    client = client_of("alice")
    thread = post(client, "/threads", {})["thread_id"]
    started = post(
        client,
        f"/threads/{thread}/runs",
        {
            "assistant_id": "ask",
            "input": {"amount": 3},
            "metadata": {"tag": "start"},
            "stream_mode": "updates",
            "multitask_strategy": "reject",
        },
    )
    assert started["status"] == "pending" and started["metadata"] == {"tag": "start"}
    assert started["kwargs"]["stream_mode"] == ["updates"]
    assert client.get(f"/lg/threads/{thread}/runs/{started['run_id']}").json() == started
    run_next()

    resumed = post(
        client,
        f"/threads/{thread}/runs",
        {"assistant_id": "ask", "command": {"resume": "yes"}, "metadata": {"tag": "resume"}},
    )
    assert resumed["run_id"] != started["run_id"] and resumed["status"] == "pending"
    assert resumed["metadata"] == {"tag": "resume"}
    assert resumed["kwargs"]["command"] == {"resume": "yes"}
    assert client.get(f"/lg/threads/{thread}/runs/{resumed['run_id']}").json() == resumed
