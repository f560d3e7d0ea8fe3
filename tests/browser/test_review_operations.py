"""Review operations in real browsers: a claim seen live by another reviewer, the item
page's keyboard shortcuts, the inbox's j/k, batch decisions from the inbox, and the new
pages at phone width (all without CSP violations or script errors)."""

from __future__ import annotations

from typing import Any

import pytest

from beamweaver_core.runtime import service
from reviews.models import Decision, ReviewItem
from tests.browser.test_inbox_live import WAIT, paused_item
from tests.reviews.conftest import make_manager, make_reviewer
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SUBMIT = "#decision-form button[type=submit]:has-text('Submit decision')"


def clean(*sessions: Any) -> None:
    for session in sessions:
        assert session.errors == [] and session.csp_violations == [] and session.dialogs == []


def test_a_claim_is_seen_live_by_another_reviewer_who_then_cannot_decide(
    sessions: Any,
) -> None:
    alice, bob = sessions(make_reviewer("alice")), sessions(make_reviewer("bob"))
    service.start_run("tool_review", {}, thread_id="claim-1")
    item = paused_item("claim-1")
    for session in (alice, bob):
        session.open(f"/items/{item.pk}/")
        session.wait_live()

    alice.page.click("#claim-button")
    alice.page.wait_for_selector("#item-claim:has-text('you')", timeout=WAIT)

    bob.page.wait_for_selector("#item-claim:has-text('alice')", timeout=WAIT)
    assert "only they can decide it now" in bob.page.inner_text("#item-claim")
    assert bob.page.locator("#claim-button").count() == 0
    bob.page.check("input[name=d0-type][value=approve]")
    bob.page.click(SUBMIT)
    refusal = bob.page.wait_for_selector("#decision-outcome", timeout=WAIT)
    assert "alice claimed this item" in refusal.inner_text()
    assert not Decision.objects.filter(item=item).exists()

    alice.page.click("#release-button")
    bob.page.wait_for_selector("#item-claim:has-text('nobody')", timeout=WAIT)
    bob.page.wait_for_selector("#claim-button", timeout=WAIT)
    assert bob.page.is_hidden("#session-banner")
    clean(alice, bob)


def test_keyboard_a_approves_after_enter(sessions: Any) -> None:
    alice = sessions(make_reviewer("alice"))
    service.start_run("tool_review", {}, thread_id="keys-a")
    item = paused_item("keys-a")
    page = alice.open(f"/items/{item.pk}/")
    alice.wait_live()

    page.keyboard.press("a")

    assert page.is_checked("input[name=d0-type][value=approve]")
    assert page.evaluate("document.activeElement.id") == "decision-submit"
    assert not Decision.objects.filter(item=item).exists()
    page.keyboard.press("Enter")
    page.wait_for_selector("#item-status:has-text('Decided by you')", timeout=WAIT)
    assert Decision.objects.get(item=item).decision_types == ["approve"]
    clean(alice)


def test_keyboard_r_rejects_with_the_message_focused(sessions: Any) -> None:
    alice = sessions(make_reviewer("alice"))
    service.start_run("tool_review", {}, thread_id="keys-r")
    item = paused_item("keys-r")
    page = alice.open(f"/items/{item.pk}/")
    alice.wait_live()

    page.keyboard.press("r")
    assert page.evaluate("document.activeElement.name") == "d0-message"
    page.keyboard.type("Wrong recipient.")
    page.click(SUBMIT)

    page.wait_for_selector("#item-status:has-text('Decided by you')", timeout=WAIT)
    decision = Decision.objects.get(item=item)
    assert decision.answer["decisions"] == [{"type": "reject", "message": "Wrong recipient."}]
    clean(alice)


def test_keyboard_e_opens_the_edit_form_and_typing_there_is_not_a_shortcut(
    sessions: Any,
) -> None:
    alice = sessions(make_reviewer("alice"))
    service.start_run("tool_review", {}, thread_id="keys-e")
    item = paused_item("keys-e")
    page = alice.open(f"/items/{item.pk}/")
    alice.wait_live()

    page.keyboard.press("e")

    assert page.is_checked("input[name=d0-type][value=edit]")
    assert page.is_visible(".edit-panel")
    assert page.evaluate("document.activeElement.id").startswith("d0-arg")
    page.keyboard.press("a")  # typed into the field, not a shortcut
    assert page.is_checked("input[name=d0-type][value=edit]")
    clean(alice)


def three_in_the_inbox(session: Any, prefix: str) -> tuple[list[ReviewItem], Any]:
    """Three paused runs, listed in the session's live inbox (oldest first), searched by
    `prefix` so that items other tests of the module left pending are not on the page."""
    for n in (1, 2, 3):
        service.start_run("tool_review", {}, thread_id=f"{prefix}-{n}")
    paused = [paused_item(f"{prefix}-{n}") for n in (1, 2, 3)]
    # Workers run the three concurrently: they pause in any order, and the inbox lists
    # them in the order they paused (created_at, id), which is the order returned here.
    items = sorted(paused, key=lambda item: (item.created_at, item.pk))
    page = session.open(f"/?q={prefix}")
    session.wait_live()
    page.wait_for_selector(f"#item-row-{items[2].pk}", timeout=WAIT)
    return items, page


def test_batch_approval_from_the_inbox_reports_each_item(sessions: Any) -> None:
    alice = sessions(make_reviewer("alice"))
    items, page = three_in_the_inbox(alice, "batch")

    assert page.is_disabled("#batch-form button[value=approve]")
    for item in items[:2]:
        page.check(f"#item-row-{item.pk} input.row-select")
    page.wait_for_selector("#batch-count:has-text('2 selected')")
    page.click("#batch-form button[value=approve]")

    page.wait_for_selector("#batch-report:has-text('2 applied.')", timeout=WAIT)
    wait_for(lambda: Decision.objects.filter(item__in=items[:2]).count() == 2)
    for item in items[:2]:
        page.wait_for_selector(f"#item-row-{item.pk}", state="detached", timeout=WAIT)
    assert page.is_visible(f"#item-row-{items[2].pk}")
    assert ReviewItem.objects.get(pk=items[2].pk).is_pending
    clean(alice)


def test_ticked_rows_stay_ticked_when_a_push_or_the_poll_renders_them_again(
    sessions: Any,
) -> None:
    """An operator's ticks survive the live updates that re-render their rows: a push for
    the row (here bob claims it) and the catch-up poll that replaces the whole list."""
    alice = sessions(make_reviewer("alice"))
    items, page = three_in_the_inbox(alice, "ticks")
    first, second = (f"#item-row-{item.pk} input.row-select" for item in items[:2])
    page.check(first)
    page.check(second)
    page.wait_for_selector("#batch-count:has-text('2 selected')", timeout=WAIT)

    # bob claims the first row in his own browser: the server pushes it to alice's inbox.
    bob = sessions(make_reviewer("bob"))
    bob.open(f"/items/{items[0].pk}/")
    bob.wait_live()
    bob.page.click("#claim-button")
    bob.page.wait_for_selector("#item-claim:has-text('you')", timeout=WAIT)
    page.wait_for_selector(f"#item-row-{items[0].pk}:has-text('claimed by bob')", timeout=WAIT)
    assert page.is_checked(first) and page.is_checked(second)

    def poll() -> None:  # what the page's poller does, now rather than in 20 s
        page.evaluate(
            "document.getElementById('inbox-list').dataset.old = 'yes';"
            "htmx.ajax('GET', location.href, {target: '#inbox-list', swap: 'outerHTML'})"
        )
        page.wait_for_selector("#inbox-list:not([data-old])", timeout=WAIT)

    poll()
    assert page.is_checked(first) and page.is_checked(second)
    assert page.inner_text("#batch-count") == "2 selected"
    page.uncheck(second)
    page.wait_for_selector("#batch-count:has-text('1 selected')", timeout=WAIT)
    poll()
    assert page.is_checked(first) and not page.is_checked(second)
    assert not page.is_checked(f"#item-row-{items[2].pk} input.row-select")
    assert page.inner_text("#batch-count") == "1 selected"
    clean(alice, bob)


def test_inbox_keys_j_and_k_move_and_enter_opens(sessions: Any) -> None:
    alice = sessions(make_reviewer("alice"))
    items, page = three_in_the_inbox(alice, "keys-jk")

    rows = page.eval_on_selector_all("#inbox-rows > li", "els => els.map(e => e.id)")
    assert rows == [f"item-row-{item.pk}" for item in items], rows
    for key in ("j", "j", "j", "j", "k"):  # j stops at the last row
        page.keyboard.press(key)
    # A live push may re-render the rows meanwhile: the selection must survive it.
    page.wait_for_selector(f"#item-row-{items[1].pk}.is-selected", timeout=WAIT)
    assert page.locator("#inbox-rows > li.is-selected").count() == 1
    page.keyboard.press("k")
    page.keyboard.press("k")  # k stops at the first row
    page.wait_for_selector(f"#item-row-{items[0].pk}.is-selected", timeout=WAIT)
    page.keyboard.press("j")
    page.keyboard.press("Enter")

    page.wait_for_url(f"**/items/{items[1].pk}/", timeout=WAIT)
    clean(alice)


def test_the_review_operations_pages_fit_a_phone(sessions: Any) -> None:
    alice = sessions(make_manager("manager"))
    alice.page.set_viewport_size({"width": 375, "height": 740})
    service.start_run("tool_review", {}, thread_id="phone-ops")
    item = paused_item("phone-ops")

    for path in ("/", f"/items/{item.pk}/", "/analytics/", "/simulate/", "/notifications/"):
        alice.open(path)
        width = alice.page.evaluate("document.documentElement.scrollWidth")
        assert width <= 375, f"{path} is {width}px wide"
    clean(alice)


def test_the_admin_run_page_shows_the_context_read_only(sessions: Any) -> None:
    """The run's context on its admin page, as plain text, with no field to edit it (and,
    like every page, no inline style the CSP refuses)."""
    user = make_reviewer("root", is_staff=True, is_superuser=True)
    root = sessions(user)
    run = service.start_run(
        "tool_review", {}, thread_id="admin-context", user=user, context={"tenant": "acme"}
    )
    wait_for(lambda: ReviewItem.objects.filter(thread_id="admin-context").exists())

    page = root.open(f"/admin/beamweaver_core/run/{run.pk}/change/")

    shown = page.inner_text(".field-context_json")
    assert '"tenant": "acme"' in shown and '"username": "root"' in shown
    assert page.locator("textarea, input[name=context]").count() == 0
