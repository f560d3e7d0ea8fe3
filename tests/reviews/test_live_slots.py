"""The bound on the live sockets one user holds open in a process (`reviews.live.slots`,
`BEAMWEAVER["LIVE_SOCKETS_PER_USER"]`), driven with `WebsocketCommunicator`: the socket
past the limit is accepted and closed with 4429, and every way a socket ends gives its
place back, so that the count never leaks."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.auth import AuthMiddlewareStack
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.urls import path

from reviews import checks
from reviews.live import slots
from reviews.live.base import CLOSE_TOO_MANY
from reviews.live.inbox import InboxConsumer
from reviews.routing import websocket_urlpatterns
from tests.reviews.conftest import pause
from tests.reviews.test_consumers import reviewer, session_cookie

pytestmark = pytest.mark.django_db(transaction=True)


class FailingInbox(InboxConsumer):
    """An inbox whose connect fails at one step (`fail_in`): in its page parameters (on
    the database thread, before the check), in its groups (after the check), or once
    accepted."""

    def __init__(self, fail_in: str) -> None:
        super().__init__()
        self.fail_in = fail_in

    def setup(self) -> None:
        if self.fail_in == "setup":
            raise RuntimeError("setup failed")
        super().setup()

    def page_groups(self) -> list[str]:
        if self.fail_in == "page_groups":
            raise RuntimeError("page_groups failed")
        return super().page_groups()

    async def opened(self) -> None:
        if self.fail_in == "opened":
            raise RuntimeError("opened failed")


STEPS = ("setup", "page_groups", "opened")
FAILING = [
    path(f"ws/failing/{step}/", FailingInbox.as_asgi(fail_in=step))  # type: ignore[arg-type]
    for step in STEPS
]
APP = AllowedHostsOriginValidator(
    AuthMiddlewareStack(URLRouter([*websocket_urlpatterns, *FAILING]))
)


@pytest.fixture
def limit_of_two(settings: Any) -> None:
    settings.BEAMWEAVER = {**settings.BEAMWEAVER, "LIVE_SOCKETS_PER_USER": 2}


async def communicator(path: str, user: User) -> WebsocketCommunicator:
    cookie = await sync_to_async(session_cookie)(user)
    headers = [(b"host", b"localhost"), (b"origin", b"http://localhost")]
    headers.append((b"cookie", f"sessionid={cookie}".encode()))
    return WebsocketCommunicator(APP, path, headers=headers)


async def opened(path: str, user: User) -> WebsocketCommunicator:
    """A socket of `user` on `path`, its handshake answered (accepted or not)."""
    socket = await communicator(path, user)
    await socket.connect(timeout=5)
    return socket


async def refused_with(socket: WebsocketCommunicator) -> int | None:
    """The close code of an accepted socket that closes at once (None if it sends a frame
    instead)."""
    message = await socket.receive_output(timeout=5)
    return message.get("code") if message["type"] == "websocket.close" else None


async def test_the_socket_past_the_limit_is_closed_with_4429_and_other_users_are_not(
    limit_of_two: None,
) -> None:
    alice, bob = await reviewer("alice"), await reviewer("bob")
    first = await opened("/ws/inbox/", alice)
    second = await opened("/ws/inbox/", alice)

    third = await opened("/ws/inbox/", alice)
    bobs = await opened("/ws/inbox/", bob)

    assert await refused_with(third) == CLOSE_TOO_MANY
    assert [slots.held(alice.pk), slots.held(bob.pk)] == [2, 1]
    for accepted in (first, second, bobs):
        assert 'id="inbox-list"' in await accepted.receive_from(timeout=5)
    for socket in (first, second, third, bobs):
        await socket.disconnect()
    assert [slots.held(alice.pk), slots.held(bob.pk)] == [0, 0]


async def test_a_closed_socket_frees_its_place_for_the_next(limit_of_two: None) -> None:
    alice = await reviewer("alice")
    item = await sync_to_async(pause)()
    inbox = await opened("/ws/inbox/", alice)
    page = await opened(f"/ws/items/{item.pk}/", alice)
    await inbox.receive_from(timeout=5)

    await inbox.disconnect()
    thread = await opened(f"/ws/threads/{item.thread_id}/", alice)

    assert 'id="thread-live"' in await thread.receive_from(timeout=5)
    assert slots.held(alice.pk) == 2
    for socket in (page, thread):
        await socket.disconnect()
    assert slots.held(alice.pk) == 0


async def test_many_connects_and_disconnects_of_every_kind_leave_no_count(
    limit_of_two: None,
) -> None:
    """Accepted sockets on each page, sockets refused with 4403 (an item that does not
    exist) and with 4429, closed normally or abnormally (1006, as daphne reports a lost
    connection), or cancelled by the server without a disconnect: every one gives back
    what it took."""
    alice = await reviewer("alice")
    item = await sync_to_async(pause)()
    pages = ["/ws/inbox/", f"/ws/items/{item.pk}/", f"/ws/threads/{item.thread_id}/"]

    for round_ in range(12):
        held = [await opened(pages[round_ % 3], alice), await opened("/ws/items/999999/", alice)]
        past_the_limit = await opened(pages[(round_ + 1) % 3], alice)
        assert await refused_with(past_the_limit) == CLOSE_TOO_MANY
        held.append(past_the_limit)
        assert slots.held(alice.pk) == 2
        for socket in held:
            if round_ % 3 == 0:
                await socket.disconnect()
            elif round_ % 3 == 1:
                await socket.disconnect(code=1006)
            else:
                socket.future.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await socket.future
        assert slots.held(alice.pk) == 0


@pytest.mark.parametrize("step", STEPS)
async def test_an_exception_during_connect_gives_the_place_back(
    limit_of_two: None, step: str
) -> None:
    alice = await reviewer("alice")

    for _ in range(3):  # more than the limit: a leak would refuse the third
        socket = await opened_failing(step, alice)
        with pytest.raises(RuntimeError, match=f"{step} failed"):
            await socket.receive_output(timeout=5)
        assert slots.held(alice.pk) == 0

    inbox = await opened("/ws/inbox/", alice)
    assert 'id="inbox-list"' in await inbox.receive_from(timeout=5)
    await inbox.disconnect()


async def test_an_exception_once_accepted_leaves_no_group_membership() -> None:
    """A socket whose connect failed after joining its page's groups leaves them: channels
    sends no disconnect then, and the groups would keep a dead channel, queueing every
    hint for it, until the channel layer's group expiry (a day by default)."""
    alice = await reviewer("alice")
    layer = get_channel_layer()
    before = memberships(layer)

    socket = await opened_failing("opened", alice)
    with pytest.raises(RuntimeError, match="opened failed"):
        await socket.receive_output(timeout=5)

    assert memberships(layer) <= before


def memberships(layer: Any) -> set[tuple[str, str]]:
    """Every (group, channel) of the in-memory channel layer the tests run on."""
    return {(group, channel) for group, channels in layer.groups.items() for channel in channels}


async def opened_failing(step: str, user: User) -> WebsocketCommunicator:
    """A socket on the failing inbox; before the failure only the `opened` step accepts."""
    socket = await communicator(f"/ws/failing/{step}/", user)
    await socket.send_input({"type": "websocket.connect"})
    if step == "opened":
        assert (await socket.receive_output(timeout=5))["type"] == "websocket.accept"
    return socket


@pytest.mark.parametrize("value", [0, -1, "50", 2.5, True])
def test_a_limit_that_is_not_a_whole_number_above_zero_is_a_system_check_error(
    settings: Any, value: Any
) -> None:
    settings.BEAMWEAVER = {**settings.BEAMWEAVER, "LIVE_SOCKETS_PER_USER": value}

    found = checks.check_live_sockets_per_user(None)

    assert [(e.id, e.msg) for e in found] == [
        (
            "beamweaver.E026",
            f"BEAMWEAVER['LIVE_SOCKETS_PER_USER'] must be a whole number above 0, not {value!r}.",
        )
    ]


@pytest.mark.parametrize("value", [None, 1, 50])
def test_a_missing_or_positive_limit_passes_the_check(settings: Any, value: Any) -> None:
    settings.BEAMWEAVER = {**settings.BEAMWEAVER, "LIVE_SOCKETS_PER_USER": value}

    assert checks.check_live_sockets_per_user(None) == []
