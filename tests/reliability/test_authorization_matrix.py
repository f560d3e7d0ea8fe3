"""Authorization over every URL and websocket route (reliability.md cases 35, 38, 41).

The URL list is walked from the URLconf itself, so a view added later is in the matrix
without anyone remembering to add it. Each URL is requested by each role for an object
that exists and for one that does not. Roles: anonymous, logged in without the reviewer
permission, reviewer, staff without permissions, superuser. The checks:

- no 5xx, ever;
- a role that may not see an object gets exactly the answer it gets for an unknown one
  (status, redirect target, body), so existence never leaks;
- the canary text inside the paused run reaches only reviewers and the superuser;
- every HTML answer forbids framing (`X-Frame-Options: DENY`, `frame-ancestors 'none'`);
- every POST without a CSRF token is refused (403), whatever the URL and role.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pytest
from channels.testing import WebsocketCommunicator
from django.apps import apps
from django.contrib.auth.models import Group, User
from django.contrib.contenttypes.models import ContentType
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from beamweaver_core.models import Checkpoint, Run
from reviews.models import ReviewItem
from reviews.services import decide
from tests.reliability.support import APPROVE, pause_agent, request, run_queued
from tests.reviews.conftest import make_reviewer

CANARY = "CANARY-5f0c2a"
ROLES = ("anonymous", "no_permission", "reviewer", "staff", "superuser")
LOGOUT = {"logout", "admin:logout"}
SEES_REVIEWS = {"reviewer", "superuser"}
SEES_ADMIN = {"superuser"}
PUBLIC = {
    "login",
    "logout",
    "password_reset",
    "password_reset_done",
    "password_reset_complete",
    "password_reset_confirm",
    "admin:login",
    "admin:logout",
}


@dataclass(frozen=True)
class Route:
    """One URL pattern with the values that fill it for an existing and an unknown object."""

    name: str
    existing: str
    unknown: str


def _walk(patterns: list[Any], prefix: str = "", ns: str = "") -> Iterator[tuple[str, str]]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            inner = ns + (f"{pattern.namespace}:" if pattern.namespace else "")
            yield from _walk(pattern.url_patterns, prefix + str(pattern.pattern), inner)
        elif isinstance(pattern, URLPattern):
            yield prefix + str(pattern.pattern), ns + (pattern.name or "<unnamed>")


def _admin_object(pattern: str) -> tuple[str, str]:
    """An existing and an unknown primary key for the model an admin URL is about."""
    app_label, model_name = re.match(r"admin/(\w+)/(\w+)/", pattern).groups()  # type: ignore[union-attr]
    model = apps.get_model(app_label, model_name)
    field = model._meta.pk.get_internal_type()
    if field == "UUIDField":
        unknown = str(uuid.uuid4())
    elif "Integer" in field or "AutoField" in field:
        unknown = "999999999"
    else:
        unknown = "no-such-object"
    obj = model._default_manager.order_by("pk").first()
    # A model with no row (nothing in the world fixture makes one) is probed twice with an
    # unknown id: its pages are still checked for 5xx, canary and headers.
    return (unknown if obj is None else quote(str(obj.pk), safe="")), unknown


def routes(item: ReviewItem) -> list[Route]:
    """Every URL of the URLconf, filled in for `item` (and for objects that do not exist)."""
    found = []
    for pattern, name in _walk(get_resolver().url_patterns):
        existing = unknown = re.sub(r"\(\?P<app_label>[^)]*\)", "reviews", pattern)
        existing = unknown = existing.replace("^", "").replace("$", "")
        if "<path:content_type_id>" in pattern:  # the admin's "view on site" redirect
            content_type = ContentType.objects.get_for_model(ReviewItem).pk
            existing = existing.replace("<path:content_type_id>", str(content_type))
            unknown = unknown.replace("<path:content_type_id>", str(content_type))
            existing = existing.replace("<path:object_id>", str(item.pk))
            unknown = unknown.replace("<path:object_id>", "999999999")
        elif "<path:object_id>" in pattern:
            known, missing = _admin_object(pattern)
            existing = existing.replace("<path:object_id>", known)
            unknown = unknown.replace("<path:object_id>", missing)
        fills = {
            "<int:pk>": (str(item.pk), "999999999"),
            "<int:index>": ("0", "7"),
            "<id>": (str(User.objects.order_by("pk").first().pk), "999999999"),  # type: ignore[union-attr]
            "<thread_id:thread_id>": (item.thread_id, "no-such-thread"),
            "<path:thread_id>": (item.thread_id, "no-such-thread"),
            "<uidb64>": ("MQ", "OTk5"),
            "<token>": ("set-password", "set-password"),
            "(?P<url>.*)": ("no-such-page/", "no-such-page/"),
            # The protocol under /lg (token authentication: a session gets 401 everywhere).
            "<str:assistant_id>": ("approval", "no-such-assistant"),
            "<str:thread_id>": (item.thread_id, "no-such-thread"),
            "<str:run_id>": (str(item.run_id), "00000000-0000-0000-0000-000000000000"),
            "<str:checkpoint_id>": ("no-such-checkpoint", "no-such-checkpoint"),
            "<str:namespace>": ("child", "no-such-namespace"),
        }
        for placeholder, (known, missing) in fills.items():
            existing = existing.replace(placeholder, known)
            unknown = unknown.replace(placeholder, missing)
        assert "<" not in existing and "(?" not in existing, f"unfilled pattern {pattern}"
        found.append(Route(name, "/" + existing, "/" + unknown))
    return found


@pytest.fixture
def world(effects_log: Any) -> dict[str, Any]:
    """A decided item, a pending one carrying the canary, users for every role."""
    users = {
        "no_permission": make_reviewer("mallory", reviewer=False),
        "reviewer": make_reviewer("alice"),
        "staff": make_reviewer("sam", reviewer=False, is_staff=True),
        "superuser": make_reviewer("root", is_staff=True, is_superuser=True),
    }
    Group.objects.create(name="operators")
    decided = pause_agent(thread_id="decided-thread")
    decide(request(decided, users["reviewer"], APPROVE))
    run_queued()
    email = {"to": "ops@example.com", "subject": CANARY, "body": f"secret plan {CANARY}"}
    item = pause_agent([{"name": "send_email", "args": email}], thread_id=f"t-{CANARY}")
    assert Checkpoint.objects.exists() and Run.objects.exists()
    return {"users": users, "item": item}


def client_as(role: str, users: dict[str, User], **kwargs: Any) -> Client:
    client = Client(**kwargs)
    if role != "anonymous":
        client.force_login(users[role])
    return client


_VOLATILE = [
    (re.compile(r'name="csrfmiddlewaretoken" value="[^"]+"'), "csrf"),
    (re.compile(r'"x-csrftoken": "[^"]+"'), "csrf"),
    (re.compile(r'nonce="[^"]+"'), "nonce"),
    (re.compile(r'name="client_decision_id" value="[^"]+"'), "client-id"),
]


def normalized(response: Any, route: Route, url: str) -> tuple[int, str, str]:
    body = response.content.decode(errors="replace") if not response.streaming else ""
    location = response.get("Location", "")
    for text in (route.existing, route.unknown, quote(route.existing), quote(route.unknown)):
        body, location = body.replace(text, "<url>"), location.replace(text, "<url>")
    for pattern, label in _VOLATILE:
        body = pattern.sub(label, body)
    return response.status_code, location, body


def may_see(role: str, route: Route) -> bool:
    if route.name.startswith("admin:") or route.name == "<unnamed>":
        return role in SEES_ADMIN
    if route.name.startswith("reviews:"):
        return role in SEES_REVIEWS
    return True


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("role", ROLES)
def test_every_url_answers_each_role_without_leaking(role: str, world: dict[str, Any]) -> None:
    """GET and POST of every URL, for an existing and an unknown object."""
    client = client_as(role, world["users"])
    problems: list[str] = []
    all_routes = routes(world["item"])
    assert len(all_routes) > 60  # the walk really found the admin and the inbox
    for route in all_routes:
        answers = {}
        for which in ("existing", "unknown"):
            url = getattr(route, which)
            for method in ("get", "post"):
                if method == "post" and route.name in LOGOUT:
                    continue  # it would end the session the rest of the matrix runs in
                response = getattr(client, method)(url)
                answers[which, method] = response
                where = f"{role} {method.upper()} {url} ({route.name})"
                if response.status_code >= 500:
                    problems.append(f"{where}: {response.status_code}")
                body = b"" if response.streaming else response.content
                if CANARY.encode() in body and role not in SEES_REVIEWS | SEES_ADMIN:
                    problems.append(f"{where}: the canary leaked")
                if "text/html" in response.get("Content-Type", "") and body:
                    if response.get("X-Frame-Options") != "DENY":
                        problems.append(f"{where}: no X-Frame-Options DENY")
                    if "frame-ancestors 'none'" not in response.get("Content-Security-Policy", ""):
                        problems.append(f"{where}: no frame-ancestors 'none'")
        if not may_see(role, route):
            for method in ("get", "post") if route.name not in LOGOUT else ("get",):
                known = normalized(answers["existing", method], route, route.existing)
                missing = normalized(answers["unknown", method], route, route.unknown)
                if known != missing:
                    problems.append(
                        f"{role} {method.upper()} {route.existing} vs {route.unknown}: "
                        f"{known[:2]} != {missing[:2]} (existence leaks)"
                    )
    assert problems == []
    if role != "anonymous":
        assert client.session.get("_auth_user_id") == str(world["users"][role].pk)
    item = ReviewItem.objects.get(pk=world["item"].pk)
    if role not in SEES_REVIEWS:
        assert item.status == "pending"


TOKEN_APIS = ("/api/", "/lg/")
"""The token-authenticated APIs: the review API and the LangGraph protocol."""


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("role", ROLES)
def test_every_post_without_a_csrf_token_is_refused(role: str, world: dict[str, Any]) -> None:
    """Case 38: no URL is exempt from the CSRF check, for any role. The token API is the
    exception by design: it ignores the session cookie altogether (401 without a token),
    so a cross-site form riding on a reviewer's session gets nothing from it either
    (401, or 405 where the route takes no POST)."""
    client = client_as(role, world["users"], enforce_csrf_checks=True)

    accepted = [
        (route.existing, status)
        for route in routes(world["item"])
        if (status := client.post(route.existing, {"d0-type": "approve"}).status_code)
        not in ((401, 403, 405) if route.existing.startswith(TOKEN_APIS) else (403,))
    ]

    assert accepted == []
    assert ReviewItem.objects.get(pk=world["item"].pk).status == "pending"


@pytest.mark.django_db(transaction=True)
def test_a_csrf_token_from_another_session_or_before_login_is_refused(
    world: dict[str, Any],
) -> None:
    """Case 38: a token copied from another session, or the one a page held before the
    login that rotated it, is refused; the page's own current token works."""
    alice = world["users"]["reviewer"]
    item = world["item"]
    before_login = Client(enforce_csrf_checks=True)
    old_token = before_login.get("/accounts/login/").cookies["csrftoken"].value
    before_login.post(
        "/accounts/login/",
        {
            "username": "alice",
            "password": "correct horse battery staple",
            "csrfmiddlewaretoken": old_token,
        },
    )
    other = Client(enforce_csrf_checks=True)
    other.force_login(world["users"]["superuser"])
    other.get("/")
    foreign_token = other.cookies["csrftoken"].value
    page = before_login.get(f"/items/{item.pk}/").content.decode()
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)"[^>]* value="([^"]*)"', page))
    current = fields.pop("csrfmiddlewaretoken")
    url = f"/items/{item.pk}/decide/"

    stale = before_login.post(
        url, {**fields, "d0-type": "approve", "csrfmiddlewaretoken": old_token}
    )
    foreign = before_login.post(
        url, {**fields, "d0-type": "approve"}, HTTP_X_CSRFTOKEN=foreign_token
    )
    by_get = before_login.get(url)
    good = before_login.post(url, {**fields, "d0-type": "approve", "csrfmiddlewaretoken": current})

    assert before_login.session["_auth_user_id"] == str(alice.pk)
    assert (stale.status_code, foreign.status_code, by_get.status_code) == (403, 403, 405)
    assert "Your session changed" in stale.content.decode()
    assert good.status_code == 302


def ws_routes(item: ReviewItem) -> list[tuple[str, str, str]]:
    return [
        ("inbox", "/ws/inbox/", "/ws/inbox/"),
        ("item", f"/ws/items/{item.pk}/", "/ws/items/999999999/"),
        ("thread", f"/ws/threads/{item.thread_id}/", "/ws/threads/no-such-thread/"),
    ]


async def _connect(app: Any, path: str, cookie: str | None) -> tuple[bool, Any, Any]:
    headers = [(b"host", b"localhost"), (b"origin", b"http://localhost")]
    if cookie:
        headers.append((b"cookie", f"sessionid={cookie}".encode()))
    communicator = WebsocketCommunicator(app, path, headers=headers)
    connected, code = await communicator.connect(timeout=5)
    first = None
    if connected:
        first = await communicator.receive_output(timeout=5)
        await communicator.disconnect()
    return connected, code, first


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("role", ROLES)
async def test_every_websocket_route_answers_each_role_without_leaking(
    role: str, world: dict[str, Any]
) -> None:
    """Case 35 for sockets: only reviewers get a socket; for everyone else, and for unknown
    items and threads, the handshake is refused the same way; no fragment reaches them."""
    from asgiref.sync import sync_to_async

    from beamweaver_core.asgi import application

    app = application.app  # the router, without starting the in-process workers
    cookie = None
    if role != "anonymous":
        cookie = await sync_to_async(
            lambda: client_as(role, world["users"]).cookies["sessionid"].value
        )()
    for name, existing, unknown in ws_routes(world["item"]):
        known = await _connect(app, existing, cookie)
        missing = await _connect(app, unknown, cookie)
        if role in SEES_REVIEWS:
            assert known[0], f"{role} cannot open {name}"
            assert CANARY in str(known[2]) or name != "thread"
            if name != "inbox":
                assert missing[:2] == (False, 4403)
        else:
            assert known[:2] == missing[:2] == (False, 4403), f"{role} {name}"
