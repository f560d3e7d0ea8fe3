"""NUL bytes in URLs (issue 13, finding 10; reliability.md, hostile corpus: NUL in a path
or query string). Postgres cannot store or compare text with a NUL, so a `%00` that reached
a query was a 500. Every request with one in its path, query string or cookies is now a
400 (the API's error JSON under `/api/`), and so is one with a NUL in a form field, before
any view runs."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from reviews.models import ApiToken
from tests.reliability.test_authorization_matrix import routes
from tests.reviews.conftest import client_for, make_manager, make_reviewer, pause

pytestmark = pytest.mark.django_db

# The URLs the red team reported, then others that put a query parameter into SQL.
REPORTED = ["/threads/%00/", "/?q=%00", "/audit/?actor=%00"]
MORE = [
    "/?graph=%00&tool=%00",
    "/audit/?thread=%00",
    "/audit/?action=%00&graph=%00&item=%00",
    "/threads/a%00b/",
    "/items/1%00/",
    "/admin/beamweaver_core/run/?q=%00",
    "/admin/reviews/reviewitem/?q=%00",
    "/accounts/login/?next=/%00",
]


@pytest.fixture
def manager() -> User:
    """A manager who is staff and superuser: every page and every filter is open to them."""
    user = make_manager("root")
    User.objects.filter(pk=user.pk).update(is_staff=True, is_superuser=True)
    return User.objects.get(pk=user.pk)


def _no_server_error(response: Any, url: str) -> None:
    assert response.status_code in (400, 404), f"{url}: {response.status_code}"


@pytest.mark.parametrize("url", REPORTED + MORE)
def test_a_nul_in_a_page_url_is_a_400(manager: User, url: str) -> None:
    response = client_for(manager, raise_request_exception=False).get(url)

    _no_server_error(response, url)
    assert response.status_code == 400
    assert "NUL" in response.content.decode()


@pytest.mark.parametrize(
    "url",
    ["/api/v1/items/?graph=%00", "/api/v1/items/?tool=%00", "/api/v1/items/%00/", "/api/v1/%00"],
)
def test_a_nul_in_an_api_url_is_a_400_in_json(manager: User, url: str) -> None:
    _, token = ApiToken.objects.issue(manager, "nul")
    response = Client(raise_request_exception=False).get(url, HTTP_AUTHORIZATION=f"Bearer {token}")

    _no_server_error(response, url)
    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert response.json()["code"] == "nul_character"


def test_a_nul_in_a_cookie_is_a_400_not_a_failed_session_lookup() -> None:
    client = Client(raise_request_exception=False, HTTP_COOKIE="sessionid=abcdefgh\x00ijkl")

    assert client.get("/").status_code == 400


@pytest.mark.parametrize(
    ("path", "fields"),
    [
        ("reassign/", {"assignee": "alice\x00"}),
        ("decide/", {"client_decision_id": "c\x00", "d0-type": "reject"}),
        ("decide/", {"d0-type": "reject", "d0-message": "no\x00"}),
    ],
)
def test_a_nul_in_a_form_field_is_a_400_and_changes_nothing(
    manager: User, path: str, fields: dict[str, str]
) -> None:
    """Found by the fuzz test: a NUL in the reassign form's username or in a decision's
    client id reached a query (500)."""
    item = pause()
    data = {"digest": item.digest, "interrupt_id": item.interrupt_id, **fields}

    response = client_for(manager, raise_request_exception=False).post(
        f"/items/{item.pk}/{path}", data
    )

    item.refresh_from_db()
    assert response.status_code == 400 and "form fields" in response.content.decode()
    assert item.status == "pending" and item.assignee_id is None


def test_every_url_of_the_urlconf_refuses_a_nul_in_its_path_and_query(manager: User) -> None:
    """Generic: every URL pattern (walked from the URLconf, as the authorization matrix
    does), with `%00` in a query parameter and appended to its path, GET and POST."""
    item = pause()
    client = client_for(manager, raise_request_exception=False)
    plain = client_for(make_reviewer("alice"), raise_request_exception=False)
    problems = []
    for route in routes(item):
        for url in (f"{route.existing}?q=%00&page=%00", f"{route.existing}%00"):
            for each in (client, plain):
                for method in ("get", "post"):
                    response = getattr(each, method)(url)
                    if response.status_code != 400:
                        problems.append(f"{method.upper()} {url}: {response.status_code}")
    assert problems == []


def test_urls_without_a_nul_are_served_as_before(manager: User) -> None:
    client = client_for(manager)

    assert client.get("/?q=refund").status_code == 200
    assert client.get("/audit/?actor=alice").status_code == 200
    assert client.get("/threads/no-such-thread/").status_code == 404
