"""Login limits on every login view, with one key per username (issue 13, finding 4;
reliability.md, hostile corpus: login limits).

The red team found `/admin/login/` outside the limits (40 wrong passwords, then the right
one worked), and the lockout checked the raw POSTed username while failures were counted
under the form's cleaned one (stripped, NFKC): `" carol"` logged in while `carol` was
locked out."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.admin.sites import AdminSite
from django.contrib.auth.models import User
from django.contrib.auth.views import LoginView
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from beamweaver_core import ratelimit
from tests.reviews.conftest import PASSWORD, make_reviewer

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_counters")]


def _is_login(callback: Any) -> bool:
    view_class = getattr(callback, "view_class", None)
    if isinstance(view_class, type) and issubclass(view_class, LoginView):
        return True
    return isinstance(getattr(callback, "__self__", None), AdminSite) and (
        callback.__name__ == "login"
    )


def login_urls(patterns: list[Any] | None = None, prefix: str = "/") -> list[str]:
    """Every URL of the URLconf whose view checks a username and password."""
    found = []
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            found += login_urls(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern) and (
            _is_login(pattern.callback) or (pattern.name or "").endswith("login")
        ):
            found.append(prefix + str(pattern.pattern))
    return found


def test_the_walk_finds_the_site_and_the_admin_login() -> None:
    assert sorted(login_urls()) == ["/accounts/login/", "/admin/login/"]


def post(url: str, username: str, password: str) -> Any:
    return Client().post(url, {"username": username, "password": password})


@pytest.mark.parametrize("url", login_urls())
def test_every_login_view_locks_a_username_out(url: str) -> None:
    """40 wrong passwords, then the right one: 429 on every login view."""
    make_reviewer("carol", is_staff=True)

    statuses = [post(url, "carol", f"guess-{i}").status_code for i in range(40)]
    right = post(url, "carol", PASSWORD)

    assert statuses[:5] == [200] * 5 and set(statuses[5:]) == {429}
    assert right.status_code == 429 and int(right["Retry-After"]) > 0


@pytest.mark.parametrize("url", login_urls())
def test_every_login_view_limits_attempts_per_address(url: str) -> None:
    statuses = [post(url, f"user{i}", "pw").status_code for i in range(35)]

    assert statuses[:30] == [200] * 30 and statuses[30:] == [429] * 5


def test_failures_on_one_login_view_lock_the_others_too() -> None:
    make_reviewer("carol", is_staff=True)
    for i in range(5):
        post("/admin/login/", "carol", f"guess-{i}")

    assert post("/accounts/login/", "carol", PASSWORD).status_code == 429


# Spellings Django's login form turns into "carol" (strip, then NFKC) or that the model's
# lookup would match once case is folded.
SPELLINGS = [" carol", "carol ", "\tcarol\n", "ｃａｒｏｌ", "CAROL", " Ｃarol "]


@pytest.mark.parametrize("url", login_urls())
@pytest.mark.parametrize("spelling", SPELLINGS)
def test_a_locked_username_stays_locked_however_it_is_spelled(url: str, spelling: str) -> None:
    make_reviewer("carol", is_staff=True)
    for i in range(5):
        post(url, "carol", f"guess-{i}")

    response = post(url, spelling, PASSWORD)

    assert response.status_code == 429


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_failures_under_any_spelling_count_for_the_username(spelling: str) -> None:
    make_reviewer("carol")
    for i in range(5):
        post("/accounts/login/", spelling, f"guess-{i}")

    assert post("/accounts/login/", "carol", PASSWORD).status_code == 429


def test_the_lockout_key_is_the_one_django_s_login_form_and_model_use() -> None:
    """One function says it: strip (the form's CharField), NFKC (UsernameField and
    `AbstractBaseUser.normalize_username`), casefold."""
    assert {ratelimit.account_key(s) for s in SPELLINGS} == {"carol"}
    assert ratelimit.account_key("ﬁona") == "fiona"  # the ligature NFKC unfolds
    assert ratelimit.account_key("dave") != ratelimit.account_key("carol")


def test_a_right_password_still_logs_in_before_the_lockout() -> None:
    make_reviewer("carol", is_staff=True)
    for i in range(4):
        post("/admin/login/", " carol", f"guess-{i}")

    assert post("/accounts/login/", "carol", PASSWORD).status_code == 302
    assert post("/admin/login/", "carol", PASSWORD).status_code == 302


PASSWORD_CHANGES = ["/accounts/password_change/", "/admin/password_change/"]


def carol_logged_in() -> tuple[User, Client]:
    carol = make_reviewer("carol", is_staff=True)
    client = Client()
    client.force_login(carol)
    return carol, client


def change_password(client: Client, url: str, old: str) -> Any:
    new = "A-new-and-long-passphrase-9"
    return client.post(url, {"old_password": old, "new_password1": new, "new_password2": new})


@pytest.mark.parametrize("url", PASSWORD_CHANGES)
def test_wrong_old_passwords_lock_the_password_change_and_the_logins(url: str) -> None:
    """An open session was a way around the lockout: the password-change form checked the
    old password as often as it was posted. Wrong old passwords now count as failed logins
    of the session's user from that address."""
    carol, client = carol_logged_in()

    statuses = [change_password(client, url, f"guess-{i}").status_code for i in range(5)]
    right = change_password(client, url, PASSWORD)

    assert statuses == [200] * 5  # the form again, with the old password's error
    assert right.status_code == 429 and int(right["Retry-After"]) > 0
    carol.refresh_from_db()
    assert carol.check_password(PASSWORD)  # unchanged
    assert post("/accounts/login/", "carol", PASSWORD).status_code == 429


@pytest.mark.parametrize("url", PASSWORD_CHANGES)
def test_failed_logins_lock_the_password_change(url: str) -> None:
    _, client = carol_logged_in()
    for i in range(5):
        post("/accounts/login/", "carol", f"guess-{i}")

    assert change_password(client, url, PASSWORD).status_code == 429


@pytest.mark.parametrize("url", PASSWORD_CHANGES)
def test_a_right_old_password_still_changes_it_before_the_lockout(url: str) -> None:
    carol, client = carol_logged_in()
    for i in range(4):
        change_password(client, url, f"guess-{i}")

    assert change_password(client, url, PASSWORD).status_code == 302
    carol.refresh_from_db()
    assert carol.check_password("A-new-and-long-passphrase-9")
