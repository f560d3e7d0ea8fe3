"""The live pages' websocket consumers, driven with `WebsocketCommunicator`."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.auth import AuthMiddlewareStack
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Permission, User
from django.test import Client

from beamweaver_core.runtime.groups import thread_group
from reviews.groups import INBOX_GROUP, review_item_group
from reviews.models import Decision, ReviewItem, ReviewPresence
from reviews.routing import websocket_urlpatterns
from tests.reviews.conftest import make_reviewer, pause
from tests.support.legacy import unchecked_thread_ids

pytestmark = pytest.mark.django_db(transaction=True)

APP = AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))
XSS = '<img src=x onerror=alert(1)> id="inbox-rows" hx-swap-oob="true"'


def session_cookie(user: User) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


async def connect(
    path: str, user: User | None = None, origin: str = "http://localhost"
) -> tuple[WebsocketCommunicator, bool]:
    headers = [(b"host", b"localhost")]
    if origin:
        headers.append((b"origin", origin.encode()))
    if user is not None:
        key = await sync_to_async(session_cookie)(user)
        headers.append((b"cookie", f"sessionid={key}".encode()))
    communicator = WebsocketCommunicator(APP, path, headers=headers)
    connected, _ = await communicator.connect(timeout=5)
    return communicator, connected


async def hint(group: str, message: dict[str, Any]) -> None:
    await get_channel_layer().group_send(group, message)


def reviewer(name: str = "alice") -> Any:
    return sync_to_async(make_reviewer)(name)


async def test_anonymous_users_are_refused_before_accept() -> None:
    _, connected = await connect("/ws/inbox/")

    assert connected is False


async def test_users_without_the_reviewer_permission_are_refused() -> None:
    outsider = await sync_to_async(make_reviewer)("mallory", reviewer=False)

    _, connected = await connect("/ws/inbox/", outsider)

    assert connected is False


async def test_unknown_items_and_threads_are_refused() -> None:
    alice = await reviewer()

    _, item_ok = await connect("/ws/items/999/", alice)
    _, thread_ok = await connect("/ws/threads/nope/", alice)

    assert (item_ok, thread_ok) == (False, False)


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "null", "http://localhost.evil.example", ""]
)
async def test_other_origins_are_refused(origin: str) -> None:
    alice = await reviewer()

    _, connected = await connect("/ws/inbox/", alice, origin=origin)

    assert connected is False


async def test_the_inbox_resyncs_on_connect() -> None:
    alice = await reviewer()
    item = await sync_to_async(pause)()

    communicator, connected = await connect("/ws/inbox/", alice)
    snapshot = await communicator.receive_from(timeout=5)

    assert connected
    assert snapshot.lstrip().startswith('<section id="inbox-list"')
    assert f'<li id="item-row-{item.pk}"' in snapshot
    await communicator.disconnect()


async def test_a_new_item_is_appended_and_its_untrusted_text_escaped() -> None:
    alice = await reviewer()
    communicator, _ = await connect("/ws/inbox/", alice)
    await communicator.receive_from(timeout=5)
    with unchecked_thread_ids():  # a thread id from before the rule
        item = await sync_to_async(pause)(thread_id=XSS)

    await hint(INBOX_GROUP, {"type": "review.created", "item_id": item.pk, "thread_id": XSS})
    fragment = await communicator.receive_from(timeout=5)

    # Into the list, which every inbox page has (never at a row the page may lack).
    assert fragment.startswith(
        '<div hx-swap-oob="beforeend:#inbox-rows">\n'
        f'<li id="item-row-{item.pk}" class="row status-pending">'
    )
    assert "<img" not in fragment
    assert "&lt;img src=x onerror=alert(1)&gt;" in fragment
    ids = re.findall(r'\sid="([^"]+)"', fragment)
    assert ids == [f"item-row-{item.pk}", "inbox-counts", "inbox-heading", "inbox-pager"]
    oob_values = re.findall(r'hx-swap-oob="([^"]+)"', fragment)
    assert oob_values == ["beforeend:#inbox-rows", "true", "true"]
    assert "<strong>1</strong> pending" in fragment
    await communicator.disconnect()


async def test_a_decided_item_is_removed_from_pending_inboxes() -> None:
    alice = await reviewer()
    item = await sync_to_async(pause)()
    communicator, _ = await connect("/ws/inbox/", alice)
    await communicator.receive_from(timeout=5)
    await sync_to_async(ReviewItem.objects.filter(pk=item.pk).update)(status="decided")

    await hint(
        INBOX_GROUP, {"type": "review.decided", "item_id": item.pk, "thread_id": item.thread_id}
    )
    fragment = await communicator.receive_from(timeout=5)

    assert fragment.startswith(
        '<div hx-swap-oob="beforeend:#inbox-rows">'
        f'<li id="item-row-{item.pk}" data-remove hidden></li></div>'
    )
    assert "<strong>0</strong> pending" in fragment
    await communicator.disconnect()


async def test_an_inbox_with_filters_only_gets_matching_rows() -> None:
    alice = await reviewer()
    communicator, _ = await connect("/ws/inbox/?graph=approval", alice)
    await communicator.receive_from(timeout=5)
    item = await sync_to_async(pause)()  # a tool_review item: filtered out

    await hint(
        INBOX_GROUP, {"type": "review.created", "item_id": item.pk, "thread_id": item.thread_id}
    )
    fragment = await communicator.receive_from(timeout=5)

    assert f'<li id="item-row-{item.pk}" data-remove hidden></li>' in fragment
    assert 'class="row' not in fragment
    await communicator.disconnect()


async def test_client_frames_never_decide_anything() -> None:
    alice = await reviewer()
    item = await sync_to_async(pause)()
    communicator, _ = await connect(f"/ws/items/{item.pk}/", alice)
    await communicator.receive_from(timeout=5)
    frame = {"type": "decide", "item_id": item.pk, "decision": "approve", "digest": item.digest}

    await communicator.send_to(text_data=json.dumps(frame))
    await communicator.send_to(text_data="x" * 100_000)
    await communicator.send_to(bytes_data=b"\x00\x01")

    assert await communicator.receive_nothing(timeout=0.3)
    assert not await sync_to_async(Decision.objects.exists)()
    assert (await sync_to_async(ReviewItem.objects.get)(pk=item.pk)).status == "pending"
    await communicator.disconnect()


async def test_presence_shows_who_else_is_looking() -> None:
    alice, bob = await reviewer("alice"), await reviewer("bob")
    item = await sync_to_async(pause)()
    alices, _ = await connect(f"/ws/items/{item.pk}/", alice)
    first = await alices.receive_from(timeout=5)
    assert "Nobody else is looking at this item." in first

    bobs, _ = await connect(f"/ws/items/{item.pk}/", bob)
    await bobs.receive_from(timeout=5)
    await hint(review_item_group(item.pk), {"type": "review.presence", "item_id": item.pk})
    seen = await alices.receive_from(timeout=5)

    assert "Also looking at this item: <strong>bob</strong>" in seen
    await bobs.disconnect()
    assert await sync_to_async(ReviewPresence.objects.filter(user=bob).exists)() is False
    await alices.disconnect()


async def test_the_item_page_learns_that_someone_else_decided() -> None:
    alice, bob = await reviewer("alice"), await reviewer("bob")
    item = await sync_to_async(pause)()
    communicator, _ = await connect(f"/ws/items/{item.pk}/", bob)
    await communicator.receive_from(timeout=5)

    from reviews.services import DecisionRequest, decide

    await sync_to_async(decide)(
        DecisionRequest(
            item_id=item.pk,
            user=alice,
            client_decision_id="c1",
            digest=item.digest,
            answer={"decisions": [{"type": "approve"}]},
        )
    )
    await hint(review_item_group(item.pk), {"type": "review.decided", "item_id": item.pk})
    panel = await communicator.receive_from(timeout=5)

    assert panel.lstrip().startswith('<section id="decision-panel"')
    assert "by <strong>alice</strong>" in panel
    assert "<form" not in panel
    await communicator.disconnect()


async def test_a_changed_payload_is_flagged_on_the_item_page() -> None:
    alice = await reviewer()
    item = await sync_to_async(pause)()

    communicator, _ = await connect(f"/ws/items/{item.pk}/?digest={'0' * 64}", alice)
    snapshot = await communicator.receive_from(timeout=5)

    assert "The proposal changed" in snapshot
    await communicator.disconnect()


async def test_a_revoked_permission_closes_the_socket_at_the_next_hint() -> None:
    alice = await reviewer()
    item = await sync_to_async(pause)()
    communicator, _ = await connect("/ws/inbox/", alice)
    await communicator.receive_from(timeout=5)

    permission = await sync_to_async(Permission.objects.get)(codename="review")
    await sync_to_async(alice.user_permissions.remove)(permission)
    await hint(
        INBOX_GROUP, {"type": "review.created", "item_id": item.pk, "thread_id": item.thread_id}
    )
    output = await communicator.receive_output(timeout=5)

    assert output == {"type": "websocket.close", "code": 4403}


async def test_logging_out_elsewhere_closes_the_socket_at_the_next_hint() -> None:
    alice = await reviewer()
    item = await sync_to_async(pause)()
    communicator, _ = await connect("/ws/inbox/", alice)
    await communicator.receive_from(timeout=5)

    from django.contrib.sessions.models import Session

    await sync_to_async(Session.objects.all().delete)()
    await hint(
        INBOX_GROUP, {"type": "review.created", "item_id": item.pk, "thread_id": item.thread_id}
    )
    output = await communicator.receive_output(timeout=5)

    assert output == {"type": "websocket.close", "code": 4403}


async def test_the_thread_page_streams_run_events_escaped() -> None:
    alice = await reviewer()
    item = await sync_to_async(pause)()
    communicator, _ = await connect(f"/ws/threads/{item.thread_id}/", alice)
    snapshot = await communicator.receive_from(timeout=5)
    assert snapshot.lstrip().startswith('<div id="thread-live"')
    run_id = str(item.run_id)
    event = {"seq": 99, "event": "node.started", "node": XSS, "data": {"x": XSS}, "at": "now"}

    await hint(
        thread_group(item.thread_id),
        {"type": "run.event", "thread_id": item.thread_id, "run_id": run_id, "event": event},
    )
    fragment = await communicator.receive_from(timeout=5)

    dom_id = f"run-event-{run_id}-99"
    assert fragment.startswith('<div hx-swap-oob="beforeend:#thread-events">')
    assert re.findall(r'\sid="([^"]+)"', fragment) == [dom_id]
    assert "<img" not in fragment
    await communicator.disconnect()


async def test_run_events_of_other_threads_or_with_bad_ids_are_ignored() -> None:
    alice = await reviewer()
    item = await sync_to_async(pause)()
    communicator, _ = await connect(f"/ws/threads/{item.thread_id}/", alice)
    await communicator.receive_from(timeout=5)
    group = thread_group(item.thread_id)
    event = {"seq": 1, "event": "node.started", "node": "n"}

    await hint(
        group,
        {"type": "run.event", "thread_id": "other", "run_id": str(item.run_id), "event": event},
    )
    await hint(
        group, {"type": "run.event", "thread_id": item.thread_id, "run_id": '"><x', "event": event}
    )

    assert await communicator.receive_nothing(timeout=0.3)
    await communicator.disconnect()


async def test_a_run_status_change_refreshes_the_thread_parts() -> None:
    alice = await reviewer()
    item = await sync_to_async(pause)()
    communicator, _ = await connect(f"/ws/threads/{item.thread_id}/", alice)
    await communicator.receive_from(timeout=5)

    await hint(
        thread_group(item.thread_id),
        {
            "type": "run.status",
            "thread_id": item.thread_id,
            "run_id": str(item.run_id),
            "status": "interrupted",
        },
    )
    fragment = await communicator.receive_from(timeout=5)

    ids = re.findall(r'<section id="([\w-]+)"', fragment)
    assert ids == [
        "thread-status",
        "thread-items",
        "thread-decisions",
        "thread-state",
        "thread-history",
    ]
    await communicator.disconnect()


async def test_a_consumer_ignores_hints_for_other_items() -> None:
    alice = await reviewer()
    item = await sync_to_async(pause)()
    communicator, _ = await connect(f"/ws/items/{item.pk}/", alice)
    await communicator.receive_from(timeout=5)

    await hint(review_item_group(item.pk), {"type": "review.decided", "item_id": item.pk + 1})

    assert await communicator.receive_nothing(timeout=0.3)
    await communicator.disconnect()
    await asyncio.sleep(0)


def slow_first_call(monkeypatch: Any, cls: type, name: str, seconds: float = 0.5) -> None:
    """Make the first call of `cls.name` take `seconds` longer (a render under way)."""
    import time

    slow_once = [seconds]
    original = getattr(cls, name)

    def slow(self: Any, *args: Any) -> Any:
        time.sleep(slow_once.pop() if slow_once else 0)
        return original(self, *args)

    monkeypatch.setattr(cls, name, slow)


@pytest.mark.parametrize("count", [6, 60])
async def test_hints_arriving_during_a_render_are_rendered_together(
    monkeypatch: Any, count: int
) -> None:
    """Hints that arrive while a render runs wait for the next one, which renders them all
    with one count and one pager: an inbox keeps up with a burst instead of rendering once
    per hint until the channel layer drops hints (hostile case 25). A big burst goes out as
    several frames, each under daphne's message limit (a 67 KB frame was refused)."""
    from beamweaver_core.conf import conf
    from reviews.live.inbox import InboxConsumer

    slow_first_call(monkeypatch, InboxConsumer, "_rows_frames")
    alice = await reviewer()
    communicator, _ = await connect("/ws/inbox/", alice)
    await communicator.receive_from(timeout=5)
    items = [await sync_to_async(pause)(thread_id=f"burst-{k}") for k in range(count)]

    for index, item in enumerate(items):
        await hint(
            INBOX_GROUP, {"type": "review.created", "item_id": item.pk, "thread_id": item.thread_id}
        )
        if index == 0:
            await asyncio.sleep(0.1)  # the first render is under way
    named = re.compile(r'<li id="item-row-(\d+)"')
    frames: list[set[int]] = []
    last = ""
    while len(set().union(*frames)) < len(items):
        last = await communicator.receive_from(timeout=5)
        assert len(last.encode()) <= conf.websocket_max_message
        frames.append({int(i) for i in named.findall(last)})
    while 'id="inbox-counts"' not in last:  # the burst's last frame: the counts and pager
        last = await communicator.receive_from(timeout=5)
        frames.append({int(i) for i in named.findall(last)})

    assert frames[0] == {items[0].pk}
    assert set().union(*frames) == {i.pk for i in items}
    assert len(frames) < len(items)  # the hints sent during the slow render came together
    assert last.count('id="inbox-counts"') == 1 and last.count('id="inbox-pager"') == 1
    assert f"<strong>{count}</strong> pending" in last
    assert await communicator.receive_nothing(timeout=0.3)
    await communicator.disconnect()


async def test_run_events_arriving_during_a_check_go_out_together(monkeypatch: Any) -> None:
    """A thread page's run events that arrive while its re-check and render run are sent
    after one more check, in one frame (case 50: 1,000 sockets, 50 events/s); every
    socket of the page gets every event, each after its own check."""
    from reviews.live.thread import ThreadConsumer

    slow_first_call(monkeypatch, ThreadConsumer, "frames")
    alice, bob = await reviewer("alice"), await reviewer("bob")
    item = await sync_to_async(pause)()
    sockets = []
    for user in (alice, bob, alice):
        communicator, _ = await connect(f"/ws/threads/{item.thread_id}/", user)
        await communicator.receive_from(timeout=5)
        sockets.append(communicator)
    group, run_id = thread_group(item.thread_id), str(item.run_id)

    for seq in range(1, 12):
        event = {"seq": seq, "event": "task.end", "node": "act"}
        await hint(
            group,
            {"type": "run.event", "thread_id": item.thread_id, "run_id": run_id, "event": event},
        )
        if seq == 1:
            await asyncio.sleep(0.1)  # the first check and render are under way
    seqs = re.compile(rf'<li id="run-event-{run_id}-(\d+)"')
    received = []
    for communicator in sockets:
        frames: list[list[int]] = []
        while sum(len(f) for f in frames) < 11:
            frames.append(
                [int(s) for s in seqs.findall(await communicator.receive_from(timeout=5))]
            )
        received.append(frames)
        assert await communicator.receive_nothing(timeout=0.2)
        await communicator.disconnect()

    for frames in received:
        assert [seq for frame in frames for seq in frame] == list(range(1, 12))
        assert len(frames) < 11


async def test_sockets_opening_together_share_the_snapshot_of_one_round(monkeypatch: Any) -> None:
    """The snapshot comes in the next round after the handshake (which does not wait
    behind it); a user's sockets on the same page in the same round get one render, each
    after its own check (case 50's reconnect storm: 20 sockets per thread)."""
    from reviews.live.thread import ThreadConsumer

    slow_first_call(monkeypatch, ThreadConsumer, "snapshot")
    renders: list[str] = []
    snapshot = ThreadConsumer.snapshot

    def counted(self: Any) -> str:
        renders.append(self.channel_name)
        return snapshot(self)

    monkeypatch.setattr(ThreadConsumer, "snapshot", counted)
    alice, bob = await reviewer("alice"), await reviewer("bob")
    item = await sync_to_async(pause)()
    path = f"/ws/threads/{item.thread_id}/"

    opened = await asyncio.gather(*(connect(path, user) for user in [alice] * 5 + [bob]))
    firsts = [await communicator.receive_from(timeout=5) for communicator, _ in opened]

    assert all(connected for _, connected in opened)
    assert all(first.lstrip().startswith('<div id="thread-live"') for first in firsts)
    assert len(renders) < len(opened)
    for communicator, _ in opened:
        await communicator.disconnect()


async def test_a_failed_render_closes_its_socket_and_not_the_others(monkeypatch: Any) -> None:
    from reviews.live.thread import ThreadConsumer

    frames_of = ThreadConsumer.frames

    def failing_for_alice(self: Any, batch: dict[Any, str]) -> list[str]:
        if self.user.username == "alice":
            raise RuntimeError("render failed")
        return frames_of(self, batch)

    monkeypatch.setattr(ThreadConsumer, "frames", failing_for_alice)
    alice, bob = await reviewer("alice"), await reviewer("bob")
    item = await sync_to_async(pause)()
    sockets = []
    for user in (alice, bob):
        communicator, _ = await connect(f"/ws/threads/{item.thread_id}/", user)
        await communicator.receive_from(timeout=5)
        sockets.append(communicator)
    event = {"seq": 1, "event": "task.end", "node": "act"}

    await hint(
        thread_group(item.thread_id),
        {
            "type": "run.event",
            "thread_id": item.thread_id,
            "run_id": str(item.run_id),
            "event": event,
        },
    )

    # 1011, which the page's ws extension retries (a plain 1000 left the page unlive).
    assert await sockets[0].receive_output(timeout=5) == {"type": "websocket.close", "code": 1011}
    assert "run-event-" in await sockets[1].receive_from(timeout=5)
    await sockets[1].disconnect()
