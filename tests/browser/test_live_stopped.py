"""A live page whose socket the server closed for good (4403: its user signed out in
another tab) says live updates stopped and how to go on, instead of "Reconnecting…" for
ever (htmx's ws extension does not retry that code)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from beamweaver_core.runtime import service
from tests.browser.test_inbox_live import WAIT
from tests.browser.test_live_limit import shown_on_a_phone
from tests.reviews.conftest import make_reviewer

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_page_signed_out_elsewhere_says_live_updates_stopped(sessions: Any) -> None:
    alice = sessions(make_reviewer("alice"))
    page = alice.open("/")
    alice.wait_live()
    other_tab = Client()
    other_tab.cookies["sessionid"] = next(
        c["value"] for c in alice.context.cookies() if c["name"] == "sessionid"
    )
    other_tab.post("/accounts/logout/")

    service.start_run("tool_review", {}, thread_id="stopped-1")  # a push: rights rechecked

    status = page.wait_for_selector('#live-status[data-state="stopped"]', timeout=WAIT)
    assert status.inner_text() == (
        "Live updates stopped: you are signed out or may no longer see this page. "
        "Reload it to sign in again."
    )
    shown_on_a_phone(page, status)
    page.reload()
    assert "/accounts/login/" in page.url
