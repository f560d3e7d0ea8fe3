"""Pushes are hints: when one is lost (Redis down, a dropped message), the poll each live
page makes catches up. The requests here are the ones the pages' htmx pollers send."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.contrib.auth.models import User

from reviews import realtime
from reviews.http_statuses import http_status
from tests.reviews.conftest import approve_as, client_for, pause

pytestmark = pytest.mark.django_db


@pytest.fixture
def lost(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """Every hint goes into a channel layer that delivers nothing; the list records what
    was lost (hints are sent once their change commits: `committed`)."""
    dropped: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(
        realtime, "group_send", lambda group, message: dropped.append((group, message))
    )
    return dropped


def poller(page: str, marker: str) -> dict[str, str]:
    """The htmx attributes of the polling element with `marker` (an attribute)."""
    tags = [
        t for t in re.findall(r"<div\b[^>]*>", page) if marker in t and 'hx-trigger="every' in t
    ]
    assert len(tags) == 1, f"no polling element {marker} on the page"
    return {k: html.unescape(v) for k, v in re.findall(r'(hx-[\w-]+)="([^"]*)"', tags[0])}


def test_the_inbox_poll_shows_an_item_whose_push_was_lost_and_drops_a_decided_one(
    alice: User,
    bob: User,
    lost: list[tuple[str, dict[str, Any]]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    decided = pause(thread_id="lost-decided")
    client = client_for(alice)
    page = client.get("/").content.decode()
    assert f'id="item-row-{decided.pk}"' in page
    poll = poller(page, 'class="poller"')
    assert poll["hx-trigger"] == "every 20000ms"

    with django_capture_on_commit_callbacks(execute=True):
        created = pause(thread_id="lost-created")
        assert http_status(approve_as(bob, decided)) == 200
    assert {(m["type"], m["item_id"]) for _, m in lost} >= {
        (realtime.CREATED, created.pk),
        (realtime.DECIDED, decided.pk),
    }

    response = client.get(
        poll["hx-get"], HTTP_HX_REQUEST="true", HTTP_HX_TARGET=poll["hx-target"].lstrip("#")
    )

    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith('<section id="inbox-list"')  # what hx-swap replaces
    assert f'id="item-row-{created.pk}"' in body
    assert f'id="item-row-{decided.pk}"' not in body


def test_the_item_page_poll_shows_a_decision_whose_push_was_lost(
    alice: User,
    bob: User,
    lost: list[tuple[str, dict[str, Any]]],
    django_capture_on_commit_callbacks: Any,
) -> None:
    item = pause()
    client = client_for(bob)
    page = client.get(f"/items/{item.pk}/").content.decode()
    poll = poller(page, 'id="item-status"')
    assert poll["hx-include"] == "#decision-digest"

    with django_capture_on_commit_callbacks(execute=True):
        assert http_status(approve_as(alice, item)) == 200
    assert any(m["type"] == realtime.DECIDED for _, m in lost)

    response = client.get(
        poll["hx-get"],
        {"digest": item.digest},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="item-status",  # hx-target="this"
    )

    body = response.content.decode()
    assert response["HX-Retarget"] == "#decision-panel"
    assert "Decided" in body and "by <strong>alice</strong>" in body
    assert 'id="decision-form"' not in body


def test_the_poll_interval_is_a_setting(alice: User, settings: Any) -> None:
    settings.BEAMWEAVER = {**settings.BEAMWEAVER, "LIVE_POLL_SECONDS": 1.5}
    item = pause()
    client = client_for(alice)

    inbox = client.get("/").content.decode()
    page = client.get(f"/items/{item.pk}/").content.decode()
    thread = client.get(f"/threads/{item.thread_id}/").content.decode()

    assert poller(inbox, 'class="poller"')["hx-trigger"] == "every 1500ms"
    assert poller(page, 'id="item-status"')["hx-trigger"] == "every 1500ms"
    assert poller(thread, 'id="thread-live"')["hx-trigger"] == "every 1500ms"
