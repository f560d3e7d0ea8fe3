"""A live server for the protocol tests: the product's daphne (`manage.py serve`) in a
child process on the tests' database, with its in-process workers and the in-memory
channel layer, serving `/lg`; the tests drive it with the official `langgraph-sdk`.

One server per test module (its workers claim runs from the test database, so it must
not outlive the module's tests). Tests are transactional: the users and tokens they make
are committed, so the server sees them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import AsyncClient, Client

from reviews.models import ApiToken
from tests.protocol.graphs import PROTOCOL_GRAPHS
from tests.reliability.live import live_server

SERVER_ENV = {
    "BEAMWEAVER_GRAPHS": json.dumps(PROTOCOL_GRAPHS),
    "BEAMWEAVER_POLL_SECONDS": "0.2",
    "BEAMWEAVER_LG_POLL_SECONDS": "1",
    "BEAMWEAVER_LEASE_SECONDS": "5",
    "BEAMWEAVER_HEARTBEAT_SECONDS": "1",
}


@pytest.fixture(scope="module")
def lg_url(
    request: pytest.FixtureRequest,
    django_db_setup: Any,
    django_db_blocker: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    """The `/lg` URL of a live server (a module's `SERVER_ENV` adds to its environment)."""
    env = {**SERVER_ENV, **getattr(request.module, "SERVER_ENV", {})}
    with django_db_blocker.unblock(), live_server(tmp_path_factory.mktemp("lg"), **env) as base:
        yield f"{base}/lg"


def api_user(username: str) -> User:
    """A reviewer who only uses API tokens (no password: hashing one is slow)."""
    user = User.objects.create(username=username)
    user.user_permissions.add(Permission.objects.get(codename="review"))
    return user


def token_for(user: User) -> str:
    """A new API token of `user`."""
    return ApiToken.objects.issue(user, "protocol tests")[1]


@pytest.fixture
def alice_token(transactional_db: Any) -> str:
    return token_for(api_user("alice"))


@pytest.fixture
def bob_token(transactional_db: Any) -> str:
    return token_for(api_user("bob"))


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[Any]]]:
    """Child processes a test starts; killed at its end."""
    started: list[subprocess.Popen[Any]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


@pytest.fixture
def protocol_graphs(settings: Any) -> None:
    """The protocol test graphs registered in this process (for tests that serve `/lg`
    through Django's test client and execute runs here, without a live server)."""
    settings.BEAMWEAVER = {
        **settings.BEAMWEAVER,
        "GRAPHS": {**settings.BEAMWEAVER["GRAPHS"], **PROTOCOL_GRAPHS},
    }


def client_of(username: str) -> Client:
    """A test client calling `/lg` with a new token of a new reviewer."""
    return Client(HTTP_X_API_KEY=token_for(api_user(username)))


def async_client_of(token: str) -> AsyncClient:
    """An async test client calling `/lg` with `token` (for streams, read as they come)."""
    # The async client's defaults are the ASGI request's headers, named as given.
    return AsyncClient(X_API_KEY=token)


async def read_stream(response: Any, until: bytes = b"event: end", seconds: float = 20) -> bytes:
    """What a streamed response sent until it closed or sent `until` (at most `seconds`)."""
    sent: list[bytes] = []

    async def read() -> None:
        async for chunk in response.streaming_content:
            sent.append(chunk)
            if until in chunk:
                return

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(read(), seconds)
    return b"".join(sent)


def post(client: Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST `body` to `/lg<path>`; its JSON answer (200 expected)."""
    response = client.post(f"/lg{path}", body, content_type="application/json")
    assert response.status_code == 200, response.content
    return dict(response.json())
