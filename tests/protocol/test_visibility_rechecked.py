"""A thread can hide from a caller while they wait on it: its run asks a question that a
review policy gives to a group they are not in, or their token is revoked. `runs.join`
and the streams (`runs.join_stream`, `threads.join_stream`) check again before they
answer or send more, so nothing of the thread reaches a caller who may no longer see it.

Erin joins a run of Dave's before it asks its question (no review item yet, so the thread
is visible to every reviewer); the run then pauses on a question for the finance group,
which Dave is in and Erin is not.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth.models import Group, User
from django.test import Client

from beamweaver_core.models import Run
from beamweaver_core.protocol import run_views, stream, thread_stream, waiting
from reviews.models import ApiToken, ReviewItem
from tests.protocol.conftest import (
    api_user,
    async_client_of,
    client_of,
    post,
    read_stream,
    token_for,
)
from tests.reviews.conftest import run_next, use_policies

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("protocol_graphs")]

SECRET = 424242


@pytest.fixture
def dave(settings: Any) -> Any:
    """Dave's client; questions of the `ask` graph go to the finance group, Dave's."""
    use_policies(settings, {"name": "finance-only", "graph": "ask", "groups": ["finance"]})
    client = client_of("dave")
    User.objects.get(username="dave").groups.add(Group.objects.create(name="finance"))
    return client


def _queued(dave: Any) -> tuple[str, str]:
    """A thread of Dave's with a queued run that will ask about the secret amount."""
    thread = post(dave, "/threads", {})["thread_id"]
    run = post(
        dave, f"/threads/{thread}/runs", {"assistant_id": "ask", "input": {"amount": SECRET}}
    )
    return thread, run["run_id"]


def _after_the_run(wrapped: Callable[..., Any], before: Callable[[], Any] = run_next) -> Any:
    """`wrapped` (an async function), called once `before()` executed the queued run
    until it paused."""

    async def run_first(*args: Any, **kwargs: Any) -> Any:
        await database_sync_to_async(before)()
        return await wrapped(*args, **kwargs)

    return run_first


def _on_read(number: int, wrapped: Callable[..., Any], before: Callable[[], Any]) -> Any:
    """`wrapped` (a stream's read of stored events, in a worker thread), calling
    `before()` first on its `number`th call: the stream is open by then."""
    calls = 0

    def read(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == number:
            before()
        return wrapped(*args, **kwargs)

    return read


def _revoked_then_run(username: str) -> Callable[[], Run]:
    def revoke_then_run() -> Run:
        ApiToken.objects.get(user__username=username).revoke()
        return run_next()

    return revoke_then_run


def _token(username: str) -> str:
    return token_for(api_user(username))


def test_a_join_is_404_when_the_thread_hid_from_the_caller_while_they_waited(
    dave: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    thread, run = _queued(dave)
    erin = client_of("erin")
    monkeypatch.setattr(run_views, "until_stopped", _after_the_run(run_views.until_stopped))

    response = erin.get(f"/lg/threads/{thread}/runs/{run}/join")

    assert response.status_code == 404, response.content
    assert response.json() == {"detail": f"Thread {thread!r} not found."}
    assert ReviewItem.objects.filter(thread_id=thread).exists()  # the question was asked
    assert erin.get(f"/lg/threads/{thread}").status_code == 404
    monkeypatch.undo()  # Dave, who may see it, gets the run's result
    assert dave.get(f"/lg/threads/{thread}/runs/{run}/join").json()["amount"] == SECRET


def test_a_join_is_401_when_the_callers_token_was_revoked_while_they_waited(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    frank = client_of("frank")
    thread, run = _queued(frank)
    waited = _after_the_run(run_views.until_stopped, _revoked_then_run("frank"))
    monkeypatch.setattr(run_views, "until_stopped", waited)

    response = frank.get(f"/lg/threads/{thread}/runs/{run}/join")

    assert response.status_code == 401, response.content
    assert str(SECRET) not in response.content.decode()


async def test_a_wait_answers_an_error_when_the_thread_hid_from_the_caller(
    dave: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`runs.wait` has sent its 200 (and keep-alive newlines) by the time the run stops,
    so the refusal is the body's `__error__`, as a failed run's result is."""
    thread = (await database_sync_to_async(post)(dave, "/threads", {}))["thread_id"]
    erin = async_client_of(await database_sync_to_async(_token)("erin"))
    monkeypatch.setattr(waiting, "until_stopped", _after_the_run(waiting.until_stopped))

    response = await erin.post(
        f"/lg/threads/{thread}/runs/wait",
        {"assistant_id": "ask", "input": {"amount": SECRET}},
        content_type="application/json",
    )
    body = json.loads(await read_stream(response, until=b"}}"))

    assert body == {
        "__error__": {"error": "NotFoundError", "message": f"Thread {thread!r} not found."}
    }
    assert await ReviewItem.objects.filter(thread_id=thread).aexists()


async def test_a_runs_stream_ends_when_the_thread_hid_from_the_caller(
    dave: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    thread, run = await database_sync_to_async(_queued)(dave)
    erin = async_client_of(await database_sync_to_async(_token)("erin"))
    monkeypatch.setattr(stream, "_batch", _on_read(1, stream._batch, run_next))

    response = await erin.get(f"/lg/threads/{thread}/runs/{run}/stream?stream_mode=values")
    sent = await read_stream(response)

    assert response.status_code == 200
    assert sent.startswith(b"event: metadata")
    assert str(SECRET) not in sent.decode()
    assert b"event: error" in sent and f"Thread {thread!r} not found.".encode() in sent
    assert b"event: end" not in sent


async def test_a_runs_stream_ends_when_the_callers_token_is_revoked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    raw = await database_sync_to_async(_token)("frank")
    thread, run = await database_sync_to_async(_queued)(Client(HTTP_X_API_KEY=raw))
    revoked = _on_read(1, stream._batch, _revoked_then_run("frank"))
    monkeypatch.setattr(stream, "_batch", revoked)

    response = await async_client_of(raw).get(
        f"/lg/threads/{thread}/runs/{run}/stream?stream_mode=values"
    )
    sent = await read_stream(response)

    assert str(SECRET) not in sent.decode()
    assert b"event: error" in sent and b"event: end" not in sent


async def test_a_threads_stream_ends_when_the_thread_hid_from_the_caller(
    dave: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    thread, _ = await database_sync_to_async(_queued)(dave)
    erin = async_client_of(await database_sync_to_async(_token)("erin"))
    read = _on_read(2, thread_stream.ThreadStream.batch, run_next)  # once open and read
    monkeypatch.setattr(thread_stream.ThreadStream, "batch", read)

    response = await erin.get(f"/lg/threads/{thread}/stream?stream_mode=run_modes")
    sent = await read_stream(response, until=b"event: error")

    assert response.status_code == 200
    assert str(SECRET) not in sent.decode()
    assert b"event: error" in sent and f"Thread {thread!r} not found.".encode() in sent
