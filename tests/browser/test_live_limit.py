"""A live page refused because its user has too many open (close code 4429), in a real
browser: it says so, on a phone too, retries slowly instead of in a loop, and goes live
again once the user closed another page."""

from __future__ import annotations

from typing import Any

import pytest

from beamweaver_core.runtime import service
from tests.browser.conftest import PHONE
from tests.browser.test_inbox_live import WAIT, paused_item
from tests.reviews.conftest import make_reviewer

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def shown_on_a_phone(page: Any, status: Any) -> None:
    """At a phone's width the live status is visible and the page has no sideways scroll."""
    page.set_viewport_size(PHONE)
    assert status.is_visible()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


RECORD_STATUS = """
window.__liveTexts = [];
window.__liveTimes = [];
document.addEventListener("DOMContentLoaded", function () {
  var dot = document.getElementById("live-status");
  new MutationObserver(function () {
    window.__liveTexts.push(dot.textContent);
    window.__liveTimes.push(Date.now());
  }).observe(dot, {childList: true, characterData: true, subtree: true});
});
"""
"""Records every text the live status shows (`window.__liveTexts`) and the page's time
when it did (`window.__liveTimes`)."""

SERVER_ENV = {"BEAMWEAVER_LIVE_SOCKETS_PER_USER": "1"}
PAUSED = '#live-status[data-state="paused"]'
LIVE = '#live-status[data-state="open"][data-synced]'


def test_a_page_past_the_limit_says_live_updates_are_paused_and_retries_slowly(
    sessions: Any,
) -> None:
    from playwright.sync_api import TimeoutError as NotYet

    alice = sessions(make_reviewer("alice"))
    service.start_run("tool_review", {}, thread_id="limit-1")
    item = paused_item("limit-1")
    other_tab = alice.context.new_page()
    other_tab.goto(alice.base + "/")
    other_tab.wait_for_selector(LIVE, timeout=WAIT)
    page = alice.page
    sockets: list[str] = []
    page.on("websocket", lambda ws: sockets.append(ws.url))
    page.clock.install()
    page.add_init_script(script=RECORD_STATUS)

    alice.open(f"/items/{item.pk}/")

    status = page.wait_for_selector(PAUSED, timeout=WAIT)
    # The page's clock has run in real time since `install`, so the seconds a loaded
    # machine takes from here to the fast-forward below count towards the first wait
    # (CI once saw the retry within "14 s"). Stop it, and count from the refusal.
    page.clock.pause_at((page.evaluate("Date.now()") + 100) / 1000)
    since_refused = page.evaluate(
        "Date.now() - window.__liveTimes[window.__liveTexts.findIndex("
        "function (text) { return text.indexOf('Live updates paused') === 0; })]"
    )
    # Accepted, then closed: the socket opened, but the page never said "Live".
    assert "Live" not in page.evaluate("window.__liveTexts")
    assert status.inner_text() == (
        "Live updates paused: too many of your BeamWeaver pages are open. Close some; "
        "this page reconnects by itself (until then it refreshes less often)."
    )
    shown_on_a_phone(page, status)
    # The first retry comes 15 to 30 s later, not within a second as after a 1006.
    page.clock.fast_forward(14_000 - since_refused)
    page.wait_for_timeout(200)  # a socket opened meanwhile is reported by now
    assert len(sockets) == 1
    with page.expect_websocket():
        page.clock.fast_forward(16_000)
    page.wait_for_selector(PAUSED, timeout=WAIT)  # refused again: the other tab is open
    assert len(sockets) == 2

    other_tab.close()
    for _ in range(5):  # the server frees the other tab's place when its socket ends
        page.clock.fast_forward("08:00")
        try:
            page.wait_for_selector(LIVE, timeout=3_000)
            break
        except NotYet:
            continue
    assert page.inner_text("#live-status") == "Live"
    assert "Waiting for your decision." in page.inner_text("#item-status")
