"""What a websocket client sends is data (reliability.md, hostile corpus on the live
sockets): handshakes with a NUL, odd bytes or a path no route has, and frames of every
wrong shape, through the application daphne serves (`embed.asgi.websocket_application`:
origin check, NUL guard, sessions, routes), driven with `WebsocketCommunicator`.

A handshake it cannot serve is denied before accept, never an exception (daphne's 500 and
an error in the log); a frame it does not read is ignored on the event loop, and presence
pings write at most once per `PING_SECONDS` per socket, however many are sent."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import SyncToAsync, sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.db.models.signals import post_save
from django.test import Client

from beamweaver_core.embed.asgi import websocket_application
from reviews.groups import INBOX_GROUP, review_item_group
from reviews.live import base
from reviews.models import ReviewItem, ReviewPresence
from tests.reviews.conftest import make_reviewer, pause

pytestmark = pytest.mark.django_db(transaction=True)

APP = websocket_application()


def session_cookie(user: User) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


async def open_socket(
    path: str, user: User | None = None, *, cookie: str | None = None, query: bytes | None = None
) -> tuple[WebsocketCommunicator, bool, int | None]:
    """A handshake as the site's own page makes it; `query` replaces the query string
    with raw bytes (as a client may send them)."""
    if user is not None:
        cookie = "sessionid=" + await sync_to_async(session_cookie)(user)
    headers = [(b"host", b"localhost"), (b"origin", b"http://localhost")]
    if cookie is not None:
        headers.append((b"cookie", cookie.encode("latin-1")))
    communicator = WebsocketCommunicator(APP, path, headers=headers)
    if query is not None:
        communicator.scope["query_string"] = query
    connected, code = await communicator.connect(timeout=5)
    return communicator, connected, code


@pytest.fixture
def problems(caplog: pytest.LogCaptureFixture) -> Iterator[list[logging.LogRecord]]:
    """The warnings and errors logged during the test."""
    caplog.set_level(logging.WARNING)
    yield caplog.records


@pytest.fixture
def database_thread_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per call sent to the process's one database thread (where
    `database_sync_to_async` and channels' connection cleanup run)."""
    calls: list[int] = []
    executor = SyncToAsync.single_thread_executor
    submit = executor.submit

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return submit(*args, **kwargs)

    monkeypatch.setattr(executor, "submit", counted)
    return calls


@pytest.fixture
def presence_writes() -> Iterator[list[int]]:
    """One entry per presence row saved."""
    writes: list[int] = []

    def saved(**kwargs: Any) -> None:
        writes.append(1)

    post_save.connect(saved, sender=ReviewPresence, dispatch_uid="presence_writes")
    yield writes
    post_save.disconnect(sender=ReviewPresence, dispatch_uid="presence_writes")


NUL_HANDSHAKES = {
    "inbox search": ("/ws/inbox/?q=%00", None),
    "inbox filters": ("/ws/inbox/?graph=%00&tool=a%00b&status=pending", None),
    "raw NUL in the query": ("/ws/inbox/", b"q=\x00"),
    "item digest": ("/ws/items/{item}/?digest=%00", None),
    "thread path": ("/ws/threads/a%00b/", None),
    "thread path, encoded twice": ("/ws/threads/%2500/", None),
}


@pytest.mark.parametrize("case", NUL_HANDSHAKES)
async def test_a_nul_in_a_handshake_is_denied_before_accept(
    case: str, problems: list[logging.LogRecord]
) -> None:
    """A `%00` in an inbox filter was accepted, then its round's query raised DataError
    (logged, the socket closed and reopened by the page); one in a thread path raised
    in the consumer (daphne's 500). A NUL anywhere else (the item page's digest, read
    only in Python) is denied too, as HTTP's `NulGuardMiddleware` refuses it."""
    alice = await sync_to_async(make_reviewer)("alice")
    item = await sync_to_async(pause)()
    path, query = NUL_HANDSHAKES[case]

    _, connected, _ = await open_socket(path.format(item=item.pk), alice, query=query)

    assert connected is False
    assert problems == []


@pytest.mark.parametrize(
    "cookie", ['sessionid="abcdefgh\\000ijkl"', "sessionid=abcdefgh\x00ijkl", "a\x00=b"]
)
async def test_a_nul_in_the_cookies_is_denied_before_the_session_is_read(
    cookie: str, problems: list[logging.LogRecord]
) -> None:
    """A quoted cookie's `\\000` is a NUL once parsed: it reached the session lookup
    (DataError, daphne's 500)."""
    _, connected, _ = await open_socket("/ws/inbox/", cookie=cookie)

    assert connected is False
    assert problems == []


@pytest.mark.parametrize("path", ["/ws/nope/", "/ws/inbox/extra", "/ws/items/abc/", "/"])
async def test_a_path_no_route_has_is_denied(path: str, problems: list[logging.LogRecord]) -> None:
    """Channels' router raised "No route found" (daphne's 500 and an error logged)."""
    alice = await sync_to_async(make_reviewer)("alice")

    _, connected, _ = await open_socket(path, alice)

    assert connected is False
    assert problems == []


@pytest.mark.parametrize(
    "query", [b"q=%ff%fe", b"q=\xff\xfe&graph=\xc3", b"page=" + b"9" * 40, b"q=" + b"x" * 5000]
)
async def test_odd_bytes_without_a_nul_are_served(
    query: bytes, problems: list[logging.LogRecord]
) -> None:
    """Invalid UTF-8 (decoded with replacement characters, as Django does), huge numbers
    and long values are data: the inbox opens and gets its snapshot."""
    alice = await sync_to_async(make_reviewer)("alice")

    communicator, connected, _ = await open_socket("/ws/inbox/", alice, query=query)
    snapshot = await communicator.receive_from(timeout=5)

    assert connected
    assert 'id="inbox-list"' in snapshot
    assert problems == []
    await communicator.disconnect()


async def test_a_ping_flood_writes_the_presence_at_most_once_per_interval(
    monkeypatch: pytest.MonkeyPatch,
    presence_writes: list[int],
    database_thread_calls: list[int],
    problems: list[logging.LogRecord],
) -> None:
    """Each ping was a presence write on the one database thread: 300 pings in a loop
    made 269 writes within 3 s, queued ahead of every other socket's work. The connect
    writes once; pings within `PING_SECONDS` of it (or of the last one handled) are
    ignored on the event loop; the page's own pace (every 20 s) is handled."""
    now = [1000.0]
    monkeypatch.setattr(base, "monotonic", lambda: now[0], raising=False)
    alice = await sync_to_async(make_reviewer)("alice")
    item = await sync_to_async(pause)()
    communicator, connected, _ = await open_socket(f"/ws/items/{item.pk}/", alice)
    await communicator.receive_from(timeout=5)
    assert connected and len(presence_writes) == 1
    calls_before = len(database_thread_calls)
    ping = json.dumps({"type": "presence.ping", "HEADERS": {"HX-Request": "true"}})

    for _ in range(300):
        await communicator.send_to(text_data=ping)
    assert await communicator.receive_nothing(timeout=0.5)

    assert (len(presence_writes), len(database_thread_calls) - calls_before) == (1, 0)
    now[0] += base.PING_SECONDS
    for _ in range(300):
        await communicator.send_to(text_data=ping)
    assert await communicator.receive_nothing(timeout=0.5)
    assert len(presence_writes) == 2
    assert problems == []
    await communicator.disconnect()


JUNK = {
    "not JSON": "{not json",
    "nested past the recursion limit": "[" * 2048 + "]" * 2048,
    "an array": '[{"type": "presence.ping"}]',
    "a string": '"presence.ping"',
    "null": "null",
    "a huge number": "9" * 4000,
    "an unknown type": '{"type": "review.decided", "item_id": 1}',
    "a type that is not a string": '{"type": ["presence.ping"]}',
    "a huge type": json.dumps({"type": "x" * 4000}),
    "over MAX_FRAME": json.dumps({"type": "presence.ping", "pad": "x" * 5000}),
}


async def test_frames_of_every_other_shape_are_ignored_on_the_event_loop(
    database_thread_calls: list[int],
    presence_writes: list[int],
    problems: list[logging.LogRecord],
) -> None:
    """A JSON array nested 2,048 deep (4 KB, within `MAX_FRAME`) raised RecursionError in
    the consumer (daphne closed the socket with 1011 and logged it); every client frame,
    even one ignored, cost a call on the database thread (channels' connection cleanup).
    Now none is answered, none reaches the database thread, and the socket still
    gets its pushes."""
    alice = await sync_to_async(make_reviewer)("alice")
    item = await sync_to_async(pause)()
    communicator, _, _ = await open_socket(f"/ws/items/{item.pk}/", alice)
    await communicator.receive_from(timeout=5)
    calls_before = len(database_thread_calls)

    for frame in JUNK.values():
        await communicator.send_to(text_data=frame)
    await communicator.send_to(bytes_data=b"\x00\xff" * 1000)
    for _ in range(200):
        await communicator.send_to(text_data=JUNK["not JSON"])
    assert await communicator.receive_nothing(timeout=0.5)
    calls = len(database_thread_calls) - calls_before

    await sync_to_async(ReviewItem.objects.filter(pk=item.pk).update)(status="decided")
    await get_channel_layer().group_send(
        review_item_group(item.pk), {"type": "review.decided", "item_id": item.pk}
    )
    pushed = await communicator.receive_from(timeout=5)

    assert calls == 0
    assert presence_writes == [1]  # the connect's
    assert 'id="decision-panel"' in pushed
    assert problems == []
    await communicator.disconnect()


async def test_the_inbox_ignores_pings_without_work(
    database_thread_calls: list[int], problems: list[logging.LogRecord]
) -> None:
    """The inbox has no presence: its pings are read and dropped on the event loop."""
    alice = await sync_to_async(make_reviewer)("alice")
    communicator, _, _ = await open_socket("/ws/inbox/", alice)
    await communicator.receive_from(timeout=5)
    calls_before = len(database_thread_calls)

    for _ in range(200):
        await communicator.send_to(text_data='{"type": "presence.ping"}')
    assert await communicator.receive_nothing(timeout=0.5)

    assert len(database_thread_calls) == calls_before
    assert problems == []
    await communicator.disconnect()


async def test_parameters_a_page_does_not_read_do_not_split_its_render(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Sockets that show the same thing share one render a round (`LiveConsumer.view`).
    The view was the raw query string, so a client adding `?x=1`, `?x=2`, … to its
    sockets cost one render per socket for every hint."""
    from reviews.live.inbox import InboxConsumer

    renders: list[str] = []
    rows_frames = InboxConsumer._rows_frames

    def counted(self: InboxConsumer, batch: dict[int, bool]) -> list[str]:
        renders.append(self.channel_name)
        return rows_frames(self, batch)

    monkeypatch.setattr(InboxConsumer, "_rows_frames", counted)
    alice = await sync_to_async(make_reviewer)("alice")
    queries = [b"x=1", b"x=2", b"status=pending&y=%ff", b"page=1&z="]
    sockets = [(await open_socket("/ws/inbox/", alice, query=q))[0] for q in queries]
    for communicator in sockets:
        await communicator.receive_from(timeout=5)
    item = await sync_to_async(pause)()

    await get_channel_layer().group_send(
        INBOX_GROUP, {"type": "review.created", "item_id": item.pk, "thread_id": item.thread_id}
    )
    pushed = [await communicator.receive_from(timeout=5) for communicator in sockets]

    assert all(f'id="item-row-{item.pk}"' in frame for frame in pushed)
    assert len(renders) < len(sockets)
    for communicator in sockets:
        await communicator.disconnect()
