"""Whether a live page's socket may still be sent what it shows: its session still logs
its user in, and the user may still see the page."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any

from django.conf import settings
from django.contrib.auth import SESSION_KEY, get_user, get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.contrib.sessions.backends.base import SessionBase

from beamweaver_core.users import User
from reviews.permissions import LiveCheck, can_review

DATABASE_SESSIONS = frozenset(
    {"django.contrib.sessions.backends.db", "django.contrib.sessions.backends.cached_db"}
)
"""Session engines whose table `LiveCheck` reads (for others the store is asked)."""


def session_store(key: str | None = None) -> SessionBase:
    store: SessionBase = import_module(settings.SESSION_ENGINE).SessionStore(session_key=key)
    return store


class _Holder:
    """What `django.contrib.auth.get_user` reads of a request: its session."""

    def __init__(self, session: SessionBase) -> None:
        self.session = session


def logs_in(data: str | SessionBase | None, user: User) -> bool:
    """Whether session `data` (as stored, or a loaded store) logs `user` in, decided by
    `django.contrib.auth.get_user` (the backend, the session hash and its fallbacks). The
    store it is given has no key, so a session it refuses is not flushed from the table."""
    if data is None:
        return False
    if isinstance(data, str):
        store = session_store()
        # The loaded data, as `SessionBase` caches it (a private name, not in the stubs).
        store._session_cache = store.decode(data)  # type: ignore[attr-defined]
    else:
        store = data
    # `get_user` reads only the request's session: a `_Holder` stands for the request.
    found = get_user(_Holder(store))  # type: ignore[arg-type]
    return bool(found.is_authenticated) and str(found.pk) == str(user.pk)


class Recheck:
    """One socket's re-check, run before every push: one SQL statement (`LiveCheck`),
    or the queries of `reviews.permissions` for backends it does not cover.

    A session's data already found to log the user in (same data, same password) is not
    asked of `get_user` again: that costs a query of the user, and the check runs for
    every push to every socket."""

    def __init__(self, session_key: str | None, page: dict[str, Any]) -> None:
        self.session_key = session_key
        self.page = page
        self.check: LiveCheck | None = None
        self.seen: tuple[Any, ...] | None = None

    def fresh_user(
        self, user: AbstractBaseUser | AnonymousUser | None, allowed: Callable[[User], bool]
    ) -> User | None:
        """The user, read again, if the session still logs them in and they may still
        see the page (`allowed(user)`: the page's own queries, without `LiveCheck`)."""
        key = self.session_key
        if user is None or not getattr(user, "pk", None) or not key:
            return None
        if not LiveCheck.applies():
            return self._by_queries(user.pk, key, allowed)
        in_table = settings.SESSION_ENGINE in DATABASE_SESSIONS
        if self.check is None:
            self.check = LiveCheck(user.pk, session_key=key if in_table else None, **self.page)
        found = self.check.run()
        if found is None:
            return None
        fresh, stored = found
        data = stored if in_table else session_store(key)
        if not self._logs_in(data, fresh) or not self.check.sees(fresh):
            return None
        return fresh

    def _logs_in(self, data: str | SessionBase | None, user: User) -> bool:
        seen = (data, user.pk, user.password) if isinstance(data, str) else None
        if seen is not None and seen == self.seen:
            return True
        if not logs_in(data, user):
            return False
        self.seen = seen
        return True

    def _by_queries(self, user_pk: Any, key: str, allowed: Callable[[User], bool]) -> User | None:
        store = session_store(key)
        if str(store.get(SESSION_KEY)) != str(user_pk):
            return None
        fresh = get_user_model().objects.filter(pk=user_pk).first()
        if fresh is None or not can_review(fresh) or not allowed(fresh):
            return None
        return fresh
