"""How fast one user may open live sockets (`reviews.live.handshakes`,
`BEAMWEAVER["RATE_SOCKETS"]`), driven with `WebsocketCommunicator` against the real
consumers and database: past the limit a handshake is accepted, told the seconds left in
the window and closed with 4430, before any query or slot of its own; other users, the
next window and a failing cache let sockets in."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connection

from beamweaver_core import ratelimit
from reviews.live import slots
from tests.reviews.test_consumers import reviewer
from tests.reviews.test_live_slots import communicator, opened
from tests.support.caches import BrokenCache

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def two_a_minute(settings: Any, fresh_counters: list[float]) -> list[float]:
    """Two handshakes per user a minute; the clock stands at a window's start (the list
    holds the time, to move it)."""
    settings.BEAMWEAVER = {**settings.BEAMWEAVER, "RATE_SOCKETS": "2/60"}
    return fresh_counters


async def answer(socket: WebsocketCommunicator) -> Any:
    """What an accepted socket is sent first: the page (its snapshot), or the refusal as
    the frame that says how long to wait and the close code that follows it."""
    message = await socket.receive_output(timeout=5)
    if message["type"] == "websocket.send" and message["text"].startswith("{"):
        return json.loads(message["text"]), await socket.receive_output(timeout=5)
    return "page" if message["type"] == "websocket.send" else message


def refused(seconds: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The answer of a handshake past the limit, `seconds` before its window ends (4430:
    `reviews.live.base.CLOSE_TOO_FAST`, as the page script knows it)."""
    return {"type": "retry", "seconds": seconds}, {"type": "websocket.close", "code": 4430}


@asynccontextmanager
async def database_thread_statements() -> AsyncIterator[list[str]]:
    """The SQL run meanwhile on the process's one database thread, where the auth
    middleware reads a handshake's session and user and the consumers check it."""
    found: list[str] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        found.append(sql)
        return execute(sql, params, many, context)

    await database_sync_to_async(lambda: connection.execute_wrappers.append(record))()
    try:
        yield found
    finally:
        await database_sync_to_async(lambda: connection.execute_wrappers.remove(record))()


def tables_read(statements: list[str]) -> list[str]:
    return [match.group(1) for sql in statements if (match := re.search(r'FROM "(\w+)"', sql))]


async def test_a_handshake_past_the_limit_is_told_to_wait_and_closed_before_any_query_of_its_own(
    two_a_minute: list[float],
) -> None:
    alice = await reviewer("alice")
    accepted = [await opened("/ws/inbox/", alice) for _ in range(2)]
    third = await communicator("/ws/inbox/", alice)

    async with database_thread_statements() as statements:
        await third.connect(timeout=5)
        refusal = await answer(third)

    assert refusal == refused(60)
    # The auth middleware's reads, as for every handshake; no check, no slot.
    assert tables_read(statements) == ["django_session", "auth_user"]
    assert len(statements) == 2
    assert slots.held(alice.pk) == 2
    assert [await answer(socket) for socket in accepted] == ["page", "page"]
    for socket in [*accepted, third]:
        await socket.disconnect()


async def test_another_user_opens_sockets_while_one_is_refused(two_a_minute: list[float]) -> None:
    alice, bob = await reviewer("alice"), await reviewer("bob")
    alices = [await opened("/ws/inbox/", alice) for _ in range(3)]

    bobs = [await opened("/ws/inbox/", bob) for _ in range(2)]

    assert [await answer(socket) for socket in alices] == ["page", "page", refused(60)]
    assert [await answer(socket) for socket in bobs] == ["page", "page"]
    for socket in [*alices, *bobs]:
        await socket.disconnect()


async def test_the_wait_is_the_rest_of_the_window_and_the_next_window_lets_the_user_in(
    two_a_minute: list[float],
) -> None:
    now = two_a_minute
    alice = await reviewer("alice")
    sockets = [await opened("/ws/inbox/", alice) for _ in range(3)]
    now[0] += 59
    sockets.append(await opened("/ws/items/999999/", alice))  # refused before its check too

    now[0] += 1
    sockets.append(await opened("/ws/inbox/", alice))

    answers = [await answer(socket) for socket in sockets]
    assert answers == ["page", "page", refused(60), refused(1), "page"]
    for socket in sockets:
        await socket.disconnect()


async def test_a_cache_that_fails_refuses_nobody(
    two_a_minute: list[float], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis down must not shut the live pages: the limit is skipped, with a warning."""
    alice = await reviewer("alice")
    sockets = [await communicator("/ws/inbox/", alice) for _ in range(3)]  # logged in
    monkeypatch.setattr(ratelimit, "cache", BrokenCache())
    caplog.set_level(logging.WARNING)

    for socket in sockets:
        await socket.connect(timeout=5)

    assert [await answer(socket) for socket in sockets] == ["page", "page", "page"]
    warnings = [r.getMessage() for r in caplog.records if r.name == ratelimit.logger.name]
    assert (
        warnings
        == [
            "Rate limit live-socket skipped: the cache failed (Error 111 connecting to "
            "127.0.0.1:6379. Connection refused.)"
        ]
        * 3
    )
    for socket in sockets:
        await socket.disconnect()
