"""Clients that read their `/lg` streams slowly or never, with real processes (daphne, a
worker process, Redis, the tests' Postgres).

The streams are of finished runs that stored ~10 MB each (`bulky`: 20 values of 400 KB),
which are never cut by size (the SDKs do not resume a finished run's stream), so only
backpressure keeps the server's memory bounded: daphne's `send` waits while a client's
connection is full (`beamweaver_core.backpressure`), and a stream encodes at most
`WINDOW_BYTES` (plus one stored event) ahead of it. A client that takes nothing for
`SEND_STALL_SECONDS` is dropped; a slow client that does read gets every event.
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
from langgraph_sdk.client import SyncLangGraphClient

from tests.protocol.fault_graphs import BLOB_BYTES, BULKY_STEPS, RECURSION_LIMIT
from tests.protocol.test_faults import layer, web_env, worker_env
from tests.reliability.live import LiveServer
from tests.support.processes import REDIS_URL, start_worker
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]

STALL_SECONDS = 9
SMALL_BUFFER = 4096
READER_BUFFER = 64 * 1024
UNREAD = 5


def slow_client(base: str, token: str) -> SyncLangGraphClient:
    """The official SDK on connections with a fixed receive buffer, far smaller than a
    stream (so the server's connection is full whenever the client stops reading)."""
    transport = httpx.HTTPTransport(
        socket_options=[(socket.SOL_SOCKET, socket.SO_RCVBUF, READER_BUFFER)]
    )
    http = httpx.Client(
        base_url=f"{base}/lg", transport=transport, headers={"x-api-key": token}, timeout=60
    )
    return SyncLangGraphClient(http)


def never_read(base: str, token: str, thread_id: str, run_id: str) -> socket.socket:
    """Join a run's stream on a socket that is then not read."""
    host, port = base.removeprefix("http://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SMALL_BUFFER)
    sock.connect((host, int(port)))
    sock.sendall(
        (
            f"GET /lg/threads/{thread_id}/runs/{run_id}/stream?stream_mode=values HTTP/1.1\r\n"
            f"Host: {host}\r\nx-api-key: {token}\r\n\r\n"
        ).encode()
    )
    return sock


def held_open(server: psutil.Process, sockets: list[socket.socket]) -> list[int]:
    """The client ports of `sockets` whose connections `server` still holds open."""
    ports = {sock.getsockname()[1] for sock in sockets}
    return [
        c.raddr.port
        for c in server.net_connections(kind="tcp")
        if c.raddr and c.raddr.port in ports and c.status == psutil.CONN_ESTABLISHED
    ]


def drained(sock: socket.socket) -> bytes:
    """Everything the socket still receives until the server closes it."""
    sock.settimeout(STALL_SECONDS * 3)
    chunks = []
    try:
        while chunk := sock.recv(1 << 16):
            chunks.append(chunk)
    except ConnectionResetError:
        pass
    return b"".join(chunks)


@pytest.fixture
def bulky_runs(tmp_path: Path, alice_token: str, processes: list[subprocess.Popen[Any]]) -> Any:
    """A live server (web only) and six finished `bulky` runs: (server, [(thread, run)])."""
    shared = layer(REDIS_URL)
    server = LiveServer(
        tmp_path,
        **{
            **web_env(shared),
            "BEAMWEAVER_LG_STREAM_MAX_BYTES": str(4 * 1024 * 1024),  # the default
            "BEAMWEAVER_SEND_STALL_SECONDS": str(STALL_SECONDS),
        },
    )
    server.start()
    try:
        processes.append(start_worker(worker_env(shared), "--threads", "3"))
        lg = slow_client(server.base, alice_token)
        runs = []
        for _ in range(UNREAD + 1):
            thread_id = lg.threads.create()["thread_id"]
            runs.append(
                (
                    thread_id,
                    lg.runs.create(
                        thread_id, "bulky", input={}, config={"recursion_limit": RECURSION_LIMIT}
                    )["run_id"],
                )
            )
        wait_for(lambda: all(lg.runs.get(t, r)["status"] == "success" for t, r in runs), 120)
        yield server, runs
    finally:
        server.stop()


def test_a_slow_reader_gets_the_whole_stream(bulky_runs: Any, alice_token: str) -> None:
    server, runs = bulky_runs
    lg = slow_client(server.base, alice_token)
    thread_id, run_id = runs[0]
    parts = []
    for part in lg.runs.join_stream(thread_id, run_id, stream_mode="values"):
        parts.append(part)
        time.sleep(0.3)  # reads, slowly (the server's send waits for it)
    # All of it, as a client reading at once gets it: every step's value, then `end`.
    fast = list(lg.runs.join_stream(thread_id, run_id, stream_mode="values"))
    assert [(p.event, p.id, p.data) for p in parts] == [(p.event, p.id, p.data) for p in fast]
    assert parts[-1].event == "end"
    steps = [p.data["n"] for p in parts if p.event == "values" and "n" in p.data]
    assert sorted(set(steps)) == list(range(BULKY_STEPS))
    assert len(parts) > BULKY_STEPS and all(
        len(p.data["blob"]) == BLOB_BYTES + 4 for p in parts if p.event == "values" and p.data
    )


def test_clients_that_never_read_cannot_grow_the_server_without_bound(
    bulky_runs: Any, alice_token: str
) -> None:
    """Five clients join ~10 MB streams and read nothing. Without backpressure daphne
    buffered everything the streams made (growing by the streams' size) and kept them
    forever; now each holds about one stored event's worth, and is dropped after the
    stall time."""
    server, runs = bulky_runs
    (warm_thread, warm_run), *unread = runs
    # Warm the server's code paths on one such stream, read whole.
    whole = b"".join(
        httpx.get(
            f"{server.base}/lg/threads/{warm_thread}/runs/{warm_run}/stream?stream_mode=values",
            headers={"x-api-key": alice_token},
            timeout=60,
        ).iter_bytes()
    )
    assert len(whole) > BULKY_STEPS * BLOB_BYTES and whole.rstrip().endswith(b"data: null")
    daphne = psutil.Process(server.proc.pid)  # type: ignore[union-attr]
    before = daphne.memory_info().rss

    sockets = [never_read(server.base, alice_token, t, r) for t, r in unread]
    try:
        grown = []
        for _ in range(2):  # while the server makes what it would make for them
            time.sleep(STALL_SECONDS / 3)
            grown.append(daphne.memory_info().rss - before)
        # The server drops each once its send has waited the stall time; that clock starts
        # at the send's first wait, which under load comes seconds after the connect. Read
        # before the drop and the client takes the whole stream after all (an earlier
        # version slept a fixed time, then read, and so failed on a loaded machine).
        wait_for(
            lambda: not held_open(daphne, sockets),
            STALL_SECONDS * 3,
            "the server to drop the clients that read nothing",
            every=0.5,
        )
        received = [drained(sock) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()
    held = UNREAD * BULKY_STEPS * BLOB_BYTES
    # Measured (5 clients, 50 MB held): 25 MB after 3 s, 48 after 8 s without backpressure;
    # ~8.5 MB with it.
    assert max(grown) < held / 4, f"daphne grew {[round(g / 2**20, 1) for g in grown]} MB"
    for got in received:  # what was in flight (or nothing: a reset may discard it)
        assert b"event: end" not in got and len(got) < len(whole) / 4
