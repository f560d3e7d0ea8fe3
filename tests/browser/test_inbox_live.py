"""The review loop in real browsers: live inboxes, decisions, refusals, hostile payloads."""

from __future__ import annotations

from typing import Any

import pytest

from beamweaver_core.models import Run
from beamweaver_core.runtime import service
from reviews.models import Decision, ReviewItem
from tests.reviews.conftest import PASSWORD, make_reviewer
from tests.support.legacy import unchecked_thread_ids
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WAIT = 15_000
XSS = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(2)>',
    '<div hx-get="/admin/" hx-trigger="load">hx</div>',
    "<svg onload=alert(3)>",
    "javascript:alert(4)",
    "{{ request }}{% debug %}",
]


def paused_item(thread_id: str) -> ReviewItem:
    return wait_for(lambda: ReviewItem.objects.filter(thread_id=thread_id).first())


def editing(sessions: Any, thread_id: str) -> tuple[Any, Any]:
    """Alice's session and her live page of a paused `tool_review` run (thread
    `thread_id`), its edit form open."""
    alice = sessions(make_reviewer("alice"))
    service.start_run("tool_review", {}, thread_id=thread_id)
    page = alice.open(f"/items/{paused_item(thread_id).pk}/")
    alice.wait_live()
    page.check("input[name=d0-type][value=edit]")
    return alice, page


def test_two_reviewers_see_a_run_pause_live_and_one_approves(sessions: Any) -> None:
    alice, bob = sessions(make_reviewer("alice")), sessions(make_reviewer("bob"))
    for session in (alice, bob):
        session.open("/")
        session.wait_live()
        assert session.page.locator("#inbox-rows > li").count() == 0

    run = service.start_run("tool_review", {}, thread_id="live-1")
    row = None
    for session in (alice, bob):
        session.page.wait_for_selector("#inbox-rows > li", timeout=WAIT)
        row = session.page.locator("#inbox-rows > li").first
        assert "send_email" in row.inner_text()
        session.page.wait_for_function("document.title.startsWith('(1) Inbox')", timeout=WAIT)
    assert row is not None
    row_id = row.get_attribute("id")

    alice.page.keyboard.press("j")
    alice.page.keyboard.press("Enter")
    alice.page.wait_for_selector("#decision-form", timeout=WAIT)
    alice.page.check("input[name=d0-type][value=approve]")
    alice.page.click("#decision-form button[type=submit]:has-text('Submit decision')")
    # The answer to the POST and the live push both say so; either may come first.
    alice.page.wait_for_selector("#item-status:has-text('Decided by you')", timeout=WAIT)

    bob.page.wait_for_selector(f"#{row_id}", state="detached", timeout=WAIT)
    bob.page.wait_for_function("document.title === 'Inbox · BeamWeaver'", timeout=WAIT)
    assert "Inbox zero." in bob.page.inner_text("#inbox-list")

    alice.page.click("text=Watch the thread")
    alice.page.wait_for_selector('#thread-status [data-status="completed"]', timeout=WAIT)
    assert wait_for(
        lambda: Run.objects.filter(thread_id=run.thread_id, status="succeeded").exists()
    )
    alice.page.wait_for_selector("#thread-events li.event-run-completed", timeout=WAIT)
    for session in (alice, bob):
        assert session.errors == [] and session.dialogs == []
        assert session.csp_violations == []


def test_an_edit_with_a_schema_error_is_shown_inline(sessions: Any) -> None:
    alice = sessions(make_reviewer("alice"))
    bob = sessions(make_reviewer("bob"))
    service.start_run("tool_review", {}, thread_id="edit-1")
    item = paused_item("edit-1")
    page = alice.open(f"/items/{item.pk}/")
    alice.wait_live()
    bob.open(f"/items/{item.pk}/")
    page.wait_for_selector("#presence strong:has-text('bob')", timeout=WAIT)

    page.check("input[name=d0-type][value=edit]")
    page.fill("#d0-arg2", "Monthly report")
    page.wait_for_selector("#diff-0 tr.change-changed", timeout=WAIT)
    assert "Monthly report" in page.inner_text("#diff-0")
    page.fill("#d0-arg1", "9")
    page.click("#decision-form button[type=submit]:has-text('Submit decision')")

    error = page.wait_for_selector("#d0-arg1-error", timeout=WAIT)
    assert "9 is greater than the maximum of 5" in error.inner_text()
    assert page.input_value("#d0-arg2") == "Monthly report"
    item.refresh_from_db()
    assert item.status == "pending"

    page.fill("#d0-arg1", "2")
    page.click("#decision-form button[type=submit]:has-text('Submit decision')")
    page.wait_for_selector("#item-status:has-text('Decided by you')", timeout=WAIT)
    decision = Decision.objects.get(item=item)
    assert decision.answer["decisions"][0]["edited_action"]["args"]["priority"] == 2
    assert alice.errors == [] and alice.csp_violations == []


def test_each_edit_is_previewed_once_even_when_the_field_is_left(sessions: Any) -> None:
    """An operator types into one argument, then moves to the next and types there: two
    edits, two previews. Leaving the first field (its `change` event) sent its preview a
    second time, the same form again, and the diff was swapped in twice. Choosing to
    edit the JSON instead is still previewed."""
    alice, page = editing(sessions, "preview-once")

    page.click("#d0-arg2")
    page.keyboard.press("End")
    page.keyboard.type(" (draft)")
    page.wait_for_selector("#diff-0 ins:has-text('Weekly report (draft)')", timeout=WAIT)
    page.click("#d0-arg0")
    page.keyboard.press("End")
    page.keyboard.type(" Thanks.")
    page.wait_for_selector("#diff-0 ins:has-text('Bye. Thanks.')", timeout=WAIT)

    previews = [url for url in alice.requests if url.endswith("/actions/0/preview/")]
    assert len(previews) == 2
    assert page.input_value("#d0-arg2") == "Weekly report (draft)"
    page.click("details.json-mode summary")
    with page.expect_response("**/actions/0/preview/"):  # choosing the JSON previews it
        page.check("input[name=d0-mode][value=json]")


def test_a_refused_decision_swaps_in_without_inline_styles(sessions: Any) -> None:
    """A reviewer resized a text box (the browser gives it a style attribute), then sent
    an invalid edit: the 422 answer swaps in without any CSP violation (htmx's settle step
    copied the style attribute to the new form, which the CSP refuses); the `sessions`
    fixture fails the test on any violation or console error."""
    _alice, page = editing(sessions, "resized-1")
    # What dragging a text box's corner does.
    page.eval_on_selector("#d0-message", "box => { box.style.height = '12em'; }")
    page.fill("#d0-arg1", "9")
    page.click("#decision-form button[type=submit]:has-text('Submit decision')")

    page.wait_for_selector("#d0-arg1-error", timeout=WAIT)
    assert page.locator("#d0-message").count() == 1


def test_a_stale_double_decision_is_refused(sessions: Any) -> None:
    alice, bob = sessions(make_reviewer("alice")), sessions(make_reviewer("bob"))
    service.start_run("tool_review", {}, thread_id="stale-1")
    item = paused_item("stale-1")
    # Bob's page gets no live pushes, so his form is still there when Alice has decided.
    bob.page.route_web_socket("**/ws/**", lambda ws: None)
    bob.open(f"/items/{item.pk}/")
    alice.open(f"/items/{item.pk}/")

    alice.page.check("input[name=d0-type][value=approve]")
    alice.page.dblclick("#decision-form button[type=submit]:has-text('Submit decision')")
    alice.page.wait_for_selector("#item-status:has-text('Decided by you')", timeout=WAIT)
    bob.page.check("input[name=d0-type][value=reject]")
    bob.page.click("#decision-form button[type=submit]:has-text('Submit decision')")

    refusal = bob.page.wait_for_selector("#decision-outcome", timeout=WAIT)
    assert "Refused: Already decided by alice at" in refusal.inner_text()
    assert bob.page.locator("#decision-form").count() == 0
    assert Decision.objects.filter(item=item).count() == 1
    assert Decision.objects.get(item=item).user.username == "alice"
    assert Run.objects.filter(thread_id="stale-1", kind="resume").count() == 1


def test_an_xss_payload_in_tool_arguments_renders_as_text(sessions: Any) -> None:
    alice = sessions(make_reviewer("alice"))
    page = alice.open("/")
    alice.wait_live()
    args = {"to": XSS[1], "subject": XSS[0], "body": "\n".join(XSS)}
    thread_id = "xss-" + XSS[1]
    with unchecked_thread_ids():  # a thread id from before the rule
        service.start_run(
            "tool_review", {"calls": [{"name": "send_email", "args": args}]}, thread_id=thread_id
        )

    page.wait_for_selector("#inbox-rows > li", timeout=WAIT)
    item = paused_item(thread_id)
    page.goto(f"{alice.base}/items/{item.pk}/")
    alice.wait_live()
    page.goto(f"{alice.base}/threads/{item.thread_id}/".replace('"', "%22"))
    alice.wait_live()
    page.goto(f"{alice.base}/items/{item.pk}/")
    page.wait_for_selector("#decision-form")

    text = page.inner_text(".payload")
    for payload in XSS:
        assert payload.splitlines()[0] in text
    assert page.locator("img[src=x], svg, script:not([src])").count() == 0
    assert page.evaluate("document.querySelectorAll('[onerror], [onload]').length") == 0
    assert alice.dialogs == []
    assert not [url for url in alice.requests if "/admin/" in url or url.endswith("/x")]
    assert alice.errors == [] and alice.csp_violations == []


def test_a_phone_width_inbox_and_item_page_fit_the_screen(sessions: Any) -> None:
    alice = sessions(make_reviewer("alice"))
    alice.page.set_viewport_size({"width": 375, "height": 740})
    service.start_run("tool_review", {}, thread_id="phone-" + "x" * 80)
    item = paused_item("phone-" + "x" * 80)

    for path in ("/", f"/items/{item.pk}/", f"/threads/{item.thread_id}/"):
        alice.open(path)
        width = alice.page.evaluate("document.documentElement.scrollWidth")
        assert width <= 375, f"{path} is {width}px wide"


def test_every_rows_meta_line_keeps_its_place_whatever_the_summary(sessions: Any) -> None:
    """Desktop: graph, thread and age at the top right of every row, beside the badge
    line, also when a long summary fills the row below; phone: under the summary."""
    alice = sessions(make_reviewer("alice"))
    summaries = ["", "Send 3 emails", "Refund 42.00 EUR to the card ending 4242 " * 4]
    rows = []
    for n, summary in enumerate(summaries):
        service.start_run("tool_review", {}, thread_id=f"meta-{n}")
        item = paused_item(f"meta-{n}")
        ReviewItem.objects.filter(pk=item.pk).update(summary=summary)
        rows.append(f"#item-row-{item.pk}")

    def boxes(row: str) -> dict[str, Any]:
        page = alice.page
        return {
            part: page.locator(f"{row} {selector}").bounding_box()
            for part, selector in {
                "link": ".row-link",
                "badge": ".row-main .badge",
                "meta": ".row-meta",
                "summary": ".row-summary",
            }.items()
            if page.locator(f"{row} {selector}").count()
        }

    alice.page.set_viewport_size({"width": 1280, "height": 900})
    alice.open("/")
    alice.wait_live()  # the list as the live resync left it
    for row in rows:
        box = boxes(row)
        link, meta, badge = box["link"], box["meta"], box["badge"]
        assert abs(meta["y"] - badge["y"]) < badge["height"], f"{row}: meta not on the top line"
        assert link["x"] + link["width"] - (meta["x"] + meta["width"]) < 24, f"{row}: not right"
        if "summary" in box:
            summary = box["summary"]
            assert summary["x"] + summary["width"] <= meta["x"] + 1, f"{row}: summary under meta"

    alice.page.set_viewport_size({"width": 375, "height": 740})
    alice.open("/")
    alice.wait_live()
    for row in rows[1:]:
        box = boxes(row)
        assert box["meta"]["y"] >= box["summary"]["y"] + box["summary"]["height"] - 1
    assert alice.page.evaluate("document.documentElement.scrollWidth") <= 375


def test_a_run_started_from_the_page_pauses_live_and_completes(sessions: Any) -> None:
    """Alice starts the run, so she is not offered Approve or Edit and the page says why;
    a self-approval sent anyway (a stale or crafted form) is refused in place, not shown
    as a lost session; Bob approves it."""
    alice = sessions(make_reviewer("alice"))
    bob = sessions(make_reviewer("bob"))
    page = alice.open("/runs/new/")
    page.select_option("#id_graph", "ops_assistant")
    page.fill("#id_message", "Refund order 1234 $250")
    page.click("button:has-text('Start the run')")

    page.wait_for_url("**/threads/**", timeout=WAIT)
    page.wait_for_selector('#thread-status [data-status="interrupted"]', timeout=WAIT)
    page.wait_for_selector("#thread-items .pending-list a:has-text('review item')", timeout=WAIT)
    page.click("#thread-items .pending-list a:has-text('review item')")
    page.wait_for_selector("#decision-form")
    assert "Refund order 1234 $250" in page.inner_text(".conversation")
    assert "Dana Whitfield" in page.inner_text(".description")
    assert page.locator("input[name=d0-type][value=approve]").count() == 0
    assert page.locator("input[name=d0-type][value=edit]").count() == 0
    assert "another reviewer must approve it" in page.inner_text("#decision-limits")
    page.eval_on_selector(
        "fieldset.choices",
        """set => set.insertAdjacentHTML('beforeend',
            '<input type="radio" name="d0-type" value="approve" checked>')""",
    )
    page.click("#decision-form button[type=submit]:has-text('Submit decision')")
    page.wait_for_selector(
        "#decision-outcome:has-text('You started this run, so you cannot approve it')",
        timeout=WAIT,
    )
    assert page.is_hidden("#session-banner")
    item_url = page.url
    page.click(".page-head .meta a")
    alice.wait_live()

    bob.page.goto(item_url)
    bob.page.check("input[name=d0-type][value=approve]")
    bob.page.click("#decision-form button[type=submit]:has-text('Submit decision')")
    bob.page.wait_for_selector("#item-status:has-text('Decided by you')", timeout=WAIT)

    page.wait_for_selector('#thread-status [data-status="completed"]', timeout=WAIT)
    # The state follows in the push after the run's events (the status may come first).
    page.wait_for_selector("#thread-state:has-text('Refunded $250.00 on order 1234')", timeout=WAIT)
    for session in (alice, bob):
        assert session.errors == [] and session.csp_violations == []


def test_a_changed_session_is_reported_instead_of_failing_silently(sessions: Any) -> None:
    user = make_reviewer("alice")
    alice = sessions(user)
    service.start_run("tool_review", {}, thread_id="session-1")
    item = paused_item("session-1")
    page = alice.open(f"/items/{item.pk}/")
    other_tab = alice.context.new_page()
    other_tab.goto(f"{alice.base}/accounts/login/")
    other_tab.fill("#id_username", "alice")
    other_tab.fill("#id_password", PASSWORD)
    other_tab.click("button:has-text('Log in')")
    other_tab.wait_for_url(f"{alice.base}/", timeout=WAIT)

    page.check("input[name=d0-type][value=approve]")
    # The refused POST is what this test is about: it is logged, and the page says why.
    alice.expect_errors("status of 403 (Forbidden)", "Response Status Error Code 403")
    page.click("#decision-form button[type=submit]:has-text('Submit decision')")

    banner = page.wait_for_selector("#session-banner", state="visible", timeout=WAIT)
    assert "Your session changed" in banner.inner_text()
    assert not Decision.objects.exists()
