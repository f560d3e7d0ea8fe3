"""Websockets against the live server (reliability.md cases 12, 29, 36, 37): cross-site
handshakes, handshakes with a NUL or an unknown path, a 2 MB frame, frames that look like
decisions, and rights revoked while a socket is open. Real daphne, real `websockets` client, loopback only."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connections
from django.test import Client
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from beamweaver_core.runtime import service
from bench.hostile.agents import agent_input
from reviews.models import Decision, ReviewItem
from tests.reviews.conftest import make_reviewer
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]

T = TypeVar("T")


def ws_url(base: str, path: str) -> str:
    return base.replace("http://", "ws://") + path


async def off_the_loop(call: Callable[..., T], *args: Any) -> T:
    """`call(*args)` (database work) on one of asyncio's executor threads, its connections
    given back before the thread ends with `asyncio.run`: left checked out, one stayed
    connected to the test database until the garbage collector happened to finalize it,
    and the database's drop at the end of the session failed on it."""

    def closing() -> T:
        try:
            return call(*args)
        finally:
            connections.close_all()

    return await asyncio.to_thread(closing)


def session_of(user: User) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


def handshake(base: str, path: str, cookie: str, origin: str | None) -> int | str:
    """Open and close a socket; `"open"` or the HTTP status the handshake got."""

    async def attempt() -> int | str:
        headers = {"Cookie": f"sessionid={cookie}"}
        if origin is not None:
            headers["Origin"] = origin
        try:
            async with connect(ws_url(base, path), additional_headers=headers, open_timeout=5):
                return "open"
        except InvalidStatus as exc:
            return exc.response.status_code

    return asyncio.run(attempt())


def bad_origins(base: str) -> dict[str, str | None]:
    host, port = urlsplit(base).hostname, urlsplit(base).port
    return {
        "another site": "https://evil.example",
        "missing": None,
        "null": "null",
        "same host, another port": f"http://{host}:{port + 1}",
        "same host and port, https": f"https://{host}:{port}",
        "a sibling name": f"http://evil.localhost:{port}",
        "the host as a prefix": f"http://{host}.evil.example:{port}",
        "no port": f"http://{host}",
    }


def test_cross_site_handshakes_are_refused_before_accept(server: str) -> None:
    """Case 37: only the site's own exact origin opens a socket; a bad, missing or null
    Origin, another port or scheme on the same host, or a look-alike name is refused
    with 403 before the consumer runs, session cookie or not."""
    cookie = session_of(make_reviewer("alice"))

    results = {
        name: handshake(server, "/ws/inbox/", cookie, origin)
        for name, origin in bad_origins(server).items()
    }
    own = handshake(server, "/ws/inbox/", cookie, server)

    assert results == dict.fromkeys(bad_origins(server), 403)
    assert own == "open"


def test_handshakes_the_server_cannot_serve_are_denied_not_errors(server: str) -> None:
    """A NUL in an inbox filter (was accepted, then the round's query failed and closed
    the socket), in a thread path or a quoted session cookie, and a path no route has
    (each was daphne's 500, with an error logged) are denied with 403; the site's own
    page still opens."""
    cookie = session_of(make_reviewer("alice"))

    results = {
        path: handshake(server, path, cookie, server)
        for path in ("/ws/inbox/?q=%00", "/ws/threads/a%00b/", "/ws/threads/%2500/", "/ws/nope/")
    }
    quoted = handshake(server, "/ws/inbox/", '"abcdefgh\\000ijkl"', server)

    assert results == dict.fromkeys(results, 403)
    assert quoted == 403
    assert handshake(server, "/ws/inbox/?q=%ff", cookie, server) == "open"


def receive_all(ws: Any, seconds: float) -> list[str]:
    async def drain() -> list[str]:
        frames = []
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                frames.append(str(await asyncio.wait_for(ws.recv(), left)))
            except TimeoutError:
                break
        return frames

    return asyncio.get_event_loop().run_until_complete(drain())


def test_a_two_megabyte_frame_is_closed_by_the_server_which_keeps_serving(server: str) -> None:
    """Case 29: a 2 MB frame (the limit is 64 KiB) makes the server drop the connection
    at once: autobahn fails the connection by dropping TCP, so the client sees 1006, not
    a 1009 close frame. The server does not buffer it and the next client is served."""
    cookie = session_of(make_reviewer("alice"))
    headers = {"Cookie": f"sessionid={cookie}", "Origin": server}

    async def scenario() -> tuple[int | None, str]:
        async with connect(
            ws_url(server, "/ws/inbox/"), additional_headers=headers, max_size=None
        ) as ws:
            await ws.recv()  # the inbox snapshot
            try:
                await ws.send("x" * (2 * 1024 * 1024))
                await asyncio.wait_for(ws.recv(), 10)
            except ConnectionClosed as closed:
                code = closed.rcvd.code if closed.rcvd else 1006
            else:
                code = None
        async with connect(ws_url(server, "/ws/inbox/"), additional_headers=headers) as again:
            return code, str(await asyncio.wait_for(again.recv(), 10))

    code, snapshot = asyncio.run(scenario())

    assert code in (1006, 1009)
    assert 'id="inbox-list"' in snapshot or "inbox-rows" in snapshot


def test_frames_shaped_like_decisions_decide_nothing(server: str) -> None:
    """Case 12: decisions travel by HTTP only. Frames a queued htmx-ws client could replay
    late (a form serialised with its headers, a JSON decision, junk) change nothing."""
    alice = make_reviewer("alice")
    run = service.start_run(
        "ledger_agent", agent_input([{"name": "notify", "args": {"text": "hi"}}])
    )
    item = wait_for(lambda: ReviewItem.objects.filter(thread_id=run.thread_id).first())
    headers = {"Cookie": f"sessionid={session_of(alice)}", "Origin": server}
    frames = [
        json.dumps(
            {
                "HEADERS": {"HX-Request": "true"},
                "d0-type": "approve",
                "digest": item.digest,
                "client_decision_id": "late",
            }
        ),
        json.dumps({"type": "decide", "item": item.pk, "decisions": [{"type": "approve"}]}),
        json.dumps({"type": "review.decided", "item_id": item.pk}),
        "approve",
        "\x00" * 100,
    ]

    async def scenario() -> None:
        async with connect(
            ws_url(server, f"/ws/items/{item.pk}/"), additional_headers=headers
        ) as ws:
            for frame in frames:
                await ws.send(frame)
            await asyncio.sleep(1.5)

    asyncio.run(scenario())

    item.refresh_from_db()
    assert item.status == "pending"
    assert not Decision.objects.exists()


@pytest.mark.parametrize(
    "revocation", ["permission removed", "logged out elsewhere", "deactivated"]
)
def test_a_socket_whose_rights_were_revoked_gets_nothing_more(server: str, revocation: str) -> None:
    """Case 36: while alice's inbox socket is open her rights go away; the next interrupt
    is not pushed to her (the socket closes with 4403) and her next POST is refused."""
    alice = make_reviewer("alice")
    cookie = session_of(alice)
    headers = {"Cookie": f"sessionid={cookie}", "Origin": server}
    secret = f"CANARY-{revocation.replace(' ', '-')}"

    async def scenario() -> tuple[list[str], int | None]:
        async with connect(ws_url(server, "/ws/inbox/"), additional_headers=headers) as ws:
            await asyncio.wait_for(ws.recv(), 10)
            await off_the_loop(revoke, alice, cookie, revocation)
            await off_the_loop(
                service.start_run,
                "ledger_agent",
                agent_input([{"name": "notify", "args": {"text": secret}}]),
            )
            frames: list[str] = []
            try:
                while True:
                    frames.append(str(await asyncio.wait_for(ws.recv(), 15)))
            except ConnectionClosed as closed:
                return frames, closed.rcvd.code if closed.rcvd else None

    frames, code = asyncio.run(scenario())
    client = Client()
    client.cookies["sessionid"] = cookie
    after = client.post("/", {})

    assert code == 4403
    assert not [f for f in frames if secret in f]
    assert after.status_code in (302, 403, 405)


def revoke(user: User, cookie: str, how: str) -> None:
    if how == "permission removed":
        user.user_permissions.remove(Permission.objects.get(codename="review"))
    elif how == "deactivated":
        User.objects.filter(pk=user.pk).update(is_active=False)
    else:
        other_tab = Client()
        other_tab.cookies["sessionid"] = cookie
        other_tab.post("/accounts/logout/")
