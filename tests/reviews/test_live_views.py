"""A push is rendered once per view, not per socket: every inbox that sees the same items
with the same query is sent the same bytes; inboxes that see different items are not."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reviews.live.inbox import InboxConsumer
from reviews.live.rounds import render_round
from reviews.models import ReviewItem
from tests.reviews.conftest import make_manager, make_reviewer, pause
from tests.reviews.test_live_check import consumer, login

pytestmark = pytest.mark.django_db


def inbox_of(user: User, query: bytes = b"") -> InboxConsumer:
    page: InboxConsumer = consumer(InboxConsumer, user, login(user))
    page.scope["query_string"] = query
    assert page.check_handshake()
    return page


def pushed(pages: list[InboxConsumer], item: ReviewItem) -> tuple[list[Any], int]:
    """What one round sends each page for a hint naming `item`, and its query count."""
    with CaptureQueriesContext(connection) as asked:
        outcomes = render_round([(page, {item.pk: True}) for page in pages])
    return outcomes, len(asked)


def test_twenty_inboxes_of_one_audience_cost_one_render_and_a_check_each() -> None:
    item = pause()
    managers = [make_manager(f"m{i}") for i in range(20)]
    one, alone = pushed([inbox_of(managers[0])], item)
    twenty, together = pushed([inbox_of(m) for m in managers], item)

    assert f'id="item-row-{item.pk}"' in one[0][0]
    # The same bytes (the same objects, rendered once) for all twenty.
    assert all(frames is twenty[0] or frames == twenty[0] for frames in twenty)
    # Nineteen more sockets: nineteen more re-check statements, no more rendering.
    assert together - alone == 19


def test_inboxes_that_see_different_items_get_their_own_render(settings: Any) -> None:
    from tests.reviews.conftest import use_policies

    use_policies(settings, {"name": "bob only", "responders": ["bob"]})
    alice, bob = make_reviewer("alice"), make_reviewer("bob")
    item = pause()
    assert item.responder_ids == [bob.pk]

    outcomes, _ = pushed([inbox_of(alice), inbox_of(bob), inbox_of(bob, b"q=nothing")], item)

    for_alice, for_bob, for_bob_filtered = (frames[0] for frames in outcomes)
    assert f'id="item-row-{item.pk}"' not in for_alice
    assert f'id="item-row-{item.pk}" class=' in for_bob
    # Same user, another query: not listed there, so a marker removes the row if shown.
    assert f'id="item-row-{item.pk}" data-remove' in for_bob_filtered


def test_inboxes_of_one_view_with_different_notes_share_one_render() -> None:
    """Hints reach the sockets one after another, so a round finds them with different
    notes; the view is rendered once for all of them, and each gets every noted row."""
    first, second = pause(), pause()
    managers = [make_manager(f"m{i}") for i in range(10)]
    pages = [inbox_of(m) for m in managers]
    with CaptureQueriesContext(connection) as alone:
        render_round([(pages[0], {first.pk: True, second.pk: True})])
    notes = [{first.pk: True} if i % 2 else {second.pk: True, first.pk: True} for i in range(10)]
    with CaptureQueriesContext(connection) as together:
        outcomes = render_round(list(zip(pages, notes, strict=True)))

    assert len(together) - len(alone) == 9
    for frames in outcomes:
        assert f'id="item-row-{first.pk}"' in frames[0]
        assert f'id="item-row-{second.pk}"' in frames[0]


def test_a_push_counts_what_the_user_sees_now_after_joining_a_group(settings: Any) -> None:
    """The push's statements are compiled once per visibility (`beamweaver_core.statements`):
    joining the policy's group between two pushes must change what is counted."""
    from django.contrib.auth.models import Group

    from tests.reviews.conftest import use_policies

    use_policies(settings, {"name": "finance only", "groups": ["finance"]})
    alice = make_reviewer("alice")
    item = pause()
    counted = "<strong>{}</strong> pending"

    (before,), _ = pushed([inbox_of(alice)], item)
    assert counted.format(0) in before[0]
    assert f'id="item-row-{item.pk}"' not in before[0]

    alice.groups.add(Group.objects.get(name="finance"))
    (after,), _ = pushed([inbox_of(alice)], item)
    assert counted.format(1) in after[0]
    assert f'id="item-row-{item.pk}" class=' in after[0]
