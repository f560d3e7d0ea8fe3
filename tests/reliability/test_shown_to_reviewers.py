"""What a reviewer is shown (issue 13, findings 6 and 8; reliability.md, hostile corpus:
redaction and invisible characters, secrets in the API and logs): everything that decides
what a call does is visible, only credentials are withheld (said so, revealable with a
permission, audited), characters a human cannot see and look-alike letters are marked
wherever arguments are shown, and the API, the admin and the logs follow the same
redaction policy as the pages."""

from __future__ import annotations

import contextlib
import json
import re
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User

from beamweaver_core import redaction
from beamweaver_core.redaction import REDACTED, redact, redact_text
from reviews.models import ApiToken, AuditEvent
from tests.reliability.live import live_server
from tests.reviews.conftest import client_for, make_reviewer, pause

pytestmark = pytest.mark.django_db

OPENAI_KEY = "sk-proj-Zq8xR2mT5vY7wB1nC4kD6fG9hJ0"
TRANSFER = {
    "to": "ops@example.com",
    "subject": "Quarterly transfer",
    "body": "Move the funds.",
    "author": "bob-the-builder",
    "max_tokens": 4096,
    "bypass_review": True,
    "session_id": "sess-2291",
    "config": {"auth": {"role": "admin", "grant": "superuser"}, "api_key": "k-live-7f3a9c"},
    "password": "and also grant admin rights to mallory",
}


def _reviewer_who_reveals(name: str) -> User:
    user = make_reviewer(name)
    user.user_permissions.add(Permission.objects.get(codename="reveal_secrets"))
    return User.objects.get(pk=user.pk)


def _fields_removed(html: str) -> str:
    """The page without the values of form fields (an input shows its raw value)."""
    html = re.sub(r"<textarea[^>]*>.*?</textarea>", "", html, flags=re.S)
    return re.sub(r'<input[^>]*value="[^"]*"[^>]*>', "", html)


def _canonical(html: str) -> str:
    found = re.search(
        r'<summary>Canonical JSON \(what runs[^<]*</summary><pre class="json">(.*?)</pre>',
        html,
        re.S,
    )
    assert found, html
    return found.group(1)


@pytest.fixture
def transfer() -> Any:
    return pause(input={"calls": [{"name": "send_email", "args": TRANSFER}]})


def test_values_the_reviewer_must_judge_are_never_redacted(transfer: Any) -> None:
    """`auth`, `author`, `bypass_*`, `max_tokens`, `session_*` were `[redacted]` by a
    substring rule, in the table, the canonical JSON and the edit form: a reviewer
    approved a call whose hidden `config.auth` granted admin rights."""
    html = client_for(make_reviewer("alice")).get(f"/items/{transfer.pk}/").content.decode()
    canonical = _canonical(html)

    for shown in (
        "bob-the-builder",
        "4096",
        "sess-2291",
        "superuser",
        "&quot;role&quot;: &quot;admin&quot;",
        "&quot;bypass_review&quot;: true",
        "and also grant admin rights to mallory",
    ):
        assert shown in canonical, shown
    assert "superuser" in _fields_removed(html)  # the arguments table
    edit_config = re.search(r"<textarea[^>]*>\s*(\{.*?\})</textarea>", html, re.S)
    assert edit_config and "superuser" in edit_config.group(1)  # the edit form
    assert canonical.count(REDACTED) == 1  # config.api_key only
    assert "k-live-7f3a9c" not in html


def test_what_is_withheld_is_named_and_revealed_only_with_the_permission(transfer: Any) -> None:
    plain, revealer = make_reviewer("alice"), _reviewer_who_reveals("carol")

    page = client_for(plain).get(f"/items/{transfer.pk}/").content.decode()
    refused = client_for(plain).post(f"/items/{transfer.pk}/reveal/")
    offered = client_for(revealer).get(f"/items/{transfer.pk}/").content.decode()
    revealed = client_for(revealer).post(f"/items/{transfer.pk}/reveal/")

    assert "1 value withheld as secret" in page and "<code>config.api_key</code>" in page
    assert 'id="reveal-button"' not in page and refused.status_code == 403
    assert 'id="reveal-button"' in offered and "k-live-7f3a9c" not in offered
    assert revealed.status_code == 200
    html = revealed.content.decode()
    assert "k-live-7f3a9c" in _canonical(html) and "Secrets revealed" in html
    event = AuditEvent.objects.get(action="revealed")
    assert (event.actor, event.item_id) == (revealer, transfer.pk)
    assert "config.api_key" in event.message
    assert not AuditEvent.objects.filter(action="revealed", actor=plain).exists()


HIDDEN = {
    "vendor": "ACME-SUPPLIER\ufe01\U000e0100\U000e0130",  # an instruction as variation selectors
    "memo": "pay\u034fnow\u2800ok",
    "iban": "DE89\u00a03704\u30000044",
    "to": "billing@p\u0430ypal.com",  # a Cyrillic a
}
MARKERS = ["[U+FE01]", "[U+E0100]", "[U+E0130]", "[U+034F]", "[U+2800]", "[U+00A0]", "[U+3000]"]
RAW = ["\ufe01", "\U000e0100", "\u034f", "\u2800", "\u00a0", "\u3000"]


def test_every_character_a_human_cannot_see_is_marked_where_arguments_are_shown() -> None:
    item = pause(
        input={"calls": [{"name": "send_email", "args": {"subject": "s", "body": "b", **HIDDEN}}]}
    )
    client = client_for(make_reviewer("alice"))

    page = client.get(f"/items/{item.pk}/").content.decode()
    canonical = _canonical(page)
    thread = client.get(f"/threads/{item.thread_id}/").content.decode()
    preview = client.post(
        f"/items/{item.pk}/actions/0/preview/",
        {"d0-mode": "json", "d0-json": json.dumps({**HIDDEN, "subject": "s\u2800", "body": "b"})},
        HTTP_HX_REQUEST="true",
    ).content.decode()

    for where, html in {
        "item": page,
        "canonical JSON": canonical,
        "thread": thread,
        "diff": preview,
    }.items():
        expected = ["[U+2800]"] if where == "diff" else MARKERS  # the diff shows what changed
        assert (where, [m for m in expected if m not in html]) == (where, [])
        raw = [hex(ord(c)) for c in RAW if c in _fields_removed(html)]
        assert (where, raw) == (where, [])
    assert re.search(
        r'<mark class="confusable" title="CYRILLIC SMALL LETTER A[^"]*">\u0430</mark>', canonical
    )
    assert "With its hidden characters marked" in page  # the edit form
    assert "characters you cannot see" in page


def test_the_api_redacts_as_the_pages_do() -> None:
    """GET /api/v1/items/<id>/ returned the raw payload, an `sk-proj-` key included."""
    item = pause(
        input={"calls": [{"name": "send_email", "args": {**TRANSFER, "body": f"use {OPENAI_KEY}"}}]}
    )
    alice, carol = make_reviewer("alice"), _reviewer_who_reveals("carol")
    _, alice_token = ApiToken.objects.issue(alice, "svc")
    _, carol_token = ApiToken.objects.issue(carol, "svc")
    client = client_for(alice)

    shown = client.get(f"/api/v1/items/{item.pk}/", HTTP_AUTHORIZATION=f"Bearer {alice_token}")
    refused = client.get(
        f"/api/v1/items/{item.pk}/?reveal_secrets=1", HTTP_AUTHORIZATION=f"Bearer {alice_token}"
    )
    revealed = client.get(
        f"/api/v1/items/{item.pk}/?reveal_secrets=1", HTTP_AUTHORIZATION=f"Bearer {carol_token}"
    )

    body = shown.content.decode()
    assert shown.status_code == 200 and OPENAI_KEY not in body and "k-live-7f3a9c" not in body
    assert shown.json()["withheld"] == [
        "action_requests.0.args.body",
        "action_requests.0.args.config.api_key",
    ]
    assert "superuser" in body
    assert refused.status_code == 403
    assert revealed.status_code == 200 and OPENAI_KEY in revealed.content.decode()
    assert revealed.json()["withheld"] == []
    assert AuditEvent.objects.filter(action="revealed", actor=carol, source="api").count() == 1


def test_our_own_api_tokens_are_secrets_everywhere() -> None:
    _, raw = ApiToken.objects.issue(make_reviewer("svc"), "svc")
    item = pause(
        input={
            "calls": [
                {
                    "name": "send_email",
                    "args": {"to": "a@b.c", "subject": "s", "body": f"token {raw}"},
                }
            ]
        }
    )

    html = client_for(make_reviewer("alice")).get(f"/items/{item.pk}/").content.decode()

    assert raw not in html and REDACTED in html
    assert redact_text(f"x {raw} y") == f"x {REDACTED} y"
    assert redaction.withheld({"note": raw}) == ["note"]


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("password", True), ("db_password", True), ("api_key", True), ("X-Api-Key", True),
        ("accessToken", True), ("Authorization", True), ("Set-Cookie", True), ("client_secret", True),
        ("auth", False), ("author", False), ("bypass_review", False), ("max_tokens", False),
        ("session_id", False), ("token_count", False), ("key", False), ("primary_key", False),
    ],
)  # fmt: skip
def test_the_key_name_rule(key: str, secret: bool) -> None:
    assert (redact({key: "abc123XYZ"}) == {key: REDACTED}) is secret
    assert redact({key: {"role": "admin"}}) == {key: {"role": "admin"}}  # objects: always shown
    assert redact({key: 42}) == {key: 42}


def _get(url: str, **headers: str) -> None:
    with contextlib.suppress(urllib.error.HTTPError):  # 401: only the access log matters
        urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10)


@pytest.mark.django_db(transaction=True)
def test_a_token_in_a_query_string_is_not_written_to_the_access_log(tmp_path: Path) -> None:
    _, raw = ApiToken.objects.issue(make_reviewer("svc"), "svc")
    assert redaction.redact_url(f"/api/v1/items/?token={raw}&access_token=plain-one&graph=g") == (
        f"/api/v1/items/?token={REDACTED}&access_token={REDACTED}&graph=g"
    )

    with live_server(tmp_path, BEAMWEAVER_LOG_LEVEL="INFO") as base:
        _get(f"{base}/api/v1/items/?token={raw}&api_key=k123secret&graph=g")
        _get(f"{base}/api/v1/items/?graph=g", Authorization=f"Bearer {raw}")
        log = next(tmp_path.glob("daphne-*.log"))
        for _ in range(50):
            if log.read_text().count("/api/v1/items/") >= 2:
                break
            time.sleep(0.1)
    text = log.read_text()
    assert "GET /api/v1/items/?token=[redacted]&api_key=[redacted]&graph=g" in text, text
    assert raw not in text and "k123secret" not in text
