"""`/lg` streams under faults, with real processes: a web process that only serves, worker
processes that run the graphs, Redis between them. A worker killed mid-run while a client
streams it (another worker takes the run over; the client's event ids never go backwards
and a `join_stream` with `Last-Event-ID` misses nothing); Redis killed under an open
stream (it falls back to reading stored events)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_sync_client

from beamweaver_core.models import Run
from tests.protocol.conftest import SERVER_ENV as BASE_ENV
from tests.protocol.fault_graphs import FAULT_GRAPHS
from tests.protocol.graphs import PROTOCOL_GRAPHS
from tests.reliability.live import live_server
from tests.support.processes import REDIS_URL, child_env, start_worker
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]

GRAPHS = json.dumps({**PROTOCOL_GRAPHS, **FAULT_GRAPHS})
STREAM_LIMIT = 64 * 1024
FAST = {
    "BEAMWEAVER_LEASE_SECONDS": "2",
    "BEAMWEAVER_HEARTBEAT_SECONDS": "0.4",
    "BEAMWEAVER_POLL_SECONDS": "0.2",
    "BEAMWEAVER_GRAPHS": GRAPHS,
}


def layer(redis_url: str) -> dict[str, str]:
    return {"REDIS_URL": redis_url, "BEAMWEAVER_CHANNEL_PREFIX": f"bwf{uuid.uuid4().hex[:8]}"}


def web_env(shared: dict[str, str]) -> dict[str, str]:
    return {
        **BASE_ENV,
        **shared,
        **FAST,
        "BEAMWEAVER_WORKER_MODE": "external",
        "BEAMWEAVER_LG_STREAM_MAX_BYTES": str(STREAM_LIMIT),
        "BEAMWEAVER_LG_FALLBACK_POLL_SECONDS": "0.3",
    }


def worker_env(shared: dict[str, str], **extra: str) -> dict[str, str]:
    return child_env(**shared, **FAST, BEAMWEAVER_LOG_LEVEL="WARNING", **extra)


def ledger_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def key(event_id: str) -> tuple[int, int]:
    seq, _, index = event_id.partition("-")
    return int(seq), int(index)


class Collector(threading.Thread):
    """Streams a run with the SDK in the background, keeping every part."""

    def __init__(self, parts: Iterator[Any]) -> None:
        super().__init__(daemon=True)
        self.source = parts
        self.parts: list[Any] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            for part in self.source:
                self.parts.append(part)
        except BaseException as exc:
            self.error = exc

    def finish(self, timeout: float) -> list[Any]:
        self.join(timeout)
        assert not self.is_alive(), "the stream did not end"
        assert self.error is None, self.error
        return self.parts


def stored(parts: list[Any]) -> list[Any]:
    """The parts that are stored events (the SDK gives `end` the last id seen, as SSE
    does for an event without one)."""
    return [p for p in parts if p.id and p.event not in ("metadata", "end")]


def checked_ids(parts: list[Any]) -> list[tuple[int, int]]:
    """The stored events' ids in order; they must only go forwards, each once."""
    ids = [key(p.id) for p in stored(parts)]
    assert ids == sorted(set(ids)), ids
    return ids


def test_a_worker_killed_mid_run_hands_the_stream_to_another_without_losing_events(
    tmp_path: Path, alice_token: str, processes: list[subprocess.Popen[Any]]
) -> None:
    shared = layer(REDIS_URL)
    ledger = tmp_path / "ledger"
    env = worker_env(shared, BEAMWEAVER_TEST_LEDGER=str(ledger), BEAMWEAVER_TEST_STEP_SECONDS="0.3")
    with live_server(tmp_path, **web_env(shared)) as base:
        lg = get_sync_client(url=f"{base}/lg", api_key=alice_token)
        thread_id = lg.threads.create()["thread_id"]
        processes.append(start_worker(env, "--threads", "1"))
        run = lg.runs.create(thread_id, "steps", input={"log": []}, stream_mode=["updates"])
        streaming = Collector(lg.runs.join_stream(thread_id, run["run_id"]))
        streaming.start()
        wait_for(lambda: "step:2" in ledger_lines(ledger), 30)
        os.kill(processes[0].pid, signal.SIGKILL)
        processes.append(start_worker(env, "--threads", "1"))
        parts = streaming.finish(60)

        assert parts[-1].event == "end"
        updates = [next(iter(p.data)) for p in parts if p.event == "updates"]
        assert updates == [f"s{i}" for i in range(6)]  # each step once, in order
        ids = checked_ids(parts)
        record = Run.objects.get(id=run["run_id"])
        assert record.status == "succeeded" and record.attempts == 2  # taken over
        assert lg.threads.get_state(thread_id)["values"]["log"] == [0, 1, 2, 3, 4, 5]

        # Resumed from any event seen, the stream sends exactly what came after it.
        with_ids = stored(parts)
        for cut in (0, len(with_ids) // 2, len(with_ids) - 1):
            rest = list(
                lg.runs.join_stream(thread_id, run["run_id"], last_event_id=with_ids[cut].id)
            )
            assert [key(p.id) for p in stored(rest)] == ids[cut + 1 :]
            assert [p.data for p in stored(rest)] == [p.data for p in with_ids[cut + 1 :]]
            assert rest[-1].event == "end"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_redis_killed_under_an_open_stream_falls_back_to_stored_events(
    tmp_path: Path, alice_token: str, processes: list[subprocess.Popen[Any]]
) -> None:
    port = _free_port()
    redis = subprocess.Popen(
        ["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    processes.append(redis)
    shared = layer(f"redis://127.0.0.1:{port}/0")
    ledger = tmp_path / "ledger"
    env = worker_env(shared, BEAMWEAVER_TEST_LEDGER=str(ledger), BEAMWEAVER_TEST_STEP_SECONDS="0.3")
    with live_server(tmp_path, **web_env(shared)) as base:
        lg = get_sync_client(url=f"{base}/lg", api_key=alice_token)
        processes.append(start_worker(env, "--threads", "1"))
        thread_id = lg.threads.create()["thread_id"]
        streaming = Collector(
            lg.runs.stream(thread_id, "steps", input={"log": []}, stream_mode=["updates"])
        )
        streaming.start()
        wait_for(lambda: "step:1" in ledger_lines(ledger), 30)
        redis.kill()
        redis.wait(10)
        parts = streaming.finish(60)

    assert parts[-1].event == "end"
    assert [next(iter(p.data)) for p in parts if p.event == "updates"] == [
        f"s{i}" for i in range(6)
    ]
    checked_ids(parts)
