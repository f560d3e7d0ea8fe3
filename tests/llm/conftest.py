"""Fixtures for the chat-model tests: a scripted fake HTTP API, and network guards."""

from __future__ import annotations

import http.server
import json
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic._base_client
import httpx2
import openai._base_client
import pytest

# The project is not pip-installed and, run with `-p no:django`, nothing puts the repository
# root on sys.path (pytest only adds this directory), so `beamweaver_core` would not import.
_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

# The installed SDKs speak httpx2; MockTransport plugs a handler in as their transport.
Reply = httpx2.Response | Exception | Callable[[httpx2.Request], httpx2.Response]

_KEY_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
)


class NetworkAttempts(list[str]):
    """Every real connection or DNS lookup a test tried (each one also raised)."""


class FakeAPI:
    """A fake provider endpoint: answers with `replies` in order and records every request.

    A reply is an `httpx2.Response`, an exception to raise (a transport failure), or a
    function of the request. A request beyond the script fails the test.
    """

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        if not self.replies:
            raise AssertionError(f"unexpected extra request #{len(self.requests)}: {request!r}")
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply(request) if callable(reply) else reply

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies of the requests, in order."""
        return [json.loads(r.content) for r in self.requests]

    @staticmethod
    def json(body: Any, status: int = 200, **headers: str) -> httpx2.Response:
        return httpx2.Response(status, json=body, headers=headers)

    @staticmethod
    def sse(body: str) -> httpx2.Response:
        """A streamed reply; `body` is the server-sent-events text exactly as sent."""
        return httpx2.Response(
            200, content=body.encode(), headers={"content-type": "text/event-stream"}
        )

    def client(self) -> httpx2.Client:
        return httpx2.Client(transport=httpx2.MockTransport(self))

    def async_client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(transport=httpx2.MockTransport(self))


@pytest.fixture
def fake_api() -> type[FakeAPI]:
    return FakeAPI


_LOOPBACK = ("127.0.0.1", "::1")


@pytest.fixture(autouse=True)
def _no_real_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[NetworkAttempts]:
    """Fail any test that tries to reach the network, even if the SDK swallowed the error.

    Only this machine's loopback address is allowed: the recorded-exchange server
    (`replay_server`) listens there."""
    attempts = NetworkAttempts()
    real_connect = socket.socket.connect
    real_getaddrinfo = socket.getaddrinfo

    def guarded_connect(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in _LOOPBACK:
            attempts.append(f"connect {address!r}")
            raise OSError(f"test tried a real network connection to {address!r}")
        return real_connect(self, address)

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host in _LOOPBACK:
            return real_getaddrinfo(host, *args, **kwargs)
        attempts.append(f"getaddrinfo {host!r}")
        raise OSError(f"test tried a real DNS lookup of {host!r}")

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
    yield attempts
    if attempts:
        pytest.fail(f"test tried to use the network: {attempts}")


@pytest.fixture
def network_attempts(_no_real_network: NetworkAttempts) -> NetworkAttempts:
    return _no_real_network


@pytest.fixture(autouse=True)
def _hermetic_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys and endpoints from the developer's shell must not leak into the tests."""
    for name in _KEY_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def retry_delays(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Record the backoff each SDK computes before a retry, and skip the actual sleep."""
    delays: list[float] = []
    for base in (openai._base_client.BaseClient, anthropic._base_client.BaseClient):
        compute = base._calculate_retry_timeout

        def recording(self: Any, *args: Any, _compute: Any = compute, **kwargs: Any) -> float:
            delays.append(_compute(self, *args, **kwargs))
            return 0.0

        monkeypatch.setattr(base, "_calculate_retry_timeout", recording)
    return delays


class ReplayServer:
    """A real HTTP server on 127.0.0.1 that replays recorded provider responses.

    Each POST gets the next recorded exchange of `script` (names of files under
    `recordings/`): `NAME.sse` (the server-sent events exactly as recorded) when the
    request asks to stream, `NAME.json` otherwise. Request bodies are kept in `bodies`.
    """

    def __init__(self, script: list[str]) -> None:
        self.script = list(script)
        self.bodies: list[dict[str, Any]] = []
        replay = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                replay.bodies.append(body)
                if not replay.script:
                    self.send_error(500, "no recorded exchange left")
                    return
                name = replay.script.pop(0)
                streamed = bool(body.get("stream"))
                path = RECORDINGS / f"{name}.{'sse' if streamed else 'json'}"
                payload = path.read_bytes()
                self.send_response(200)
                kind = "text/event-stream" if streamed else "application/json"
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


RECORDINGS = Path(__file__).resolve().parent / "recordings"


@pytest.fixture
def replay_server() -> Iterator[Callable[[list[str]], ReplayServer]]:
    """Start `ReplayServer`s for a test; all are shut down after it."""
    started: list[ReplayServer] = []

    def start(script: list[str]) -> ReplayServer:
        server = ReplayServer(script)
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()
