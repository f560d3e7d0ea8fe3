"""In Chromium, at desktop and phone width: a proposal with withheld secrets, invisible
characters and a look-alike letter, revealed by a reviewer with the permission; an old
thread id that climbs out of its path; the simulation refusing a pattern RE2 cannot run.
No console error, nothing wider than the screen (issue 13, findings 5, 6, 12)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User

from beamweaver_core.runtime import service
from reviews.models import AuditEvent
from tests.browser.test_inbox_live import WAIT, paused_item
from tests.reviews.conftest import make_reviewer
from tests.support.legacy import unchecked_thread_ids

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARGS = {
    "to": "billing@p\u0430ypal.com",
    "subject": "Invoice ACME-SUPPLIER\ufe01\U000e0100",
    "body": "Pay\u00a0now\u2800.",
    "config": {"auth": {"role": "admin"}, "api_key": "k-live-7f3a9c"},
}
SHOTS = os.environ.get("BEAMWEAVER_SHOTS", "")  # a folder: save screenshots there
WIDTHS = {"desktop": (1280, 900), "phone": (390, 844)}


def _watch(session: Any) -> list[str]:
    errors: list[str] = []
    session.page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    return errors


def _fits(session: Any, width: int, where: str) -> None:
    scroll = session.page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width, f"{where} is {scroll}px wide at {width}px"


@pytest.mark.parametrize("size", list(WIDTHS))
def test_secrets_invisible_characters_and_reveal(sessions: Any, size: str) -> None:
    width, height = WIDTHS[size]
    carol = make_reviewer("carol")
    carol.user_permissions.add(Permission.objects.get(codename="reveal_secrets"))
    alice = sessions(make_reviewer("alice"))
    revealer = sessions(User.objects.get(pk=carol.pk))
    for session in (alice, revealer):
        session.page.set_viewport_size({"width": width, "height": height})
    errors = _watch(alice) + _watch(revealer)
    with unchecked_thread_ids():  # a thread from before the thread id rule
        service.start_run(
            "tool_review",
            {"calls": [{"name": "send_email", "args": ARGS}]},
            thread_id=f"/../../{size}/",
        )
    item = paused_item(f"/../../{size}/")

    page = alice.open(f"/items/{item.pk}/")
    alice.wait_live()
    assert page.locator(".withheld").first.is_visible()
    assert "config.api_key" in page.inner_text(".withheld")
    assert page.locator("#reveal-button").count() == 0
    assert page.locator(".args mark.ctl").count() >= 3
    assert page.locator(".args mark.confusable").count() == 1
    assert "k-live-7f3a9c" not in page.content()
    _fits(alice, width, "item page")
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / f"item-{size}.png"), full_page=True)

    page.click(".page-head .meta a[href^='/threads/']")
    page.wait_for_selector("h1 code.thread-id", timeout=WAIT)
    assert page.inner_text("h1 code.thread-id") == f"/../../{size}/"
    assert "/threads/" in page.url and "/admin" not in page.url
    _fits(alice, width, "thread page")

    other = revealer.open(f"/items/{item.pk}/")
    other.click("#reveal-button")
    other.wait_for_selector(".withheld:has-text('Secrets revealed')", timeout=WAIT)
    other.click("summary:has-text('Canonical JSON')")
    assert "k-live-7f3a9c" in other.inner_text("details.raw-json pre")
    _fits(revealer, width, "revealed item page")
    if SHOTS:
        other.screenshot(path=str(Path(SHOTS) / f"revealed-{size}.png"), full_page=True)
    assert AuditEvent.objects.filter(action="revealed", actor=carol).count() == 1

    sim = alice.open("/simulate/")
    sim.fill("#id_policy", '{"send_email": {"when": {"to": {"matches": "@(?!example)"}}}}')
    sim.click("button:has-text('Simulate')")
    sim.wait_for_selector("#policy-problems", timeout=WAIT)
    assert "RE2" in sim.inner_text("#policy-problems")
    _fits(alice, width, "simulation page")

    alice.open("/?status=all")
    _fits(alice, width, "inbox")
    assert errors == [] and alice.errors == [] and revealer.errors == []
    assert alice.csp_violations == [] and revealer.csp_violations == []
