"""Who a caller is and what they may see or start: the interface the ways in above the
runtime (the LangGraph Platform protocol under `/lg`) ask, and the inbox app implements.

The runtime does not know about users, tokens or review policies; the `reviews` app does.
It registers its implementation at start-up (`register_access`, from its
`AppConfig.ready`), the same inversion the runtime uses to tell the inbox about pauses
(`runtime.signals`), so the layers stay engine → checkpoint → runtime → {protocol,
reviews} → wiring and the protocol never imports `reviews`.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Protocol

from django.db import connection
from django.db.models import QuerySet
from django.db.transaction import TransactionManagementError

from beamweaver_core import statements
from beamweaver_core.exceptions import BeamWeaverError
from beamweaver_core.models import Run, Thread
from beamweaver_core.users import User


class AccessPolicy(Protocol):
    """What the inbox app answers about callers (see `reviews.ports`)."""

    def authenticate(self, raw_token: str) -> User | None:
        """The user a live API token acts as, or `None` (unknown, revoked, expired, or
        its user may not use the API)."""

    def visible_threads(self, user: User) -> QuerySet[Thread]:
        """The threads `user` may see (and so address: read, answer; changing one is
        `change_refusal`'s to allow)."""

    def visibility(self, user: User) -> Hashable | None:
        """Everything `visible_threads(user)` depends on, as a key (for a statement
        compiled once, `beamweaver_core.statements`); `None` when `user` sees no thread."""

    def may_start(self, user: User, graph: str) -> bool:
        """Whether `user` may start runs of the registered graph `graph`."""

    def cancel_refusal(self, user: User, run: Run) -> str | None:
        """Why `user` may not cancel `run` (it also cancels the thread's pending reviews),
        or `None` if they may; the caller has checked that `user` sees its thread."""

    def change_refusal(self, user: User, thread: Thread) -> str | None:
        """Why `user` may not change `thread` (its metadata or state, its runs' records,
        the thread itself, or its work: a new run on it), or `None` if they may; the
        caller has checked that `user` sees it. The same rule as `cancel_refusal`."""

    def copy_refusal(self, thread: Thread) -> str | None:
        """Why `thread` may not be copied, or `None` if it may: what a user sees of a
        thread comes from the inbox's records of it, which a copy does not have."""

    def issue_token(self, user: User, name: str) -> str:
        """A new API token for `user` (its secret text, shown once)."""


class AccessNotConfiguredError(BeamWeaverError, LookupError):
    """No access policy is registered (the `reviews` app is not installed)."""


_policy: AccessPolicy | None = None


def register_access(policy: AccessPolicy) -> None:
    """Install the access policy (the inbox app does, in its `AppConfig.ready`)."""
    global _policy
    _policy = policy


def access() -> AccessPolicy:
    """The registered access policy; `AccessNotConfiguredError` without one."""
    if _policy is None:
        raise AccessNotConfiguredError(
            "No access policy is registered: add 'reviews.apps.ReviewsConfig' to "
            "INSTALLED_APPS (it authenticates API tokens and decides who sees what)."
        )
    return _policy


def locked_if_visible(user: User, thread_id: str) -> Thread | None:
    """The thread, its row locked until the caller's transaction ends, if `user` may see
    it; `None` otherwise. Locked first, then checked: what hides a thread (the review items
    of a question, written in the transaction that records the run's pause, which updates
    the thread's row first) waits for the lock or is seen, so this check, and any the
    caller makes next (who may change the thread), holds until the caller commits."""
    if connection.get_autocommit():  # as Django's select_for_update says it, compiled or not
        raise TransactionManagementError(
            "select_for_update cannot be used outside of a transaction."
        )
    lock = statements.compiled_model(
        "locked thread",
        lambda: Thread.objects.select_for_update().filter(id=THREAD_ID).order_by()[:1],
        stand_ins=[THREAD_ID],
    )
    found = statements.models(lock, {THREAD_ID: thread_id}, prepared=True)
    if not found or not sees(user, thread_id):
        return None
    return found[0]


THREAD_ID = "bw-stand-in-thread-id"
"""The thread id that statements naming one thread are compiled with (each call puts its
own in its place: `beamweaver_core.statements.bound`)."""


def sees(user: User, thread_id: str) -> bool:
    """Whether `user` may see the thread: one statement, compiled once per visibility
    (`AccessPolicy.visibility`) and prepared."""
    key = access().visibility(user)
    if key is None:
        return False

    def build() -> tuple[str, tuple[Any, ...]]:
        visible = access().visible_threads(user).filter(id=THREAD_ID).order_by()
        sql, params = visible.values("id")[:1].query.sql_with_params()
        return sql, statements.stand_ins_taken(params, [THREAD_ID])

    statement = statements.compiled(("sees thread", key), build)
    return bool(
        statements.fetch(
            Thread.objects.db, statements.bound(statement, {THREAD_ID: thread_id}), prepared=True
        )
    )


__all__ = [
    "THREAD_ID",
    "AccessNotConfiguredError",
    "AccessPolicy",
    "access",
    "locked_if_visible",
    "register_access",
    "sees",
]
