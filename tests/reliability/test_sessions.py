"""Session hygiene (reliability.md case 45): fixation, cookie flags in production, and a
session that expired or ended while a review form was open."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import timedelta
from importlib import import_module
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.sessions.models import Session
from django.test import Client
from django.utils import timezone

from reviews.models import AuditEvent, Decision
from tests.reliability.support import pause_agent, run_queued
from tests.reliability.test_deploy_checks import PRODUCTION
from tests.reviews.conftest import PASSWORD, make_reviewer
from tests.support.processes import ROOT

pytestmark = pytest.mark.django_db

COOKIE_SETTINGS = (
    "SESSION_COOKIE_SECURE",
    "SESSION_COOKIE_HTTPONLY",
    "SESSION_COOKIE_SAMESITE",
    "CSRF_COOKIE_SECURE",
    "CSRF_COOKIE_SAMESITE",
    "SESSION_COOKIE_AGE",
)


def production_cookie_settings() -> dict[str, Any]:
    """The cookie settings a process started with the production environment computes."""
    code = (
        "import json; from django.conf import settings; "
        f"print(json.dumps({{k: getattr(settings, k) for k in {COOKIE_SETTINGS!r}}}))"
    )
    clean = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "shell", "-c", code],
        env={**clean, "PYTHONPATH": str(ROOT), **PRODUCTION},
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def form_fields(html: str) -> dict[str, str]:
    return dict(re.findall(r'<input type="hidden" name="(\w+)"[^>]* value="([^"]*)"', html))


def test_logging_in_replaces_a_session_id_planted_before_login() -> None:
    """Fixation: a session id the attacker obtained (and planted in the victim's browser)
    is not the one that carries the login; it is gone from the store afterwards."""
    make_reviewer("alice")
    store = import_module(django_settings.SESSION_ENGINE).SessionStore()
    store["planted"] = True
    store.create()
    planted = store.session_key
    victim = Client()
    victim.cookies["sessionid"] = planted

    response = victim.post("/accounts/login/", {"username": "alice", "password": PASSWORD})

    assert response.status_code == 302
    assert victim.cookies["sessionid"].value != planted
    assert not Session.objects.filter(session_key=planted).exists()
    attacker = Client()
    attacker.cookies["sessionid"] = planted
    assert attacker.get("/").status_code == 302  # still anonymous: sent to the login page


def test_logging_in_rotates_the_csrf_token() -> None:
    make_reviewer("alice")
    client = Client()
    before = client.get("/accounts/login/").cookies["csrftoken"].value

    client.post("/accounts/login/", {"username": "alice", "password": PASSWORD})

    assert client.cookies["csrftoken"].value != before


def test_production_cookies_are_secure_http_only_and_same_site(settings: Any) -> None:
    """The production environment turns on Secure, HttpOnly and SameSite=Lax, and a real
    login answer carries them on both cookies."""
    production = production_cookie_settings()
    make_reviewer("alice")
    for name, value in production.items():
        setattr(settings, name, value)

    response = Client().post("/accounts/login/", {"username": "alice", "password": PASSWORD})

    assert production["SESSION_COOKIE_SECURE"] is production["CSRF_COOKIE_SECURE"] is True
    assert production["SESSION_COOKIE_HTTPONLY"] is True
    assert production["SESSION_COOKIE_SAMESITE"] == production["CSRF_COOKIE_SAMESITE"] == "Lax"
    assert production["SESSION_COOKIE_AGE"] <= 12 * 3600
    session, csrf = response.cookies["sessionid"], response.cookies["csrftoken"]
    assert (session["secure"], session["httponly"], session["samesite"]) == (True, True, "Lax")
    assert (csrf["secure"], csrf["samesite"]) == (True, "Lax")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("ending", ["expired", "logged-out"])
def test_a_session_that_ended_while_the_form_was_open_cannot_decide(
    ending: str, effects_log: Path
) -> None:
    """The form stays on screen but the session behind it expired (or was logged out in
    another tab): the POST is sent to the login page, nothing is decided or audited as a
    decision; after logging in again the reloaded page decides normally."""
    make_reviewer("alice")
    item = pause_agent(thread_id=f"ended-session-{ending}")
    client = Client()
    client.post("/accounts/login/", {"username": "alice", "password": PASSWORD})
    fields = form_fields(client.get(f"/items/{item.pk}/").content.decode())
    if ending == "expired":
        Session.objects.update(expire_date=timezone.now() - timedelta(seconds=1))
    else:
        other_tab = Client()
        other_tab.cookies["sessionid"] = client.cookies["sessionid"].value
        other_tab.post("/accounts/logout/")

    refused = client.post(f"/items/{item.pk}/decide/", {**fields, "d0-type": "approve"})
    client.post("/accounts/login/", {"username": "alice", "password": PASSWORD})
    fresh = form_fields(client.get(f"/items/{item.pk}/").content.decode())
    accepted = client.post(f"/items/{item.pk}/decide/", {**fresh, "d0-type": "approve"})
    run_queued()

    assert refused.status_code == 302
    assert refused["Location"].startswith("/accounts/login/?next=")
    assert accepted.status_code == 302
    assert Decision.objects.filter(item=item).count() == 1
    assert AuditEvent.objects.filter(item=item, action="decided").count() == 1
    assert fresh["client_decision_id"] != fields["client_decision_id"]
