"""The operator's views in Chromium: the admin's thread page (state, the pending
interrupt's review item, history, View on site), the phone layout (the first pending item
on the inbox's first screen, the item page's decide bar on its first screen and a
decision made from it), the rows' summaries, and the artefacts a failed test keeps."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest

from beamweaver_core.runtime import service
from reviews.models import ReviewItem
from tests.browser.conftest import DESKTOP, PHONE, save_artefacts
from tests.browser.test_inbox_live import WAIT, paused_item
from tests.reviews.conftest import make_reviewer
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REFUND = [{"name": "issue_refund", "args": {"order_id": "1234", "amount": 250}}]


def _in_first_screen(page: Any, selector: str) -> bool:
    """Whether the first `selector` lies wholly inside the viewport, once the page has
    settled: the live socket may swap the rows in just after the load (a moment with no
    box), so the layout is read again for up to 5 s before it is judged."""
    page.wait_for_selector(selector, state="visible")
    size = page.viewport_size
    for _ in range(50):
        box = page.locator(selector).first.bounding_box()
        if (
            box
            and box["y"] >= 0
            and box["y"] + box["height"] <= size["height"]
            and box["x"] + box["width"] <= size["width"]
        ):
            return True
        page.wait_for_timeout(100)
    return False


def test_the_admin_thread_page_shows_state_pending_history_and_links(sessions: Any) -> None:
    root = sessions(make_reviewer("root", is_staff=True, is_superuser=True))
    service.start_run("tool_review", {"calls": REFUND}, thread_id="admin-view")
    item = paused_item("admin-view")

    page = root.open("/admin/beamweaver_core/thread/admin-view/change/")

    state = page.inner_text("#bw-state-values")
    assert '"order_id": "1234"' in state and '"amount": 250' in state
    assert page.locator("#bw-history tr.bw-history-row").count() >= 1
    assert "propose" in page.inner_text("#bw-state")  # what runs next
    assert "interrupted" in page.inner_text("#bw-events")
    link = page.locator("#bw-pending a.bw-item-link")
    assert link.count() == 1
    link.click()
    page.wait_for_url(f"**/admin/reviews/reviewitem/{item.pk}/change/", timeout=WAIT)
    page.go_back()
    page.click("a.viewsitelink")
    page.wait_for_url("**/threads/admin-view/", timeout=WAIT)
    assert page.locator("h1").count() == 1


def test_at_phone_width_the_first_pending_item_is_on_the_inbox_first_screen(
    sessions: Any,
) -> None:
    alice = sessions(make_reviewer("alice"))
    service.start_run("tool_review", {"calls": REFUND}, thread_id="phone-inbox")
    paused_item("phone-inbox")
    alice.page.set_viewport_size(PHONE)

    page = alice.open("/")
    alice.wait_live()

    assert _in_first_screen(page, "#inbox-rows > li")
    assert page.is_hidden("nav[aria-label=Main]")
    assert page.is_hidden("form.filters") and page.is_hidden("#batch-form")
    assert "Run issue_refund as proposed?" in page.inner_text("#inbox-rows > li .row-summary")
    page.click(".nav-menu > summary")
    assert page.is_visible("nav[aria-label=Main] >> text=Audit log")
    page.check("#inbox-rows > li input.row-select")
    assert page.is_visible("#batch-form button[value=approve]")


def test_at_desktop_width_the_menu_filters_and_batch_bar_are_open(sessions: Any) -> None:
    alice = sessions(make_reviewer("alice"))
    service.start_run("tool_review", {}, thread_id="desktop-inbox")
    paused_item("desktop-inbox")

    page = alice.open("/")

    assert page.viewport_size == DESKTOP
    for selector in ("nav[aria-label=Main]", "form.filters", "#batch-form"):
        assert page.is_visible(selector), selector
    assert page.is_hidden(".nav-menu > summary")
    assert "Run send_email as proposed?" in page.inner_text("#inbox-rows > li .row-summary")


def _phone_item_page(sessions: Any, thread_id: str) -> tuple[Any, ReviewItem]:
    """A refund paused for review on `thread_id`, its item page open and live for a
    reviewer at phone width."""
    alice = sessions(make_reviewer("alice"))
    service.start_run("tool_review", {"calls": REFUND}, thread_id=thread_id)
    item = paused_item(thread_id)
    alice.page.set_viewport_size(PHONE)
    page = alice.open(f"/items/{item.pk}/")
    alice.wait_live()
    return page, item


def test_at_phone_width_the_item_page_leads_with_a_decide_bar_that_decides(
    sessions: Any,
) -> None:
    page, item = _phone_item_page(sessions, "phone-decide")

    assert _in_first_screen(page, "#decide-bar")
    assert _in_first_screen(page, ".action-card h3")
    decision = page.locator("#decision-panel").bounding_box()
    routing = page.locator("#item-routing").bounding_box()
    assert decision and routing and decision["y"] < routing["y"]
    page.click("#decide-bar #decide-approve")
    page.wait_for_selector("#item-status.status-decided", timeout=WAIT)
    wait_for(lambda: ReviewItem.objects.get(pk=item.pk).status == "decided")


def test_at_phone_width_a_field_scrolled_into_view_is_not_hidden_under_the_decide_bar(
    sessions: Any,
) -> None:
    """Scrolling that brings a field to the nearest edge of the screen (what
    `scrollIntoView({block: "nearest"})` does, and keyboard focus in some browsers) puts it
    at the bottom, where the sticky decide bar sits: the page keeps such fields above the
    bar (it used to cover them)."""
    page, _item = _phone_item_page(sessions, "phone-scroll")
    # The first field of the form below the first screen, brought into view.
    found = page.evaluate(
        """() => {
            const field = [...document.querySelectorAll(
                "#decision-panel input:not([type=hidden]), #decision-panel textarea")]
              .filter(e => !e.closest("#decide-bar") && e.offsetParent !== null)
              .find(e => e.getBoundingClientRect().top > window.innerHeight);
            if (!field) return false;
            field.setAttribute("data-test-target", "");
            field.scrollIntoView({block: "nearest"});
            return true;
        }"""
    )
    assert found, "the form fits on the first screen: nothing to scroll to"
    box = page.locator("[data-test-target]").bounding_box()
    bar = page.locator("#decide-bar").bounding_box()
    assert box and bar
    assert box["y"] + box["height"] <= bar["y"], (box, bar)


def _png_width(path: Path) -> int:
    with path.open("rb") as data:
        header = data.read(24)
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    return int(struct.unpack(">I", header[16:20])[0])


def test_a_failure_keeps_desktop_and_phone_screenshots_and_the_console_log(
    sessions: Any, tmp_path: Path
) -> None:
    alice = sessions(make_reviewer("alice"))
    page = alice.open("/")
    page.evaluate("console.info('kept in the log')")

    saved = save_artefacts([alice], tmp_path / "artefacts")

    names = sorted(path.name for path in saved)
    assert names == ["0-alice-console.log", "0-alice-desktop.png", "0-alice-phone.png"]
    assert _png_width(tmp_path / "artefacts" / "0-alice-desktop.png") == DESKTOP["width"]
    assert _png_width(tmp_path / "artefacts" / "0-alice-phone.png") == PHONE["width"]
    log = (tmp_path / "artefacts" / "0-alice-console.log").read_text()
    assert "kept in the log" in log and log.startswith("url: ")
    assert page.viewport_size == DESKTOP
