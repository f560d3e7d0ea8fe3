"""`LiveCheck`: a live page's re-check in one SQL statement decides as the queries of
`reviews.permissions` do, and sees every revocation at the next push."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.contrib.sessions.backends.db import SessionStore
from django.contrib.sessions.models import Session
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from reviews.live.events import event_fragment
from reviews.live.inbox import InboxConsumer
from reviews.live.item import ItemConsumer
from reviews.live.thread import ThreadConsumer
from reviews.models import ReviewItem
from reviews.permissions import LiveCheck, can_manage, can_review, group_ids, visible_threads
from tests.reviews.conftest import make_manager, make_reviewer, pause

pytestmark = pytest.mark.django_db


def login(user: User) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


def consumer(kind: type, user: User, key: str, **route: Any) -> Any:
    """A consumer as the handshake leaves it (scope user and session), checked once."""
    page = kind()
    page.scope = {
        "user": user,
        "session": SessionStore(session_key=key),
        "url_route": {"kwargs": route},
        "query_string": b"",
    }
    page.user = user
    return page


def thread_page(user: User, item: ReviewItem) -> ThreadConsumer:
    page = consumer(ThreadConsumer, user, login(user), thread_id=item.thread_id)
    assert page.check_handshake()
    return page


def an_event(item: ReviewItem, seq: int) -> tuple[tuple[str, str], str]:
    dom_id, html = event_fragment(str(item.run_id), {"seq": seq, "event": "task.end"})  # type: ignore[misc]
    return ("event", dom_id), html


def test_a_pushed_run_event_costs_one_statement_per_socket() -> None:
    """Before: a session lookup, the user, its permissions (two), its groups and the
    thread's visibility, six queries per socket per event; now one statement, and the
    events noted meanwhile go out in one frame after that one statement."""
    alice = make_reviewer("alice")
    item = pause()
    page = thread_page(alice, item)
    events = dict(an_event(item, seq) for seq in range(1, 6))

    with CaptureQueriesContext(connection) as one:
        single = page.checked_frames(dict([an_event(item, 99)]))
    with CaptureQueriesContext(connection) as five:
        together = page.checked_frames(events)

    assert (len(one), len(five)) == (1, 1)
    assert single is not None and len(single) == 1 and "run-event-" in single[0]
    assert together is not None and len(together) == 1
    assert together[0].count('hx-swap-oob="beforeend:#thread-events"') == 5


def test_the_inbox_and_item_pages_recheck_with_one_statement_too() -> None:
    alice = make_reviewer("alice")
    item = pause()
    key = login(alice)
    inbox = consumer(InboxConsumer, alice, key)
    page = consumer(ItemConsumer, alice, key, pk=item.pk)

    with CaptureQueriesContext(connection) as handshakes:
        assert inbox.check_handshake() and page.check_handshake()
    with CaptureQueriesContext(connection) as checks:
        assert inbox.still_allowed() and page.still_allowed()

    # A handshake: the statement, and Django's `get_user` reading the user once for the
    # session's data; a re-check of the same session data is the statement alone.
    assert (len(handshakes), len(checks)) == (4, 2)


def test_a_run_event_is_rendered_once_for_every_socket(monkeypatch: Any) -> None:
    from reviews.live import events

    rendered: list[Any] = []
    render = events._render_event
    monkeypatch.setattr(
        events, "_render_event", lambda *args: rendered.append(args) or render(*args)
    )
    record = {"seq": 7, "event": "node.started", "node": "<b>n</b>", "data": {"x": 1}}
    run_id = "00000000-0000-0000-0000-000000000001"

    fragments = {event_fragment(run_id, dict(record)) for _ in range(20)}

    assert len(rendered) == 1 and len(fragments) == 1
    dom_id, html = fragments.pop()  # type: ignore[misc]
    assert dom_id == f"run-event-{run_id}-7" and "&lt;b&gt;n&lt;/b&gt;" in html
    assert event_fragment(run_id, {**record, "node": "m"}) != (dom_id, html)
    assert event_fragment("not a uuid", record) is None


@pytest.mark.parametrize(
    "revocation",
    [
        "permission removed",
        "group permission removed",
        "deactivated by update",
        "deleted",
        "logged out",
        "session expired",
        "password changed elsewhere",
        "another user in the session",
        "thread hidden by a policy",
        "thread gone",
    ],
)
def test_every_revocation_refuses_the_next_push(revocation: str) -> None:
    alice = make_reviewer("alice", reviewer=False)
    team = Group.objects.create(name="team")
    team.permissions.add(Permission.objects.get(codename="review"))
    alice.groups.add(team)
    alice.user_permissions.add(Permission.objects.get(codename="review"))
    item = pause()
    page = thread_page(User.objects.get(pk=alice.pk), item)
    key = page.scope["session"].session_key
    assert page.checked_frames(dict([an_event(item, 1)]))

    if revocation == "permission removed":
        alice.user_permissions.clear()
        alice.groups.clear()
    elif revocation == "group permission removed":
        alice.user_permissions.clear()
        team.permissions.clear()
    elif revocation == "deactivated by update":
        User.objects.filter(pk=alice.pk).update(is_active=False)
    elif revocation == "deleted":
        User.objects.filter(pk=alice.pk).delete()
    elif revocation == "logged out":
        Session.objects.filter(session_key=key).delete()
    elif revocation == "session expired":
        Session.objects.filter(session_key=key).update(
            expire_date=timezone.now() - timedelta(seconds=1)
        )
    elif revocation == "password changed elsewhere":
        alice.set_password("another one entirely")
        alice.save()
    elif revocation == "another user in the session":
        store = SessionStore(session_key=key)
        store["_auth_user_id"] = str(make_reviewer("bob").pk)
        store.save()
    elif revocation == "thread hidden by a policy":
        ReviewItem.objects.filter(pk=item.pk).update(reviewer_group_ids=[team.pk + 1])
    else:
        ReviewItem.objects.filter(thread_id=item.thread_id).delete()
        from beamweaver_core.models import Thread

        Thread.objects.filter(id=item.thread_id).delete()

    assert page.checked_frames(dict([an_event(item, 2)])) is None


def test_a_session_saved_again_for_the_same_user_still_passes() -> None:
    alice = make_reviewer("alice")
    item = pause()
    page = thread_page(alice, item)
    store = SessionStore(session_key=page.scope["session"].session_key)
    store["something"] = "else"
    store.save()

    assert page.checked_frames(dict([an_event(item, 1)]))


def test_the_recheck_user_answers_permission_questions_without_queries() -> None:
    manager = make_manager("manager")
    team = Group.objects.create(name="team")
    manager.groups.add(team)
    check = LiveCheck(manager.pk, session_key=login(manager))

    fresh, data = check.run()  # type: ignore[misc]
    with CaptureQueriesContext(connection) as asked:
        answers = (can_review(fresh), can_manage(fresh), group_ids(fresh))

    assert data and answers == (True, True, [team.pk]) and len(asked) == 0
    assert fresh.get_all_permissions() == User.objects.get(pk=manager.pk).get_all_permissions()


def rules() -> dict[str, dict[str, Any]]:
    return {
        "open to every reviewer": {},
        "another group": {"reviewer_group_ids": [-1]},
        "her group": {"reviewer_group_ids": ["team"]},
        "a responder": {"reviewer_group_ids": [-1], "responder_ids": ["alice"]},
        "someone else responds": {"responder_ids": [-2]},
        "assigned to her": {"reviewer_group_ids": [-1], "assignee": "alice"},
        "escalated to her group": {
            "reviewer_group_ids": [-1],
            "escalation_group": "team",
            "escalated_at": True,
        },
        "escalation to her group pending": {
            "reviewer_group_ids": [-1],
            "escalation_group": "team",
        },
    }


@pytest.mark.parametrize("who", ["a reviewer", "a manager", "a superuser", "no reviewer"])
@pytest.mark.parametrize("rule", list(rules()))
def test_the_statement_decides_as_the_permission_queries(who: str, rule: str) -> None:
    if who == "a superuser":
        alice = User.objects.create_superuser("alice", password="x" * 12)
    elif who == "a manager":
        alice = make_manager("alice")
    else:
        alice = make_reviewer("alice", reviewer=who == "a reviewer")
    team = Group.objects.create(name="team")
    alice.groups.add(team)
    item = pause()
    names = {"team": team.pk, "alice": alice.pk}
    fields: dict[str, Any] = {}
    for name, value in rules()[rule].items():
        if name == "assignee":
            fields["assignee_id"] = alice.pk
        elif name == "escalation_group":
            fields["escalation_group_id"] = team.pk
        elif name == "escalated_at":
            fields["escalated_at"] = timezone.now()
        else:
            fields[name] = [names.get(v, v) for v in value]
    ReviewItem.objects.filter(pk=item.pk).update(**fields)
    key = login(alice)
    user = User.objects.get(pk=alice.pk)

    thread = LiveCheck(alice.pk, session_key=key, thread_id=item.thread_id)
    one = LiveCheck(alice.pk, session_key=key, item_id=item.pk)
    nowhere = LiveCheck(alice.pk, session_key=key, thread_id="no such thread")
    decided = {
        "thread": thread.sees(thread.run()[0]),  # type: ignore[index]
        "item": one.sees(one.run()[0]),  # type: ignore[index]
        "unknown thread": nowhere.sees(nowhere.run()[0]),  # type: ignore[index]
    }
    expected = {
        "thread": visible_threads(user).filter(id=item.thread_id).exists(),
        "item": ReviewItem.objects.visible_to(user).filter(pk=item.pk).exists(),
        "unknown thread": False,
    }

    assert decided == expected


@pytest.mark.parametrize("page", [{}, {"thread_id": "t-1"}, {"item_id": 42}])
def test_the_statement_is_compiled_once_per_kind_of_page(page: dict[str, Any]) -> None:
    """Compiling the statement costs ten times running it: each kind of page compiles it
    once, and a socket's check only puts its own user, session and page in it."""
    from reviews import live_check

    first = LiveCheck(7, session_key="key-a", **page)
    second = LiveCheck(8, session_key="key-b", **page)
    compiled = second._compile(
        {"user": 8, "session": "key-b", "thread": None, "item": None}
        | {name.removesuffix("_id"): value for name, value in page.items()}
    )

    assert (second.sql, second.params, second.extra) == compiled
    assert first.params != second.params
    assert any(key[0] == second.page for key in live_check._TEMPLATES)


def test_a_thread_snapshot_reads_the_same_rows_however_many_runs_people_started() -> None:
    alice = make_reviewer("alice")
    item = pause(user=alice)
    page = thread_page(User.objects.get(pk=alice.pk), item)
    with CaptureQueriesContext(connection) as one_run:
        page.snapshot()
    from beamweaver_core.models import Run

    for _ in range(3):  # each started from input, as people start runs
        Run.objects.create(
            thread_id=item.thread_id,
            graph=item.graph,
            created_by=alice,
            status="succeeded",
            input={},
        )
    with CaptureQueriesContext(connection) as four_runs:
        snapshot = page.snapshot()

    assert snapshot.count("by alice") == 4
    assert len(four_runs) == len(one_run)
