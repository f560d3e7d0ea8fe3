"""Who a `/lg` request acts as: an API token (`x-api-key` or `Authorization: Bearer`) of
an active user with the reviewer permission, checked in one statement
(`reviews.token_check`) that also primes the user's permissions and groups."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.test import Client
from django.utils import timezone

from beamweaver_core.runtime.access import access
from reviews.models import ApiToken
from reviews.permissions import can_manage, can_review, group_ids, visible_threads
from tests.protocol.conftest import api_user, token_for

pytestmark = pytest.mark.django_db


def status(**headers: str) -> int:
    """The status of creating a thread under `/lg` with `headers` (`HTTP_X_API_KEY=...`)."""
    named = {key.removeprefix("HTTP_").replace("_", "-").lower(): v for key, v in headers.items()}
    response = Client().post("/lg/threads", {}, content_type="application/json", headers=named)
    return response.status_code


def test_a_reviewers_token_is_accepted_as_x_api_key() -> None:
    assert status(HTTP_X_API_KEY=token_for(api_user("alice"))) == 200


def test_a_reviewers_token_is_accepted_as_a_bearer_token() -> None:
    assert status(HTTP_AUTHORIZATION=f"Bearer {token_for(api_user('alice'))}") == 200


def test_a_revoked_token_is_refused() -> None:
    token, raw = ApiToken.objects.issue(api_user("alice"), "revoked")
    token.revoke()
    assert status(HTTP_X_API_KEY=raw) == 401


def test_an_expired_token_is_refused() -> None:
    past = timezone.now() - timedelta(seconds=1)
    raw = ApiToken.objects.issue(api_user("alice"), "expired", expires_at=past)[1]
    assert status(HTTP_X_API_KEY=raw) == 401


def test_a_token_that_expires_later_is_accepted() -> None:
    later = timezone.now() + timedelta(hours=1)
    raw = ApiToken.objects.issue(api_user("alice"), "expires", expires_at=later)[1]
    assert status(HTTP_X_API_KEY=raw) == 200


def test_an_unknown_token_is_refused() -> None:
    assert status(HTTP_X_API_KEY="bw_nope_nope") == 401


def test_a_known_key_with_another_secret_is_refused() -> None:
    raw = token_for(api_user("alice"))
    prefix, key, _ = raw.split("_", 2)
    assert status(HTTP_X_API_KEY=f"{prefix}_{key}_not-the-secret") == 401


@pytest.mark.parametrize("raw", ["not-a-token", "bw_", "xx_key_secret", "bw"])
def test_a_malformed_token_is_refused(raw: str) -> None:
    assert status(HTTP_X_API_KEY=raw) == 401
    assert status(HTTP_AUTHORIZATION=f"Bearer {raw}") == 401


def test_no_token_is_refused() -> None:
    assert status() == 401
    assert status(HTTP_AUTHORIZATION="Basic bw_a_b") == 401


def test_the_token_of_an_inactive_user_is_refused() -> None:
    user = api_user("alice")
    raw = token_for(user)
    user.is_active = False
    user.save(update_fields=["is_active"])
    assert status(HTTP_X_API_KEY=raw) == 401


def test_the_token_of_a_user_without_the_reviewer_permission_is_refused() -> None:
    assert status(HTTP_X_API_KEY=token_for(User.objects.create(username="mallory"))) == 401


def test_the_reviewer_permission_through_a_group_is_enough() -> None:
    group = Group.objects.create(name="reviewers")
    group.permissions.add(Permission.objects.get(codename="review"))
    user = User.objects.create(username="carol")
    user.groups.add(group)
    assert status(HTTP_X_API_KEY=token_for(user)) == 200


def test_a_superusers_token_is_accepted() -> None:
    assert (
        status(HTTP_X_API_KEY=token_for(User.objects.create(username="root", is_superuser=True)))
        == 200
    )


def test_an_inactive_superusers_token_is_refused() -> None:
    root = User.objects.create(username="root", is_superuser=True, is_active=False)
    assert status(HTTP_X_API_KEY=token_for(root)) == 401


def test_authentication_is_one_statement_and_primes_permissions_and_groups(
    django_assert_num_queries: Any,
) -> None:
    """On a warm server (the token used within the minute, the statement compiled), a
    token costs one statement; the user's permission checks and the visible threads'
    query then ask nothing more about the user's permissions or groups."""
    group = Group.objects.create(name="legal")
    user = api_user("alice")
    user.groups.add(group)
    raw = token_for(user)
    assert access().authenticate(raw) is not None  # compiles, sets last_used_at
    with django_assert_num_queries(1):
        authenticated = access().authenticate(raw)
    assert authenticated is not None and authenticated.pk == user.pk
    with django_assert_num_queries(0):
        assert can_review(authenticated) and not can_manage(authenticated)
        assert group_ids(authenticated) == [group.pk]
        threads = access().visible_threads(authenticated)
    with django_assert_num_queries(1):  # the threads themselves, nothing about the user
        assert list(threads) == []


def test_a_group_managers_permissions_are_primed(django_assert_num_queries: Any) -> None:
    group = Group.objects.create(name="managers")
    group.permissions.add(*Permission.objects.filter(codename__in=["review", "manage"]))
    user = User.objects.create(username="dora")
    user.groups.add(group)
    raw = token_for(user)
    access().authenticate(raw)
    with django_assert_num_queries(1):
        authenticated = access().authenticate(raw)
    with django_assert_num_queries(0):
        assert can_manage(authenticated)
        assert authenticated.get_all_permissions() == {"reviews.review", "reviews.manage"}
        assert str(visible_threads(authenticated).query)


def test_last_used_at_is_written_at_most_once_a_minute(django_assert_num_queries: Any) -> None:
    token, raw = ApiToken.objects.issue(api_user("alice"), "used")
    with django_assert_num_queries(2):  # the check; last_used_at, never written
        access().authenticate(raw)
    token.refresh_from_db()
    first = token.last_used_at
    assert first is not None
    with django_assert_num_queries(1):
        access().authenticate(raw)
    token.refresh_from_db()
    assert token.last_used_at == first
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=first - timedelta(minutes=2))
    with django_assert_num_queries(2):
        access().authenticate(raw)
    token.refresh_from_db()
    assert token.last_used_at is not None and token.last_used_at > first
