"""Hostile text through every form and API endpoint, property-based (issue 13, "Also";
reliability.md, hostile corpus: fuzzing).

Hypothesis draws text made of invisible and bidi characters, NUL, lone surrogates (sent as
the invalid UTF-8 bytes a client would send), control characters, template and formula
syntax, and always an HTML tag; and JSON documents that are huge, thousands of levels
deep, carry a key twice, NaN, 1,000-digit numbers or `\\u0000` escapes. Each is sent to
every form of the inbox, the account pages and the admin, to every page's query string,
and to every endpoint of the review API. After each request:

- never a 5xx;
- a refusal (4xx) changed nothing: items, decisions, approvals, runs, tokens, policies,
  preferences and users are as before, and the audit log gained only `refused` events;
- an HTML answer never carries the injected tag unescaped; an API answer is JSON.

Kept small for CI: one world (two paused runs, four users) per test, each example inside a
savepoint rolled back afterwards (so every example starts from the same world and no
database is set up again), a few dozen examples per surface (`BEAMWEAVER_FUZZ_EXAMPLES`
raises it), no example database on disk.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import transaction
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from beamweaver_core.models import Run
from reviews.models import (
    ApiToken,
    Approval,
    AuditEvent,
    Decision,
    NotificationPreference,
    ReviewItem,
    ReviewPolicy,
)
from tests.reviews.conftest import make_manager, make_reviewer, pause

pytestmark = pytest.mark.django_db

EXAMPLES = int(os.environ.get("BEAMWEAVER_FUZZ_EXAMPLES", "12"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)

TAG = "<b data-fuzz>"
HOSTILE_CHARS = [
    "\x00",
    "\ud800",
    "\udfff",
    "\u200b",
    "\u200d",
    "\u2060",
    "\ufeff",
    "\u202e",
    "\u2066",
    "\u061c",
    "\ufe0f",
    "\U000e0100",
    "\U000e0041",
    "\u034f",
    "\u2800",
    "\u00a0",
    "\u3000",
    "\u115f",
    "\r\n",
    "\x1b[31m",
    "\x7f",
    "\ufffd",
    "а",  # Cyrillic a
]
FRAGMENTS = ['"><', "'", "{{ x }}", "{% x %}", "=cmd|' /C calc'!A0", "%00", "../", "\\", "&amp;"]

hostile_text = st.lists(
    st.one_of(
        st.sampled_from(HOSTILE_CHARS),
        st.sampled_from(FRAGMENTS),
        st.text(max_size=6),
    ),
    max_size=10,
).map(lambda parts: "".join(parts) + TAG)


def _deep(n: int, kind: str) -> str:
    return "[" * n + "]" * n if kind == "array" else '{"a":' * n + "1" + "}" * n


hostile_json = st.one_of(
    st.tuples(st.integers(33, 6000), st.sampled_from(["array", "object"])).map(lambda t: _deep(*t)),
    hostile_text.map(lambda t: json.dumps({"to": t, "subject": t, "body": t}, ensure_ascii=False)),
    hostile_text.map(lambda t: json.dumps({"to": t, "subject": "s", "body": t})),
    st.sampled_from(
        [
            '{"to": "a@example.com", "to": "b@example.com", "subject": "s", "body": "b"}',
            '{"n": NaN}',
            '{"n": -Infinity}',
            '{"n": 1e999}',
            '{"n": ' + "9" * 1000 + "}",
            '{"to": "\\u0000", "subject": "s", "body": "b"}',
            '{"to": "\\ud800", "subject": "s", "body": "b"}',
            '{"__bw__": "tuple", "items": []}',
        ]
    ),
    st.integers(60_000, 600_000).map(lambda n: json.dumps({"body": "x" * n})),
    hostile_text,
)


@dataclass
class World:
    alice: User
    manager: User
    root: User
    item: ReviewItem
    other: ReviewItem
    token: str
    clients: dict[str, Client]


@pytest.fixture
def world(settings: Any) -> Iterator[World]:
    """Two paused runs; a reviewer, a manager, a superuser; no rate limit in the way."""
    settings.BEAMWEAVER = {
        **settings.BEAMWEAVER,
        "RATE_DECISIONS": "100000/1",
        "RATE_LOGINS": "100000/1",
        "LOGIN_LOCKOUT": "100000/1",
        "RATE_RESETS": "100000/1",
        "RATE_RESET_MAILS": "100000/1",
    }
    # Every login and password change hashes a password: a fast hasher keeps the examples
    # about the input, not about PBKDF2's rounds.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    cache.clear()
    alice = make_reviewer("alice", email="alice@example.com")
    manager = make_manager("manny")
    root = make_reviewer("root", is_staff=True, is_superuser=True)
    item, other = pause(), pause()
    clients = {}
    for name, user in (("alice", alice), ("manager", manager), ("root", root)):
        clients[name] = Client(raise_request_exception=False)
        clients[name].force_login(user)
    clients["anonymous"] = Client(raise_request_exception=False)
    _, token = ApiToken.objects.issue(alice, "fuzz")
    yield World(alice, manager, root, item, other, token, clients)
    cache.clear()


def snapshot() -> tuple[Any, ...]:
    """What a refusal must leave as it was (the audit log may gain `refused` events)."""
    return (
        list(
            ReviewItem.objects.order_by("pk").values_list(
                "pk", "status", "claimed_by_id", "assignee_id", "due_at"
            )
        ),
        list(Decision.objects.order_by("pk").values_list("pk", flat=True)),
        list(Approval.objects.order_by("pk").values_list("pk", flat=True)),
        list(Run.objects.order_by("created_at").values_list("id", "status")),
        list(ApiToken.objects.order_by("pk").values_list("pk", "name", "revoked_at")),
        list(ReviewPolicy.objects.order_by("pk").values_list("pk", "version")),
        list(NotificationPreference.objects.order_by("pk").values("email_enabled", "email_events")),
        list(User.objects.order_by("pk").values_list("pk", "password", "is_active", "email")),
        AuditEvent.objects.exclude(action="refused").count(),
    )


def form_body(fields: dict[str, Any]) -> bytes:
    """`fields` URL-encoded as a browser would send them, lone surrogates included (as the
    invalid UTF-8 bytes they become)."""
    pairs = []
    for key, value in fields.items():
        for one in value if isinstance(value, list) else [value]:
            pairs.append((key, str(one).encode("utf-8", "surrogatepass")))
    return urlencode(pairs).encode()


def query(fields: dict[str, str]) -> str:
    return urlencode([(k, v.encode("utf-8", "surrogatepass")) for k, v in fields.items()])


def segment(text: str) -> str:
    return quote(text.encode("utf-8", "surrogatepass"), safe="")


def check(response: Any, before: tuple[Any, ...], where: str) -> None:
    status = response.status_code
    assert status < 500, f"{where}: {status}"
    content_type = response.get("Content-Type", "")
    body = b"".join(response.streaming_content) if response.streaming else response.content
    if "text/html" in content_type:
        assert TAG not in body.decode("utf-8", "replace"), f"{where}: the tag is unescaped"
    if where.startswith("/api/"):
        assert content_type == "application/json", f"{where}: {content_type}"
        json.loads(body)
    if status >= 400:
        assert snapshot() == before, f"{where}: a {status} refusal changed something"


def exchange(send: Callable[[], tuple[str, Any]]) -> None:
    """Send one request inside a savepoint that is rolled back afterwards, and check it."""
    with transaction.atomic():
        before = snapshot()
        where, response = send()
        check(response, before, where)
        transaction.set_rollback(True)


def post(client: Client, url: str, fields: dict[str, Any]) -> tuple[str, Any]:
    body = form_body(fields)
    return url, client.post(url, body, content_type="application/x-www-form-urlencoded")


def test_every_inbox_form_survives_hostile_text(world: World) -> None:
    alice, item = world.clients["alice"], world.item
    pk = item.pk

    @FUZZ
    @given(
        kind=st.one_of(st.sampled_from(["approve", "reject", "edit", "respond"]), hostile_text),
        text=hostile_text,
        args=hostile_json,
        digest=st.one_of(st.just(item.digest), hostile_text),
    )
    def decide(kind: str, text: str, args: str, digest: str) -> None:
        fields = {
            "client_decision_id": text[:60],
            "digest": digest,
            "interrupt_id": item.interrupt_id,
            "d0-type": kind,
            "d0-message": text,
            "d0-args": args,
            "note": text,
            "reason": text,
        }
        exchange(lambda: post(alice, f"/items/{pk}/decide/", fields))
        exchange(lambda: post(alice, f"/items/{pk}/actions/0/preview/", {"d0-args": args}))

    @FUZZ
    @given(
        text=hostile_text, action=st.one_of(st.sampled_from(["approve", "reject"]), hostile_text)
    )
    def batch(text: str, action: str) -> None:
        fields = {
            "items": [str(pk), text],
            "action": action,
            "message": text,
            "reason": text,
            "note": text,
            "batch_id": text,
        }
        exchange(lambda: post(alice, "/batch/", fields))

    @FUZZ
    @given(
        text=hostile_text,
        data=hostile_json,
        graph=st.sampled_from(["tool_review", "approval", "ops_assistant", TAG]),
    )
    def start_run_and_simulate(text: str, data: str, graph: str) -> None:
        fields = {"graph": graph, "message": text, "input_json": data}
        exchange(lambda: post(alice, "/runs/new/", fields))
        exchange(lambda: post(alice, "/runs/new/", {"graph": graph, "input_json": data}))
        simulation = {"days": text, "graph": text, "policy": data}
        exchange(lambda: post(alice, "/simulate/", simulation))

    @FUZZ
    @given(text=hostile_text)
    def item_routing_and_preferences(text: str) -> None:
        manager = world.clients["manager"]
        exchange(lambda: post(manager, f"/items/{pk}/reassign/", {"assignee": text}))
        exchange(lambda: post(manager, f"/items/{pk}/extend/", {"hours": text}))
        exchange(lambda: post(alice, f"/items/{pk}/claim/", {"x": text}))
        exchange(lambda: post(alice, f"/items/{pk}/unclaim/", {"x": text}))
        exchange(lambda: post(alice, f"/items/{pk}/reveal/", {"x": text}))
        exchange(lambda: post(alice, f"/cancel-run/{segment(text)}/", {}))
        prefs = {"email_enabled": text, "email_events": [text, "review.assigned"]}
        exchange(lambda: post(alice, "/notifications/", prefs))

    decide()
    batch()
    start_run_and_simulate()
    item_routing_and_preferences()


def test_every_page_query_string_survives_hostile_text(world: World) -> None:
    pages = [
        ("/", ["q", "graph", "tool", "status", "page", "assignee", "sort"]),
        ("/audit/", ["actor", "action", "thread", "graph", "item", "page", "format"]),
        ("/analytics/", ["graph", "days", "tool"]),
        ("/simulate/", ["graph", "days"]),
        ("/runs/new/", ["graph"]),
        (f"/items/{world.item.pk}/", ["digest"]),
        (f"/threads/{world.item.thread_id}/", ["x"]),
        ("/admin/reviews/reviewitem/", ["q", "status__exact", "o", "p"]),
        ("/admin/beamweaver_core/run/", ["q", "graph", "o"]),
        ("/accounts/login/", ["next"]),
    ]

    @FUZZ
    @given(text=hostile_text, who=st.sampled_from(["alice", "manager", "root"]))
    def pages_and_paths(text: str, who: str) -> None:
        client = world.clients[who]
        for url, names in pages:
            full = f"{url}?{query(dict.fromkeys(names, text))}"
            exchange(lambda full=full: (full, client.get(full)))
        path = f"/threads/{segment(text)}/"
        exchange(lambda: (path, client.get(path)))

    pages_and_paths()


def test_every_account_and_admin_form_survives_hostile_text(world: World) -> None:
    anonymous, alice, root = (world.clients[n] for n in ("anonymous", "alice", "root"))

    @FUZZ
    @given(text=hostile_text, password=hostile_text)
    def accounts(text: str, password: str) -> None:
        login = {"username": text, "password": password}
        exchange(lambda: post(anonymous, "/accounts/login/", login))
        exchange(lambda: post(anonymous, "/admin/login/", login))
        exchange(lambda: post(anonymous, "/accounts/password_reset/", {"email": text}))
        change = {"old_password": password, "new_password1": text, "new_password2": text}
        exchange(lambda: post(alice, "/accounts/password_change/", change))

    @FUZZ
    @given(text=hostile_text)
    def admin_forms(text: str) -> None:
        token = {"name": text, "user": text, "expires_at_0": text, "expires_at_1": text}
        exchange(lambda: post(root, "/admin/reviews/apitoken/add/", token))
        policy = {"name": text, "graph": text, "tool": text, "required_approvals": text}
        exchange(lambda: post(root, "/admin/reviews/reviewpolicy/add/", policy))
        action = {"action": text, "_selected_action": [text], "index": "0"}
        exchange(lambda: post(root, "/admin/beamweaver_core/run/", action))

    accounts()
    admin_forms()


def test_every_api_endpoint_survives_hostile_input(world: World) -> None:
    auth = {"HTTP_AUTHORIZATION": f"Bearer {world.token}"}
    api = Client(raise_request_exception=False)
    pk = world.item.pk

    @FUZZ
    @given(text=hostile_text, body=hostile_json)
    def endpoints(text: str, body: str) -> None:
        listing = "/api/v1/items/?" + query(
            {"status": text, "graph": text, "tool": text, "limit": text, "after": text}
        )
        exchange(lambda: (listing, api.get(listing, **auth)))
        one = f"/api/v1/items/{pk}/?" + query({"reveal_secrets": text})
        exchange(lambda: (one, api.get(one, **auth)))
        raw = body.encode("utf-8", "surrogatepass")
        url = f"/api/v1/items/{pk}/decisions/"
        exchange(lambda: (url, api.post(url, raw, content_type="application/json", **auth)))
        shaped = json.dumps(
            {
                "client_decision_id": text[:60],
                "digest": world.item.digest,
                "interrupt_id": world.item.interrupt_id,
                "answer": [{"type": "reject", "message": text}],
                "note": text,
                "reason": text,
            }
        ).encode()
        exchange(lambda: (url, api.post(url, shaped, content_type="application/json", **auth)))
        cancel = f"/api/v1/threads/{segment(text)}/cancel/"
        exchange(lambda: (cancel, api.post(cancel, **auth)))
        header = {
            "HTTP_AUTHORIZATION": f"Bearer {text}".encode("utf-8", "surrogatepass").decode(
                "latin-1"
            )
        }
        exchange(lambda: ("/api/v1/items/", api.get("/api/v1/items/", **header)))

    endpoints()
