"""The protocol's thread and run lookups, compiled once per visibility and prepared
(`beamweaver_core.statements.compiled_model`): they answer exactly as the querysets they
are compiled from, for every kind of caller, and a change of what a caller may see (a
group joined or left) is never answered from a statement compiled for what they saw
before."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection, transaction
from django.db.models import QuerySet
from django.db.transaction import TransactionManagementError

from beamweaver_core import statements
from beamweaver_core.models import Run, Thread
from beamweaver_core.protocol import lookup, waiting
from beamweaver_core.runtime.access import locked_if_visible, sees
from reviews.models import ReviewItem
from tests.reviews.conftest import make_manager, make_reviewer

pytestmark = pytest.mark.django_db


def _thread(name: str, *, groups: list[int] | None = None, status: str = "queued") -> Thread:
    """A thread with a run (`status`, with options), hidden from those outside `groups`
    by a review item when `groups` is given."""
    thread = Thread.objects.create(id=name, graph="linear", metadata={"owner": name, "n": [1]})
    run = Run.objects.create(
        thread=thread, graph="linear", status=status, options={"interrupt_before": ["two"]}
    )
    if groups is not None:
        ReviewItem.objects.create(
            thread=thread,
            run=run,
            graph="linear",
            interrupt_id=f"i-{name}",
            kind="question",
            payload_json="{}",
            digest="0" * 64,
            reviewer_group_ids=groups,
        )
    return thread


def _orm(user: Any, thread_id: str, busy: bool, latest_options: bool) -> Thread | None:
    """The queryset `lookup.visible_thread` is compiled from, run by the ORM."""
    found: QuerySet[Thread] = lookup.threads(user).filter(id=thread_id)
    if busy:
        found = lookup.with_busy(found)
    if latest_options:
        found = lookup.with_latest_options(found)
    return found.first()


def _seen(found: Thread | None) -> dict[str, Any] | None:
    if found is None:
        return None
    return {k: v for k, v in vars(found).items() if k != "_state"}


def _fresh(user: User) -> User:
    """The user read again, as a new request reads its caller."""
    return User.objects.get(pk=user.pk)


def test_the_compiled_lookups_answer_as_their_querysets_for_every_caller() -> None:
    night = Group.objects.create(name="night")
    day = Group.objects.create(name="day")
    callers = {
        "no permission": make_reviewer("nobody", reviewer=False),
        "reviewer": make_reviewer("rita"),
        "night reviewer": make_reviewer("nina"),
        "manager": make_manager("max"),
    }
    callers["night reviewer"].groups.add(night)
    threads = [
        _thread("open", status="succeeded"),
        _thread("busy-open"),
        _thread("night-only", groups=[night.pk]),
        _thread("day-only", groups=[day.pk], status="interrupted"),
    ]
    compared = 0
    for user in callers.values():
        for thread_id in [*(t.id for t in threads), "missing", "bw-stand-in-thread-id"]:
            for busy in (False, True):
                for latest_options in (False, True):
                    expected = _seen(_orm(_fresh(user), thread_id, busy, latest_options))
                    found = lookup.visible_thread(
                        _fresh(user), thread_id, busy=busy, latest_options=latest_options
                    )
                    assert _seen(found) == expected, (user.username, thread_id)
                    assert sees(_fresh(user), thread_id) is (expected is not None)
                    compared += expected is not None
    # What each caller sees: not nothing, and not the same for all.
    assert compared == 4 * (0 + 2 + 3 + 4)
    shown = lookup.visible_thread(callers["manager"], "busy-open", busy=True, latest_options=True)
    assert shown is not None
    assert shown.metadata == {"owner": "busy-open", "n": [1]}  # converted, as the ORM does
    assert getattr(shown, lookup.BUSY) is True
    assert getattr(shown, lookup.LATEST_OPTIONS) == {"interrupt_before": ["two"]}


def test_joining_or_leaving_a_group_changes_what_the_compiled_lookup_sees() -> None:
    night = Group.objects.create(name="night")
    _thread("night-only", groups=[night.pk])
    nina = make_reviewer("nina")

    assert lookup.visible_thread(_fresh(nina), "night-only") is None
    assert not sees(_fresh(nina), "night-only")
    nina.groups.add(night)
    assert lookup.visible_thread(_fresh(nina), "night-only") is not None
    assert sees(_fresh(nina), "night-only")
    nina.groups.remove(night)
    assert lookup.visible_thread(_fresh(nina), "night-only") is None
    assert not sees(_fresh(nina), "night-only")


@pytest.mark.django_db(transaction=True)
def test_the_locked_lookup_locks_only_what_its_caller_sees() -> None:
    night = Group.objects.create(name="night")
    _thread("night-only", groups=[night.pk])
    _thread("open")
    rita = make_reviewer("rita")
    with transaction.atomic():
        assert locked_if_visible(_fresh(rita), "night-only") is None
        locked = locked_if_visible(_fresh(rita), "open")
        assert locked is not None and locked.metadata == {"owner": "open", "n": [1]}
        with connection.cursor() as cursor:  # the row is locked by this transaction
            cursor.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'transactionid' "
                "AND pid = pg_backend_pid()"
            )
            assert cursor.fetchone() == (1,)


@pytest.mark.django_db(transaction=True)
def test_the_locked_lookup_refuses_to_run_outside_a_transaction() -> None:
    """Where its lock would end with its statement: as Django refuses `select_for_update`
    there, also once the statement is compiled."""
    _thread("open")
    rita = make_reviewer("rita")
    with transaction.atomic():
        assert locked_if_visible(_fresh(rita), "open") is not None  # compiled
    for _ in range(2):
        with pytest.raises(TransactionManagementError):
            locked_if_visible(_fresh(rita), "open")


def test_a_waits_run_is_read_as_it_is_now() -> None:
    thread = _thread("open", status="running")
    run = Run.objects.get(thread=thread)
    assert waiting._run(run.id) == run and waiting._run(run.id).status == "running"
    Run.objects.filter(pk=run.pk).update(status="succeeded")
    assert waiting._run(run.id).status == "succeeded"
    assert waiting._run(uuid.uuid4()) is None
    assert waiting._run(waiting.RUN_ID) is None


def test_a_stand_in_changed_by_its_lookup_is_refused() -> None:
    """A lookup that rewrites its value (`contains` wraps it in `%`) would leave the
    stand-in unreplaced, so its statement is refused when compiled."""
    with pytest.raises(RuntimeError, match="stand-ins"):
        statements.compiled_model(
            ("test", "contains"),
            lambda: Thread.objects.filter(id__contains="bw-test-stand-in"),
            stand_ins=["bw-test-stand-in"],
        )
