"""The inbox pages through the Django test client: access, rendering, decisions, safety."""

from __future__ import annotations

import csv
import io
import json
import re
from html import unescape as html_unescape
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from beamweaver_core.agent import HITL
from beamweaver_core.models import Run
from beamweaver_core.runtime import service
from reviews.models import AuditEvent, Decision, ReviewItem
from tests.reviews.conftest import (
    PASSWORD,
    SECRET,
    SECRET_EMAIL,
    client_for,
    make_reviewer,
    pause,
    run_next,
)
from tests.support.legacy import unchecked_thread_ids

pytestmark = pytest.mark.django_db

XSS = '<script>alert(1)</script>"><img src=x onerror=alert(2)><div hx-get="/admin/" hx-trigger="load">'
HTMX = {"HTTP_HX_REQUEST": "true"}


def form_fields(html: str) -> dict[str, str]:
    """The hidden fields of the decision form."""
    return dict(re.findall(r'<input type="hidden" name="(\w+)"[^>]* value="([^"]*)"', html))


def post_decision(client: Client, item: ReviewItem, data: dict[str, Any], **extra: Any) -> Any:
    page = client.get(f"/items/{item.pk}/")
    fields = form_fields(page.content.decode())
    fields.pop("csrfmiddlewaretoken", None)
    return client.post(f"/items/{item.pk}/decide/", {**fields, **data}, **extra)


# Access


@pytest.mark.parametrize("path", ["/", "/items/1/", "/threads/t/", "/runs/new/", "/audit/"])
def test_every_page_requires_login(path: str) -> None:
    response = Client().get(path)

    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=")


def test_an_htmx_request_without_a_session_is_sent_to_the_login_page_whole() -> None:
    response = Client().get("/", HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL="http://testserver/")

    assert response.status_code == 200
    assert response["HX-Redirect"] == "/accounts/login/?next=/"


def test_users_without_the_reviewer_permission_see_nothing(db: Any) -> None:
    item = pause()
    client = client_for(make_reviewer("mallory", reviewer=False))

    assert client.get("/").status_code == 403
    assert client.get(f"/items/{item.pk}/").status_code == 403
    assert client.get(f"/threads/{item.thread_id}/").status_code == 403


def test_unknown_items_and_threads_are_404(alice: User) -> None:
    client = client_for(alice)

    assert client.get("/items/999/").status_code == 404
    assert client.get("/threads/nope/").status_code == 404


def test_the_login_page_logs_a_reviewer_in(alice: User) -> None:
    client = Client()
    assert client.get("/accounts/login/").status_code == 200

    response = client.post("/accounts/login/", {"username": "alice", "password": PASSWORD})

    assert (response.status_code, response["Location"]) == (302, "/")
    assert client.get("/").status_code == 200


# Inbox


def test_the_inbox_lists_pending_items_oldest_first_with_counts_in_the_title(alice: User) -> None:
    first = pause()
    second = pause("approval", {"amount": 1})
    decided = pause()
    ReviewItem.objects.filter(pk=decided.pk).update(status="decided")

    html = client_for(alice).get("/").content.decode()

    assert "<title>(2) Inbox · BeamWeaver</title>" in html
    rows = re.findall(r'<li id="item-row-(\d+)"', html)
    assert rows == [str(first.pk), str(second.pk)]
    assert 'hx-ext="ws" ws-connect="/ws/inbox/"' in html


def test_the_inbox_filters_by_graph_tool_status_and_text(alice: User) -> None:
    email = pause()
    refund = pause(
        input={"calls": [{"name": "issue_refund", "args": {"order_id": "77", "amount": 9}}]}
    )
    question = pause("approval", {"amount": 1}, thread_id="needle-thread")
    client = client_for(alice)

    def rows(query: str) -> list[int]:
        html = client.get(f"/?{query}").content.decode()
        return [int(pk) for pk in re.findall(r'<li id="item-row-(\d+)"', html)]

    assert rows("graph=approval") == [question.pk]
    assert rows("tool=issue_refund") == [refund.pk]
    assert rows("q=needle") == [question.pk]
    assert rows("q=ops%40example.com") == [email.pk]
    assert rows("status=decided") == []
    assert rows("status=all") == [email.pk, refund.pk, question.pk]


def test_the_inbox_search_matches_what_the_page_shows_never_a_withheld_secret(
    alice: User,
) -> None:
    """A search that matched the raw payload told anyone who may see the item whether a
    guessed prefix of a withheld secret was right, one character at a time."""
    item = pause(input=SECRET_EMAIL)
    client = client_for(alice)

    def rows(q: str) -> list[int]:
        html = client.get("/", {"q": q}).content.decode()
        return [int(pk) for pk in re.findall(r'<li id="item-row-(\d+)"', html)]

    assert SECRET not in client.get(f"/items/{item.pk}/").content.decode()
    assert rows(SECRET[:-2]) == []
    assert rows("sk-live") == []
    assert rows("use [redacted] please") == [item.pk]
    assert rows("ops@example") == [item.pk]


def test_the_inbox_pages(alice: User, monkeypatch: pytest.MonkeyPatch) -> None:
    from reviews import inbox

    monkeypatch.setattr(inbox, "PAGE_SIZE", 2)
    items = [pause("approval", {"amount": i}) for i in range(3)]
    client = client_for(alice)

    page2 = client.get("/?page=2").content.decode()

    assert re.findall(r'<li id="item-row-(\d+)"', page2) == [str(items[2].pk)]
    assert "Page 2 of 2 (3 items)" in page2
    # Oldest first: the previous page holds earlier items, the next one later items.
    assert 'rel="prev">← Earlier</a>' in page2
    assert 'rel="next">Later →</a>' in client.get("/").content.decode()


def test_an_empty_inbox_says_so(alice: User) -> None:
    html = client_for(alice).get("/").content.decode()

    assert "Inbox zero." in html


def test_each_status_filter_lists_its_items(alice: User) -> None:
    items = {status: pause(thread_id=f"t-{status}") for status in ("decided", "expired")}
    ReviewItem.objects.filter(pk=items["decided"].pk).update(status="decided")
    ReviewItem.objects.filter(pk=items["expired"].pk).update(status="expired")
    cancelled = pause(thread_id="t-cancelled")
    client_for(alice).post(f"/cancel-run/{cancelled.thread_id}/")
    items["cancelled"] = cancelled
    client = client_for(alice)

    for status, item in items.items():
        html = client.get(f"/?status={status}").content.decode()
        assert re.findall(r'<li id="item-row-(\d+)"', html) == [str(item.pk)], status
    html = client.get("/").content.decode()
    assert "0</strong> pending · 1 decided · 1 cancelled · 1 expired" in html


def test_a_filter_matching_nothing_says_so_and_offers_the_way_back(alice: User) -> None:
    pause()

    html = client_for(alice).get("/?q=no-such-thing").content.decode()

    assert re.findall(r'<li id="item-row-(\d+)"', html) == []
    assert "Nothing matches these filters." in html
    assert '<a href="/">Show all pending items</a>' in html


def test_an_htmx_request_gets_the_list_partial(alice: User) -> None:
    pause()

    response = client_for(alice).get("/", **HTMX)

    html = response.content.decode()
    assert html.lstrip().startswith('<section id="inbox-list"')
    assert "<html" not in html


# Item page


def test_the_item_page_shows_each_action_with_only_its_allowed_decisions(alice: User) -> None:
    calls = [
        {"name": "send_email", "args": {"to": "a@b.c", "subject": "s", "body": "b"}},
        {"name": "notify", "args": {"text": "hi"}},
    ]
    item = pause(input={"calls": calls})

    html = client_for(alice).get(f"/items/{item.pk}/").content.decode()

    assert re.findall(r'name="d0-type" value="(\w+)"', html) == [
        "approve",
        "edit",
        "reject",
        "respond",
    ]
    assert re.findall(r'name="d1-type" value="(\w+)"', html) == ["approve", "reject"]
    assert 'name="approve_all"' in html
    assert "Submit 2 decisions" in html
    assert f'value="{item.digest}"' in html
    assert 'class="payload" hx-disable' in html


def test_untrusted_arguments_are_escaped_inside_hx_disable(alice: User) -> None:
    with unchecked_thread_ids():  # a thread id from before the rule
        item = pause(
            input={
                "calls": [{"name": "send_email", "args": {"to": XSS, "subject": XSS, "body": XSS}}]
            },
            thread_id=XSS,
        )

    html = client_for(alice).get(f"/items/{item.pk}/").content.decode()

    assert "<script>alert(1)" not in html
    assert "<img src=x" not in html
    assert '<div hx-get="/admin/"' not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    for payload in re.findall(r'<div class="payload"([^>]*)>', html):
        assert "hx-disable" in payload


def test_invisible_characters_are_made_visible(alice: User) -> None:
    item = pause(
        input={
            "calls": [
                {
                    "name": "send_email",
                    "args": {"to": "boss@corp", "subject": "in\u202egpj.exe", "body": "a\u200bb"},
                }
            ]
        }
    )

    html = client_for(alice).get(f"/items/{item.pk}/").content.decode()

    assert "[U+202E]" in html and "[U+200B]" in html
    assert "characters you cannot see" in html


def test_a_long_value_is_never_silently_truncated(alice: User) -> None:
    body = "x" * 200_000 + "DANGER-AT-THE-END"
    item = pause(
        input={
            "calls": [{"name": "send_email", "args": {"to": "a@b.c", "subject": "s", "body": body}}]
        }
    )

    html = client_for(alice).get(f"/items/{item.pk}/").content.decode()

    assert "Long value: 200017 characters" in html
    assert html.count("DANGER-AT-THE-END") >= 2  # in the summary's ending and in the full value


def test_the_edit_form_is_generated_from_the_schema(alice: User) -> None:
    item = pause()

    html = client_for(alice).get(f"/items/{item.pk}/").content.decode()

    labels = re.findall(r'<label for="d0-arg(\d)"><code>(\w+)</code>', html)
    assert labels == [("0", "body"), ("1", "priority"), ("2", "subject"), ("3", "to")]
    number = re.search(r'<input [^>]*\bid="d0-arg1"[^>]*>', html)
    assert number is not None
    assert 'type="number"' in number.group(0) and 'step="1"' in number.group(0)
    assert 'name="d0-arg1"' in number.group(0)
    assert 'name="d0-json"' in html


def test_the_conversation_so_far_is_shown(alice: User, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BEAMWEAVER_DEMO_MODEL", "scripted")
    item = pause(
        "ops_assistant", {"messages": [{"role": "user", "content": "Refund order 1234 $250"}]}
    )

    html = client_for(alice).get(f"/items/{item.pk}/").content.decode()

    assert "Conversation so far" in html
    assert "Refund order 1234 $250" in html
    assert "issue_refund" in html


# Decisions over HTTP


def test_approving_without_javascript_redirects_to_the_item(alice: User) -> None:
    item = pause()
    client = client_for(alice)

    response = post_decision(client, item, {"d0-type": "approve"})

    assert (response.status_code, response["Location"]) == (302, f"/items/{item.pk}/")
    page = client.get(response["Location"]).content.decode()
    assert "Decided" in page and "by <strong>you</strong>" in page
    assert run_next().status == "succeeded"


def test_approving_with_htmx_swaps_in_the_result(alice: User) -> None:
    item = pause()

    response = post_decision(client_for(alice), item, {"d0-type": "approve"}, **HTMX)

    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<section id="decision-panel"')
    assert "Decision recorded (approve); the run resumes." in html


def test_a_late_second_decision_names_the_winner(alice: User, bob: User) -> None:
    item = pause()
    bobs = client_for(bob)
    stale_page = bobs.get(f"/items/{item.pk}/").content.decode()
    post_decision(client_for(alice), item, {"d0-type": "approve"})

    fields = form_fields(stale_page)
    fields.pop("csrfmiddlewaretoken", None)
    response = bobs.post(f"/items/{item.pk}/decide/", {**fields, "d0-type": "reject"}, **HTMX)

    html = response.content.decode()
    assert response.status_code == 409
    assert "Already decided by alice at" in html
    assert Decision.objects.get().user == alice


def test_a_changed_payload_is_refused_with_a_reload_link(alice: User) -> None:
    item = pause()

    response = post_decision(client_for(alice), item, {"d0-type": "approve", "digest": "f" * 64})

    html = response.content.decode()
    assert response.status_code == 409
    assert "The proposal changed since you loaded it" in html
    assert f'href="/items/{item.pk}/">Reload the item' in html


def test_deciding_a_cancelled_item_is_410(alice: User) -> None:
    item = pause()
    client = client_for(alice)
    page = client.get(f"/items/{item.pk}/").content.decode()
    service.cancel_run(item.run_id)

    fields = form_fields(page)
    fields.pop("csrfmiddlewaretoken", None)
    response = client.post(f"/items/{item.pk}/decide/", {**fields, "d0-type": "approve"})

    assert response.status_code == 410
    assert "This item is cancelled (the run was cancelled)" in response.content.decode()


def test_deciding_an_unknown_or_forbidden_item_is_404_and_audited(alice: User) -> None:
    item = pause()
    outsider = client_for(make_reviewer("eve", reviewer=False))

    assert client_for(alice).post("/items/999/decide/", {"d0-type": "approve"}).status_code == 404
    assert outsider.post(f"/items/{item.pk}/decide/", {"d0-type": "approve"}).status_code == 403
    assert AuditEvent.objects.filter(action="refused", outcome="not_found").count() == 1


def test_schema_errors_are_rendered_inline_and_the_item_stays_pending(alice: User) -> None:
    item = pause()

    response = post_decision(
        client_for(alice),
        item,
        {
            "d0-type": "edit",
            "d0-mode": "fields",
            "d0-arg0": "body",
            "d0-arg1": "9",
            "d0-arg2": "subject",
            "d0-arg3": "to@example.com",
        },
        **HTMX,
    )

    html = response.content.decode()
    assert response.status_code == 422
    assert 'aria-invalid="true" aria-describedby="d0-arg1-error"' in html
    error = re.search(
        r'<div class="field-error" id="d0-arg1-error" role="alert">(.*?)</div>', html, re.S
    )
    assert error is not None
    assert "9 is greater than the maximum of 5" in error.group(1)
    assert 'value="9"' in html  # the reviewer's input is kept
    item.refresh_from_db()
    assert item.status == "pending"


def test_a_field_that_is_not_a_number_is_an_inline_error(alice: User) -> None:
    item = pause()

    response = post_decision(
        client_for(alice), item, {"d0-type": "edit", "d0-arg1": "high"}, **HTMX
    )

    assert response.status_code == 422
    assert "priority: &#x27;high&#x27; is not a number." in response.content.decode()


def test_an_edit_through_the_fields_keeps_unchanged_values_exactly(alice: User) -> None:
    item = pause(
        input={"calls": [{"name": "issue_refund", "args": {"order_id": "1", "amount": 250.0}}]}
    )

    response = post_decision(
        client_for(alice), item, {"d0-type": "edit", "d0-arg0": "250.0", "d0-arg1": "2"}
    )

    assert response.status_code == 302
    edit = {
        "type": "edit",
        "edited_action": {"name": "issue_refund", "args": {"amount": 250.0, "order_id": "2"}},
    }
    assert Decision.objects.get().answer == {
        "decisions": list(HITL.bind_decisions(HITL.from_value(item.payload), [edit]))
    }
    assert AuditEvent.objects.get(action="decided").diff[0]["changes"] == [
        {"field": "order_id", "change": "changed", "before": '"1"', "after": '"2"'}
    ]


def test_an_edit_as_raw_json(alice: User) -> None:
    item = pause()
    edited = '{"to": "x@example.com", "subject": "s", "body": "b"}'

    response = post_decision(
        client_for(alice), item, {"d0-type": "edit", "d0-mode": "json", "d0-json": edited}
    )

    assert response.status_code == 302
    args = Decision.objects.get().answer["decisions"][0]["edited_action"]["args"]
    assert args == {"to": "x@example.com", "subject": "s", "body": "b"}


def test_a_deeply_nested_json_edit_is_a_422_not_a_500(alice: User) -> None:
    item = pause()

    response = post_decision(
        client_for(alice),
        item,
        {"d0-type": "edit", "d0-mode": "json", "d0-json": "[" * 1000 + "]" * 1000},
    )

    assert response.status_code == 422
    assert "nested more than 32 levels" in response.content.decode()


def test_redacted_values_are_kept_when_editing(alice: User) -> None:
    secret = "sk-proj-abcdefghijklmnopqrstuvwx"
    item = pause(input={"calls": [{"name": "notify", "args": {"text": "hi", "api_key": secret}}]})
    client = client_for(alice)
    page = client.get(f"/items/{item.pk}/").content.decode()
    assert secret not in page

    post_decision(client, item, {"d0-type": "approve"})

    assert Decision.objects.get().summary == "approve"


def rendered_edit(html: str) -> dict[str, str]:
    """The edit inputs of the first card as the page renders them (what a browser posts
    back for the inputs the reviewer does not touch)."""
    inputs = re.findall(r'<input type="(?:text|number)" name="(d0-arg\d+)"([^>]*)>', html)
    fields = {
        name: html_unescape(value.group(1))
        if (value := re.search(r'value="([^"]*)"', attrs))
        else ""
        for name, attrs in inputs
    }
    (text,) = re.findall(r'<textarea name="d0-json"[^>]*>\n?([^<]*)</textarea>', html)
    return {**fields, "d0-json": html_unescape(text)}


def edit_post(shown: dict[str, str], mode: str, arg: str, value: str) -> dict[str, str]:
    """An edit posting every input as `shown` (`rendered_edit`), with argument `arg`
    set to `value` in its field (`mode` "fields") or in the JSON ("json")."""
    args = json.loads(shown["d0-json"])
    if mode == "json":
        edited = {"d0-json": json.dumps({**args, arg: value})}
    else:
        (name,) = [name for name, text in shown.items() if name != "d0-json" and text == args[arg]]
        edited = {name: value}
    return {**shown, "d0-type": "edit", "d0-mode": mode, **edited}


@pytest.mark.parametrize("mode", ["fields", "json"])
def test_an_edit_keeps_a_partly_redacted_value_left_as_shown(alice: User, mode: str) -> None:
    """The body showed as "use [redacted] please" and was posted back so beside an
    edited subject: it was stored with the placeholder's text in place of the secret."""
    item = pause(input=SECRET_EMAIL)
    client = client_for(alice)
    shown = rendered_edit(client.get(f"/items/{item.pk}/").content.decode())
    assert json.loads(shown["d0-json"])["body"] == "use [redacted] please"

    response = post_decision(client, item, edit_post(shown, mode, "subject", "new subject"))

    assert response.status_code == 302
    args = Decision.objects.get().answer["decisions"][0]["edited_action"]["args"]
    assert args == {
        "to": "ops@example.com",
        "subject": "new subject",
        "body": f"use {SECRET} please",
    }


@pytest.mark.parametrize("mode", ["fields", "json"])
def test_a_changed_value_still_holding_a_withheld_secrets_placeholder_is_refused(
    alice: User, mode: str
) -> None:
    """The reviewer cannot see the secret the placeholder stands for, so a changed text
    around it cannot be stored: neither the placeholder nor a guess of what it hid."""
    item = pause(input=SECRET_EMAIL)
    client = client_for(alice)
    shown = rendered_edit(client.get(f"/items/{item.pk}/").content.decode())

    response = post_decision(
        client, item, edit_post(shown, mode, "body", "please use [redacted] now")
    )

    assert response.status_code == 422
    assert (
        "body: still holds [redacted], a secret withheld from you. Leave the value as it "
        "was to keep it, or write it without [redacted]."
        in html_unescape(response.content.decode())
    )
    assert not Decision.objects.exists()
    item.refresh_from_db()
    assert item.status == "pending"


def test_several_actions_are_decided_in_one_submit(alice: User) -> None:
    calls = [
        {"name": "send_email", "args": {"to": "a@b.c", "subject": "s", "body": "b"}},
        {"name": "notify", "args": {"text": "hi"}},
    ]
    item = pause(input={"calls": calls})

    response = post_decision(
        client_for(alice),
        item,
        {
            "d0-type": "respond",
            "d0-message": "Sent it myself.",
            "d1-type": "reject",
            "d1-message": "no",
        },
    )

    assert response.status_code == 302
    assert Decision.objects.get().answer == {
        "decisions": [
            {"type": "respond", "message": "Sent it myself."},
            {"type": "reject", "message": "no"},
        ]
    }
    assert run_next().status == "succeeded"


def test_approve_all(alice: User) -> None:
    calls = [{"name": "notify", "args": {"text": "1"}}, {"name": "notify", "args": {"text": "2"}}]
    item = pause(input={"calls": calls})

    response = post_decision(client_for(alice), item, {"approve_all": "1"})

    assert response.status_code == 302
    assert Decision.objects.get().summary == "approve, approve"


def test_a_missing_choice_is_an_inline_error(alice: User) -> None:
    item = pause()

    response = post_decision(client_for(alice), item, {})

    assert response.status_code == 422
    assert "Choose a decision for this action." in response.content.decode()


def test_resubmitting_the_same_form_returns_the_first_outcome(alice: User) -> None:
    item = pause()
    client = client_for(alice)
    fields = form_fields(client.get(f"/items/{item.pk}/").content.decode())
    fields.pop("csrfmiddlewaretoken", None)

    first = client.post(f"/items/{item.pk}/decide/", {**fields, "d0-type": "approve"})
    second = client.post(f"/items/{item.pk}/decide/", {**fields, "d0-type": "approve"})

    assert first.status_code == second.status_code == 302
    assert Decision.objects.count() == 1
    assert Run.objects.filter(kind="resume").count() == 1


def test_a_plain_interrupt_is_answered_with_json_or_text(alice: User) -> None:
    item = pause("approval", {"amount": 1})
    client = client_for(alice)

    bad = post_decision(client, item, {"answer": "{nope", "answer_format": "json"})
    good = post_decision(client, item, {"answer": "yes please", "answer_format": "text"})

    assert bad.status_code == 422
    assert "The answer is not valid JSON" in bad.content.decode()
    assert good.status_code == 302
    assert Decision.objects.get().answer == "yes please"


def test_a_breakpoint_has_a_continue_button(alice: User) -> None:
    item = pause("checkpointed")
    client = client_for(alice)

    assert ">Continue</button>" in client.get(f"/items/{item.pk}/").content.decode()
    assert post_decision(client, item, {}).status_code == 302


def test_decisions_need_the_csrf_token(alice: User) -> None:
    item = pause()
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    page = client.get(f"/items/{item.pk}/").content.decode()
    fields = form_fields(page)

    without = client.post(
        f"/items/{item.pk}/decide/",
        {k: v for k, v in fields.items() if k != "csrfmiddlewaretoken"} | {"d0-type": "approve"},
    )
    by_get = client.get(f"/items/{item.pk}/decide/")
    with_token = client.post(f"/items/{item.pk}/decide/", {**fields, "d0-type": "approve"})

    assert without.status_code == 403
    assert "Your session changed" in without.content.decode()
    assert by_get.status_code == 405
    assert with_token.status_code == 302


def test_the_csrf_token_also_travels_in_the_htmx_header(alice: User) -> None:
    item = pause()
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    page = client.get(f"/items/{item.pk}/").content.decode()
    token = re.search(r"hx-headers='\{\"x-csrftoken\": \"([^\"]+)\"\}'", page).group(1)  # type: ignore[union-attr]
    fields = {k: v for k, v in form_fields(page).items() if k != "csrfmiddlewaretoken"}

    response = client.post(
        f"/items/{item.pk}/decide/",
        {**fields, "d0-type": "approve"},
        HTTP_X_CSRFTOKEN=token,
        **HTMX,
    )

    assert response.status_code == 200


def test_an_oversized_body_is_413(alice: User, settings: Any) -> None:
    item = pause()
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024

    response = client_for(alice).post(f"/items/{item.pk}/decide/", {"d0-json": "x" * 5000})

    assert response.status_code == 413


def test_the_edit_preview_shows_a_field_level_diff(alice: User) -> None:
    item = pause()

    response = client_for(alice).post(
        f"/items/{item.pk}/actions/0/preview/",
        {
            "d0-arg0": "All good.\r\nBye.",
            "d0-arg1": "",
            "d0-arg2": "New <b>subject</b>",
            "d0-arg3": "ops@example.com",
        },
        **HTMX,
    )

    html = response.content.decode()
    assert html.lstrip().startswith('<div id="diff-0"')
    rows = re.findall(r'<tr class="change-(\w+)">\s*<th scope="row"><code>(\w+)</code>', html)
    assert rows == [("changed", "subject")]
    assert "New &lt;b&gt;subject&lt;/b&gt;" in html


def test_the_edit_preview_reports_schema_problems(alice: User) -> None:
    item = pause()

    response = client_for(alice).post(
        f"/items/{item.pk}/actions/0/preview/", {"d0-arg1": "7"}, **HTMX
    )

    assert "7 is greater than the maximum of 5" in response.content.decode()


@pytest.mark.parametrize("text", ["1e999", "-1e999", "nan", "Infinity"])
def test_a_number_that_is_not_finite_is_refused_on_its_field(alice: User, text: str) -> None:
    """A float() of "1e999" is infinity, which JSON cannot carry: the preview and the
    decision failed with a 500 building its canonical JSON."""
    item = pause()
    client = client_for(alice)
    shown = rendered_edit(client.get(f"/items/{item.pk}/").content.decode())
    (priority,) = [name for name, value in shown.items() if value == ""]
    edit = {**shown, "d0-type": "edit", "d0-mode": "fields", priority: text}
    message = f"priority: &#x27;{text}&#x27; is not a finite number."

    preview = client.post(f"/items/{item.pk}/actions/0/preview/", edit, **HTMX)
    decided = post_decision(client, item, edit)

    assert (preview.status_code, decided.status_code) == (422, 422)
    assert message in preview.content.decode()
    assert message in decided.content.decode()
    assert not Decision.objects.exists()


# Thread page, start a run, audit


def test_the_thread_page_shows_status_events_state_history_and_items(alice: User) -> None:
    item = pause()
    post_decision(client_for(alice), item, {"d0-type": "approve"})
    run_next()

    html = client_for(alice).get(f"/threads/{item.thread_id}/").content.decode()

    assert 'data-status="completed"' in html
    assert re.search(r'<li id="run-event-[0-9a-f-]+-\d+" class="event event-run-completed"', html)
    assert "Timeline" in html and "executed" in html
    assert f'href="/items/{item.pk}/"' in html
    assert "<strong>approve</strong> on" in html
    assert f'ws-connect="/ws/threads/{item.thread_id}/"' in html


def test_thread_ids_with_slashes_and_odd_characters_have_pages(alice: User) -> None:
    with unchecked_thread_ids():  # a thread id from before the rule
        item = pause(thread_id="team/a b?#\n")
    client = client_for(alice)

    typed = client.get("/threads/team/a%20b%3F%23%0A/")
    linked = client.get("/threads/team%252Fa%2520b%253F%2523%250A/")

    assert typed.status_code == linked.status_code == 200
    html = linked.content.decode()
    assert 'ws-connect="/ws/threads/team%252Fa%2520b%253F%2523%250A/"' in html
    assert 'hx-get="/threads/team%252Fa%2520b%253F%2523%250A/"' in html
    assert item.thread_id == "team/a b?#\n"


def test_cancelling_a_run_from_the_thread_page(alice: User) -> None:
    item = pause()

    response = client_for(alice).post(f"/cancel-run/{item.thread_id}/")

    assert response.status_code == 302
    item.refresh_from_db()
    assert item.status == "cancelled"


def test_start_a_run_for_an_agent_from_a_message(alice: User) -> None:
    response = client_for(alice).post(
        "/runs/new/", {"graph": "ops_assistant", "message": "Refund order 1234 $250"}
    )

    run = Run.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/threads/{run.thread_id}/"
    assert run.input == {"messages": [{"role": "user", "content": "Refund order 1234 $250"}]}
    assert run.created_by == alice


def test_start_a_run_for_a_graph_from_json(alice: User) -> None:
    client = client_for(alice)

    bad = client.post("/runs/new/", {"graph": "approval", "input_json": "[1]"})
    good = client.post("/runs/new/", {"graph": "approval", "input_json": '{"amount": 3}'})

    assert bad.status_code == 422
    assert "The input must be a JSON object" in bad.content.decode()
    assert good.status_code == 302
    assert Run.objects.get().input == {"amount": 3}


def test_the_start_page_lists_registered_graphs_and_marks_agents(alice: User) -> None:
    html = client_for(alice).get("/runs/new/").content.decode()

    assert '<option value="ops_assistant" >ops_assistant (agent)</option>' in html
    assert '<option value="tool_review" >tool_review</option>' in html


def test_the_audit_log_filters_and_exports_csv(alice: User, bob: User) -> None:
    with unchecked_thread_ids():  # a thread id from before the rule
        item = pause(thread_id="=cmd|' /C calc'!A0")
    post_decision(client_for(alice), item, {"d0-type": "approve"})
    post_decision(client_for(bob), item, {"d0-type": "reject"})
    client = client_for(alice)

    html = client.get("/audit/?action=refused").content.decode()
    export = client.get("/audit/?format=csv")

    assert "Already decided by alice" in html and "<strong>bob</strong>" in html
    assert export["Content-Type"] == "text/csv; charset=utf-8"
    rows = list(csv.DictReader(io.StringIO(b"".join(export.streaming_content).decode())))
    assert [r["action"] for r in rows] == ["refused", "decided", "created"]
    assert rows[0]["actor_name"] == "bob" and rows[0]["outcome"] == "already_decided"
    assert rows[1]["thread_ref"].startswith("'=cmd")


def test_the_audit_log_shows_the_digest_seen_and_the_diff_of_an_edit(alice: User) -> None:
    item = pause(
        input={"calls": [{"name": "issue_refund", "args": {"order_id": "1", "amount": 250.0}}]}
    )
    post_decision(client_for(alice), item, {"d0-type": "edit", "d0-arg0": "99.5", "d0-arg1": "1"})
    client = client_for(alice)

    html = client.get(f"/audit/?action=decided&item={item.pk}").content.decode()
    export = client.get(f"/audit/?format=csv&action=decided&item={item.pk}")

    assert f"Saw digest <code>{item.digest[:16]}…</code>" in html
    assert "<code>amount</code> changed: <del>250.0</del> → <ins>99.5</ins>" in html
    (row,) = csv.DictReader(io.StringIO(b"".join(export.streaming_content).decode()))
    assert (row["actor_name"], row["digest_seen"]) == ("alice", item.digest)
    assert json.loads(row["diff"])[0]["changes"] == [
        {"field": "amount", "change": "changed", "before": "250.0", "after": "99.5"}
    ]


def test_the_audit_log_is_append_only(alice: User) -> None:
    pause()
    event = AuditEvent.objects.get()

    with pytest.raises(TypeError, match="append-only"):
        event.save()
    with pytest.raises(TypeError, match="append-only"):
        AuditEvent.objects.all().delete()
    with pytest.raises(TypeError, match="append-only"):
        AuditEvent.objects.update(message="x")


# Security headers


def test_pages_cannot_be_framed_and_scripts_carry_the_csp_nonce(alice: User) -> None:
    response = client_for(alice).get("/")

    assert response["X-Frame-Options"] == "DENY"
    policy = response["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in policy
    nonce = re.search(r"'nonce-([^']+)'", policy).group(1)  # type: ignore[union-attr]
    scripts = re.findall(r"<script[^>]*>", response.content.decode())
    assert len(scripts) == 3  # htmx, its ws extension, the page script
    assert all(f'nonce="{nonce}"' in tag for tag in scripts)


def test_the_admin_is_staff_only(alice: User) -> None:
    assert client_for(alice).get("/admin/reviews/reviewitem/").status_code == 302
    staff = make_reviewer("staff", is_staff=True, is_superuser=True)
    pause()

    assert client_for(staff).get("/admin/reviews/reviewitem/").status_code == 200
    assert client_for(staff).get("/admin/reviews/auditevent/").status_code == 200
