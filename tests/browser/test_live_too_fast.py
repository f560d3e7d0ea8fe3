"""A live page refused because its user opened live pages too fast (close code 4430,
`BEAMWEAVER["RATE_SOCKETS"]`), in a real browser: it shows "Reconnecting…", as after any
lost connection, opens no socket until the seconds the server said are over, and goes
live once the window has ended."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.browser.test_inbox_live import WAIT
from tests.browser.test_live_limit import LIVE, RECORD_STATUS
from tests.reviews.conftest import make_reviewer

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WINDOW = 8
SERVER_ENV = {"BEAMWEAVER_RATE_SOCKETS": f"1/{WINDOW}"}
RECONNECTING = '#live-status[data-state="closed"]'


def sleep_into_the_next_window(after: float = 0.05) -> None:
    """The server counts in fixed windows of real time (every `WINDOW` s since the epoch)."""
    time.sleep(WINDOW - time.time() % WINDOW + after)


def test_a_page_opened_too_fast_waits_out_the_window_then_goes_live(sessions: Any) -> None:
    alice = sessions(make_reviewer("alice"))
    first, page = alice.context.new_page(), alice.page
    sockets: list[str] = []
    told: list[dict[str, Any]] = []

    def heard(payload: str | bytes) -> None:
        if isinstance(payload, str) and payload.startswith("{"):
            told.append(json.loads(payload))

    def watch(socket: Any) -> None:
        sockets.append(socket.url)
        socket.on("framereceived", heard)

    page.on("websocket", watch)
    page.clock.install()
    page.add_init_script(script=RECORD_STATUS)
    sleep_into_the_next_window()
    first.goto(alice.base + "/")
    first.wait_for_selector(LIVE, timeout=WAIT)

    alice.open("/")

    status = page.wait_for_selector(RECONNECTING, timeout=WAIT)
    # From now on the page's time moves only as told (`pause_at` takes seconds, and a
    # time ahead: the page's clock runs on meanwhile).
    page.clock.pause_at((page.evaluate("Date.now()") + 500) / 1000)
    # It ran in real time until then: what a loaded machine took since the refusal
    # counts towards the page's wait, so the fast-forward below counts from the refusal.
    since_refused = page.evaluate(
        "Date.now() - window.__liveTimes[window.__liveTexts.lastIndexOf('Reconnecting…')]"
    )
    assert status.inner_text() == "Reconnecting…"
    assert set(page.evaluate("window.__liveTexts")) <= {"Connecting…", "Reconnecting…"}
    [seconds] = [frame["seconds"] for frame in told if frame["type"] == "retry"]
    assert 2 < seconds <= WINDOW, "the two handshakes fell into different windows"
    # No second socket while the seconds the server said are not over.
    page.clock.fast_forward(max(0, (seconds - 2) * 1000 - since_refused))
    page.wait_for_timeout(300)
    assert len(sockets) == 1
    assert page.inner_text("#live-status") == "Reconnecting…"

    sleep_into_the_next_window(after=0.2)
    with page.expect_websocket(timeout=WAIT):
        page.clock.fast_forward(7_000)  # the rest of the wait, with its 0 to 5 s of jitter
    page.clock.resume()

    page.wait_for_selector(LIVE, timeout=WAIT)
    assert page.inner_text("#live-status") == "Live"
    assert len(sockets) == 2
