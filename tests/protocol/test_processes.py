"""`/lg` on several processes, as on several machines: the web process runs no graph, a
separate worker process executes the runs, and the hints between them go over real
Redis. Streams still see every step, the model's tokens live, and a stream that reaches
the server's byte limit ends and is resumed by the SDK with `Last-Event-ID`."""

from __future__ import annotations

import json
import signal
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client

from tests.protocol.conftest import SERVER_ENV as BASE_ENV
from tests.protocol.graphs import PROTOCOL_GRAPHS
from tests.reliability.live import live_server
from tests.support.processes import REDIS_URL, child_env, start_worker

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]

PREFIX = f"bwlg{uuid.uuid4().hex[:8]}"
SHARED = {
    "REDIS_URL": REDIS_URL,
    "BEAMWEAVER_CHANNEL_PREFIX": PREFIX,
    "BEAMWEAVER_GRAPHS": json.dumps(PROTOCOL_GRAPHS),
    "BEAMWEAVER_POLL_SECONDS": "0.2",
    "BEAMWEAVER_TEST_STEP_SECONDS": "0.1",
}
LIMIT = 1000
"""The byte limit of the second web process (the first keeps the default, 4 MB)."""


@pytest.fixture(scope="module")
def gate(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The file the "steps" graph's third step waits for (tests/support/graphs.py): a run
    of it is surely still running until the test creates it, however loaded the machine."""
    return tmp_path_factory.mktemp("lg-gate") / "open"


@pytest.fixture(scope="module")
def lg_urls(
    django_db_setup: Any,
    django_db_blocker: Any,
    tmp_path_factory: pytest.TempPathFactory,
    gate: Path,
) -> Iterator[tuple[str, str]]:
    """Two web processes that only serve (no workers), the second with a tiny stream byte
    limit, and one worker process, on Redis. (A stream cut just before its run ends is not
    resumed by the SDK, which asks the run's status first: so only the byte-limit test,
    whose run waits at the gate, meets the limit.)"""
    logs = tmp_path_factory.mktemp("lg-processes")
    web = {
        **BASE_ENV,
        **SHARED,
        "BEAMWEAVER_WORKER_MODE": "external",
        # Long polls: a stream that sees a step at once saw it through a Redis hint.
        "BEAMWEAVER_LG_POLL_SECONDS": "30",
    }
    with django_db_blocker.unblock():
        # Quiet: the worker's output goes to a pipe nobody reads while it runs.
        worker = start_worker(
            child_env(**SHARED, BEAMWEAVER_LOG_LEVEL="WARNING", BEAMWEAVER_TEST_GATE=str(gate)),
            "--threads",
            "2",
        )
        try:
            with (
                live_server(logs, **web) as base,
                live_server(logs, **web, BEAMWEAVER_LG_STREAM_MAX_BYTES=str(LIMIT)) as cut,
            ):
                yield f"{base}/lg", f"{cut}/lg"
        finally:
            worker.send_signal(signal.SIGTERM)
            try:
                worker.wait(15)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait(5)


def test_a_run_executed_by_another_process_streams_through_redis(
    lg_urls: tuple[str, str], alice_token: str
) -> None:
    lg = get_sync_client(url=lg_urls[0], api_key=alice_token)
    parts = [
        (p.event, p.data)
        for p in lg.runs.stream(
            None,
            "chat",
            input={"messages": [{"type": "human", "content": "hi"}]},
            stream_mode=["messages-tuple", "updates"],
        )
    ]
    tokens = [data[0]["content"] for event, data in parts if event == "messages"]
    assert len(tokens) > 1 and "".join(tokens) == "Hello there friend"
    assert [e for e, _ in parts if e == "updates"] and parts[-1] == ("end", None)


def test_a_stream_past_the_byte_limit_ends_and_is_resumed_from_the_last_event(
    lg_urls: tuple[str, str], alice_token: str, gate: Path
) -> None:
    lg_url = lg_urls[1]
    lg = get_sync_client(url=lg_url, api_key=alice_token)
    thread_id = lg.threads.create()["thread_id"]
    headers = {"x-api-key": alice_token}
    body = {"assistant_id": "steps", "input": {"log": []}, "stream_mode": ["debug", "values"]}
    with httpx.Client(base_url=lg_url, headers=headers, timeout=60) as http:
        with http.stream("POST", f"/threads/{thread_id}/runs/stream", json=body) as cut:
            text = "".join(cut.iter_text())
            location = cut.headers["Location"]
        ids = [line[4:] for line in text.splitlines() if line.startswith("id: ")]
        assert "event: end" not in text and ids  # cut at the limit, while the run runs
        assert len(text.encode()) < LIMIT + 4096
        gate.touch()  # the run goes on to its end
        with http.stream("GET", location, headers={"Last-Event-ID": ids[-1]}) as rest:
            tail = "".join(rest.iter_text())
    later = [line[4:] for line in tail.splitlines() if line.startswith("id: ")]
    seen = [tuple(int(n) for n in i.split("-")) for i in ids + later]
    assert seen == sorted(set(seen))  # nothing twice, nothing out of order
    assert "event: metadata" not in tail

    # The SDK does the same by itself: it follows Location with Last-Event-ID.
    run = lg.runs.create(thread_id, "steps", input={"log": []}, stream_mode=["debug", "values"])
    whole = list(lg.runs.join_stream(thread_id, run["run_id"]))
    assert whole[-1].event == "end"
    values = [p.data["log"] for p in whole if p.event == "values"]
    assert values[-1][-6:] == [0, 1, 2, 3, 4, 5]
    keys = [tuple(int(n) for n in p.id.split("-")) for p in whole[:-1] if p.id]
    assert keys == sorted(set(keys))
