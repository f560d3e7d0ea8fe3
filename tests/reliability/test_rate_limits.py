"""Abuse and rate limits (reliability.md case 44): decisions per reviewer, login attempts
per address and the lockout of a username; limits that fail open when the cache fails."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client

from beamweaver_core import checks, ratelimit
from beamweaver_core.conf import DEFAULTS
from reviews.models import ApiToken, AuditEvent
from tests.reliability.support import pause_agent
from tests.reviews.conftest import PASSWORD, client_for, make_reviewer
from tests.support.caches import BrokenCache

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_counters(fresh_counters: list[float]) -> list[float]:
    return fresh_counters


def login(client: Client, username: str, password: str) -> Any:
    return client.post("/accounts/login/", {"username": username, "password": password})


def test_a_flood_of_decisions_from_one_reviewer_is_429_and_others_are_unaffected() -> None:
    """100 decision POSTs at once from one session: the first 20 reach the decision
    service, the rest are 429 with `Retry-After` and never touch it; another reviewer
    decides normally meanwhile."""
    alice, bob = make_reviewer("alice"), make_reviewer("bob")
    mine, theirs = pause_agent(thread_id="flood-1"), pause_agent(thread_id="flood-2")
    client = client_for(alice)
    data = {"digest": mine.digest, "d0-type": "approve"}

    statuses = [
        client.post(
            f"/items/{mine.pk}/decide/", {**data, "client_decision_id": f"c{i}"}
        ).status_code
        for i in range(100)
    ]
    blocked = client.post(f"/items/{mine.pk}/decide/", data)
    other = client_for(bob).get(f"/items/{theirs.pk}/")

    assert statuses[:20].count(429) == 0
    assert statuses[20:] == [429] * 80
    assert 1 <= int(blocked["Retry-After"]) <= 10
    assert "Too many decisions in a short time. Try again in" in blocked.content.decode()
    assert AuditEvent.objects.filter(actor=alice).count() == 20
    assert other.status_code == 200
    bob_data = {**data, "digest": theirs.digest, "interrupt_id": theirs.interrupt_id}
    assert client_for(bob).post(f"/items/{theirs.pk}/decide/", bob_data).status_code in (302, 422)


def test_api_decisions_are_limited_per_token() -> None:
    """The JSON API's decision endpoint has the same limit, per token, answered as JSON."""
    alice, bob = make_reviewer("alice"), make_reviewer("bob")
    item = pause_agent(thread_id="api-flood")
    _, mine = ApiToken.objects.issue(alice, "flood")
    _, theirs = ApiToken.objects.issue(bob, "other")
    url = f"/api/v1/items/{item.pk}/decisions/"

    def post(secret: str) -> Any:
        return Client().post(
            url, "{}", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {secret}"
        )

    statuses = [post(mine).status_code for _ in range(25)]
    blocked = post(mine)

    assert 429 not in statuses[:20] and statuses[20:] == [429] * 5
    assert blocked.json()["code"] == "rate_limited" and int(blocked["Retry-After"]) >= 1
    assert post(theirs).status_code == 422


def test_the_api_limit_counts_per_token_however_its_header_is_written() -> None:
    """Issue 13, finding 9: the count was keyed by the raw `Authorization` header, so
    `bearer`, `BEARER` or extra spaces each started a fresh count for the same token."""
    alice = make_reviewer("alice")
    item = pause_agent(thread_id="api-key")
    _, secret = ApiToken.objects.issue(alice, "spelled")
    spellings = [
        f"Bearer {secret}",
        f"bearer {secret}",
        f"BEARER {secret}",
        f"Bearer  {secret}",
        f"Bearer {secret} ",
        f"bEaReR   {secret}\t",
    ]

    statuses = [
        Client()
        .post(
            f"/api/v1/items/{item.pk}/decisions/",
            "{}",
            content_type="application/json",
            HTTP_AUTHORIZATION=spellings[i % len(spellings)],
        )
        .status_code
        for i in range(30)
    ]

    assert 429 not in statuses[:20]
    assert statuses[20:] == [429] * 10


def test_unknown_tokens_do_not_use_up_a_real_token_s_count() -> None:
    """Keyed by the token's id after it is authenticated: guesses at a token whose public
    key is known (it is shown in the admin) are 401 and count nothing against it."""
    alice = make_reviewer("alice")
    item = pause_agent(thread_id="api-guess")
    token, secret = ApiToken.objects.issue(alice, "real")
    url = f"/api/v1/items/{item.pk}/decisions/"

    def post(header: str) -> int:
        response = Client().post(
            url, "{}", content_type="application/json", HTTP_AUTHORIZATION=header
        )
        return response.status_code

    guesses = {post(f"Bearer bw_{token.key}_guess{i}") for i in range(40)}

    assert guesses == {401}
    assert post(f"Bearer {secret}") == 422


def test_the_decision_window_reopens(_fresh_counters: list[float]) -> None:
    alice = make_reviewer("alice")
    item = pause_agent(thread_id="window")
    client = client_for(alice)
    now = _fresh_counters
    for _ in range(20):
        client.post(f"/items/{item.pk}/decide/", {"digest": item.digest})

    assert client.post(f"/items/{item.pk}/decide/", {}).status_code == 429
    now[0] += 10
    assert client.post(f"/items/{item.pk}/decide/", {}).status_code != 429


def test_repeated_wrong_passwords_lock_that_username_out_and_no_one_else() -> None:
    """50 wrong passwords for alice: after 5, 429 with `Retry-After`, even with the right
    password; bob logs in from the same address; alice's lockout ends with its window."""
    make_reviewer("alice")
    make_reviewer("bob")
    attacker = Client()

    statuses = [login(attacker, "alice", f"guess-{i}").status_code for i in range(25)]
    right_password = login(Client(), "alice", PASSWORD)
    bob = login(Client(), "bob", PASSWORD)

    assert statuses[:5] == [200] * 5  # the form again, with an error
    assert statuses[5:] == [429] * 20
    assert right_password.status_code == 429
    assert 800 <= int(right_password["Retry-After"]) <= 900
    assert (bob.status_code, bob["Location"]) == (302, "/")


def test_a_lockout_ends_and_a_success_clears_the_count(_fresh_counters: list[float]) -> None:
    make_reviewer("alice")
    now = _fresh_counters
    for i in range(5):
        login(Client(), "alice", f"wrong-{i}")
    assert login(Client(), "alice", PASSWORD).status_code == 429

    now[0] += 901
    assert login(Client(), "alice", PASSWORD).status_code == 302
    for i in range(4):
        login(Client(), "alice", f"wrong-again-{i}")
    assert login(Client(), "alice", PASSWORD).status_code == 302  # 4 failures: not locked


def test_usernames_differing_only_in_case_share_a_lockout() -> None:
    make_reviewer("alice")
    for i in range(5):
        login(Client(), "ALICE" if i % 2 else "alice", f"wrong-{i}")

    assert login(Client(), "Alice", PASSWORD).status_code == 429


def test_one_address_cannot_try_many_usernames_quickly(db: Any) -> None:
    statuses = [login(Client(), f"user{i}", "pw").status_code for i in range(35)]

    assert statuses[:30] == [200] * 30
    assert statuses[30:] == [429] * 5


def test_limits_fail_open_when_the_cache_fails(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis down must never block a decision or a login: the limit is skipped."""
    alice = make_reviewer("alice")
    item = pause_agent(thread_id="cache-down")
    monkeypatch.setattr(ratelimit, "cache", BrokenCache())
    client = client_for(alice)

    statuses = {client.post(f"/items/{item.pk}/decide/", {}).status_code for _ in range(30)}
    failed_logins = {login(Client(), "alice", "wrong").status_code for _ in range(8)}
    good_login = login(Client(), "alice", PASSWORD)

    assert 429 not in statuses | failed_logins
    assert good_login.status_code == 302
    assert "the cache failed" in caplog.text


def test_the_limits_work_on_the_redis_cache_and_fail_open_fast_when_it_is_away(
    settings: Any,
) -> None:
    """With `REDIS_URL` the counters live in Redis (shared by every web process); a Redis
    that does not answer costs at most its socket timeout."""
    prefix = f"bwtest-{time.monotonic_ns()}"
    redis = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": "redis://127.0.0.1:6379/0",
        "KEY_PREFIX": prefix,
        "OPTIONS": {"socket_connect_timeout": 0.25, "socket_timeout": 0.25},
    }
    limit = ratelimit.Limit(3, 60)
    settings.CACHES = {"default": redis}
    try:
        assert [ratelimit.hit("test", "u1", limit) for _ in range(4)][:3] == [None] * 3
        assert ratelimit.hit("test", "u1", limit) is not None
        assert ratelimit.hit("test", "u2", limit) is None
        settings.CACHES = {"default": {**redis, "LOCATION": "redis://127.0.0.1:9/0"}}
        started = time.monotonic()
        assert ratelimit.hit("test", "u1", limit) is None
        assert time.monotonic() - started < 1.0
    finally:
        settings.CACHES = {"default": redis}
        cache.clear()


@pytest.mark.parametrize("text", ["20", "a/b", "0/10", "5/0", "-1/3"])
def test_a_malformed_limit_says_how_to_write_one(text: str) -> None:
    with pytest.raises(ValueError, match="rate limit"):
        ratelimit.Limit.parse(text)


@pytest.mark.parametrize("name", ratelimit.SETTINGS)
def test_a_malformed_limit_setting_is_a_system_check_error(settings: Any, name: str) -> None:
    """It raised at each request (or live page's handshake) it guards instead."""
    settings.BEAMWEAVER = {**settings.BEAMWEAVER, name: "fast"}

    found = checks.check_rate_limits(None)

    assert [(e.id, e.msg, e.hint) for e in found] == [
        (
            "beamweaver.E070",
            f"BEAMWEAVER[{name!r}]: A rate limit looks like '20/10' (20 per 10 seconds), "
            "got 'fast'.",
            f"The default is {DEFAULTS[name]!r}.",
        )
    ]


@pytest.mark.parametrize("value", [None, "", "1/1", "60/30"])
def test_a_missing_empty_or_well_formed_limit_passes_the_check(settings: Any, value: Any) -> None:
    settings.BEAMWEAVER = {**settings.BEAMWEAVER, **dict.fromkeys(ratelimit.SETTINGS, value)}

    assert checks.check_rate_limits(None) == []
