"""The web process restarted under open `/lg` streams, with real processes: daphne (web
only) and a worker process on Redis and the tests' Postgres. Clients of the official SDK
stream two runs (`runs.stream`, `runs.join_stream`); daphne is killed (SIGKILL, or
SIGTERM: a clean shutdown) and started again on the same port while the runs go on in
the worker. The clients reconnect by themselves (`join_stream` to the response's
`Location` with `Last-Event-ID`) and get exactly the rest of each stream: every stored
event once, ids only forwards, one `metadata`, ending with `end`."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_sync_client

from tests.protocol.test_faults import (
    Collector,
    checked_ids,
    layer,
    ledger_lines,
    stored,
    web_env,
    worker_env,
)
from tests.reliability.live import LiveServer
from tests.support.processes import REDIS_URL, start_worker
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]


def ran(ledger: Path, step: int) -> int:
    """How many runs have executed `step`."""
    return ledger_lines(ledger).count(f"step:{step}")


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM], ids=["kill", "term"])
def test_clients_resume_their_streams_across_a_web_process_restart(
    signum: int, tmp_path: Path, alice_token: str, processes: list[subprocess.Popen[Any]]
) -> None:
    shared = layer(REDIS_URL)
    ledger, gate = tmp_path / "ledger", tmp_path / "gate"
    env = worker_env(
        shared,
        BEAMWEAVER_TEST_LEDGER=str(ledger),
        BEAMWEAVER_TEST_GATE=str(gate),  # steps past the second wait for it
        BEAMWEAVER_TEST_STEP_SECONDS="0.3",
    )
    server = LiveServer(tmp_path, **web_env(shared))
    try:
        server.start()
        processes.append(start_worker(env, "--threads", "2"))
        lg = get_sync_client(url=f"{server.base}/lg", api_key=alice_token)
        streamed, joined = lg.threads.create()["thread_id"], lg.threads.create()["thread_id"]
        run = lg.runs.create(joined, "steps", input={"log": []}, stream_mode=["updates"])
        clients = [
            Collector(
                lg.runs.stream(streamed, "steps", input={"log": []}, stream_mode=["updates"])
            ),
            Collector(lg.runs.join_stream(joined, run["run_id"])),
        ]
        for client in clients:
            client.start()
        wait_for(lambda: ran(ledger, 2) == 2 and all(len(c.parts) >= 3 for c in clients), 30)

        server.kill(signum)
        gate.touch()
        wait_for(lambda: ran(ledger, 4) == 2, 30)  # the runs go on without a web process
        server.start()  # the same port: the clients' reconnections reach it
        for client, thread_id in zip(clients, (streamed, joined), strict=True):
            parts = client.finish(90)
            assert parts[-1].event == "end"
            assert [p.event for p in parts].count("metadata") == 1
            updates = [next(iter(p.data)) for p in parts if p.event == "updates"]
            assert updates == [f"s{i}" for i in range(6)]  # each step once, in order
            checked_ids(parts)
            # Exactly the run's stream: what a client joining now from the start gets.
            run_id = lg.runs.list(thread_id)[0]["run_id"]
            whole = stored(list(lg.runs.join_stream(thread_id, run_id)))
            assert [p.id for p in whole] == [p.id for p in stored(parts)]
            assert [p.data for p in whole] == [p.data for p in stored(parts)]
    finally:
        server.stop()
