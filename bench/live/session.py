"""The benchmark's reviewer: a real user with the review permission and a real session.

The workload process configures Django on the live server's database (same settings
module, same `SECRET_KEY`), creates the user, and stores a session the way `login()`
does, so the server authenticates the client's cookie exactly as a browser's. Requests
carry the CSRF cookie and header and an `Origin`, as htmx in a browser sends them.
"""

from __future__ import annotations

import json
import os
import secrets
import string
from dataclasses import dataclass
from typing import Any

SECRET_KEY = "bench-" + secrets.token_urlsafe(40)
"""This process's and its server's secret key (sessions are signed with it)."""


def server_env(database_url: str, graphs: dict[str, str] | None = None) -> dict[str, str]:
    """Variables every process of the live setup shares (Django, database, graphs, logs);
    `graphs` registers more graphs next to the benchmark's."""
    from bench.live.graphs import GRAPHS

    return {
        "DATABASE_URL": database_url,
        "DJANGO_SETTINGS_MODULE": "beamweaver_core.settings",
        "SECRET_KEY": SECRET_KEY,
        "BEAMWEAVER_GRAPHS": json.dumps({**GRAPHS, **(graphs or {})}),
        "DEBUG": "0",
        "LOG_LEVEL": "WARNING",
        "BEAMWEAVER_LOG_LEVEL": "WARNING",
        # The workloads open up to thousands of sockets with one reviewer's session (as
        # that many tabs), at once and again after a restart; the per-user bounds of a
        # real site would refuse all but 50, and all but 60 opened in 30 s.
        "BEAMWEAVER_LIVE_SOCKETS_PER_USER": "100000",
        "BEAMWEAVER_RATE_SOCKETS": "1000000/10",
    }


def setup_django(
    database_url: str, layer: dict[str, str] | None = None, graphs: dict[str, str] | None = None
) -> None:
    """Configure Django in this (fresh) process on the live server's database. With
    `layer` (`REDIS_URL` and `BEAMWEAVER_CHANNEL_PREFIX` of a `redis`-mode server) the
    hints this process sends (`run.queued`) reach the server's workers; without, it
    sends none."""
    os.environ.update(server_env(database_url, graphs))
    os.environ.pop("REDIS_URL", None)
    os.environ.update(layer or {})
    import django

    django.setup()


@dataclass(frozen=True, slots=True)
class Reviewer:
    """A logged-in reviewer's cookies."""

    username: str
    session_key: str
    csrf_token: str

    @property
    def cookie(self) -> str:
        return f"sessionid={self.session_key}; csrftoken={self.csrf_token}"

    def http_headers(self, base: str) -> dict[str, str]:
        """Headers of a same-origin request from a page of `base` (CSRF included)."""
        return {"Cookie": self.cookie, "X-CSRFToken": self.csrf_token, "Origin": base}

    def htmx_headers(self, base: str, target: str, current: str) -> dict[str, str]:
        """Headers htmx adds to a request from page `current` swapping `#target`."""
        return {
            **self.http_headers(base),
            "HX-Request": "true",
            "HX-Target": target,
            "HX-Current-URL": base + current,
        }


def create_reviewer(username: str = "bench-reviewer") -> Reviewer:
    """A user with `reviews.review` and a stored session logging it in."""
    from importlib import import_module

    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.models import Permission, User

    user = User.objects.create_user(username, password=secrets.token_urlsafe(16))
    user.user_permissions.add(
        Permission.objects.get(codename="review", content_type__app_label="reviews")
    )
    store: Any = import_module(settings.SESSION_ENGINE).SessionStore()
    store[SESSION_KEY] = str(user.pk)
    store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    store[HASH_SESSION_KEY] = user.get_session_auth_hash()
    store.save()
    csrf = "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(32))
    return Reviewer(username, store.session_key, csrf)
