"""A push that never arrives: the inbox's poll catches up.

This module's server runs no worker and polls every second. The tests run and decide
the runs in the test process, whose in-memory channel layer reaches no browser: every
hint about them is lost, exactly as with Redis down, and only the poll can tell the page.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from reviews.http_statuses import http_status
from tests.reviews.conftest import approve_as, make_reviewer, pause

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SERVER_ENV = {"BEAMWEAVER_LIVE_POLL_SECONDS": "1", "BEAMWEAVER_WORKER_MODE": "external"}
WAIT = 15_000


def test_an_item_whose_push_was_lost_appears_after_the_poll(sessions: Any) -> None:
    bob = make_reviewer("bob")
    decided = pause(thread_id="lost-decided")
    alice = sessions(make_reviewer("alice"))
    page = alice.open("/")
    alice.wait_live()
    page.wait_for_selector(f"#item-row-{decided.pk}")

    created = pause(thread_id="lost-created")
    assert http_status(approve_as(bob, decided)) == 200
    changed_at = time.monotonic()
    polls_before = sum(1 for url in alice.requests if url.rstrip("/") == alice.base)

    page.wait_for_selector(f"#item-row-{created.pk}", timeout=WAIT)
    page.wait_for_selector(f"#item-row-{decided.pk}", state="detached", timeout=WAIT)

    assert time.monotonic() - changed_at < 10
    assert sum(1 for url in alice.requests if url.rstrip("/") == alice.base) > polls_before
    assert page.locator("#inbox-rows > li").count() == 1
    assert page.locator('#live-status[data-state="open"]').count() == 1  # never reconnected
    assert alice.errors == [] and alice.csp_violations == []
