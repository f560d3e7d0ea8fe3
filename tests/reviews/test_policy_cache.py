"""Review policies are compiled once per change (issue 16 point 1): resolving them again
costs one statement on the generation row, and any change of what they say, made by this
process or another one, with Django's signals or without, is seen by the next
resolution."""

from __future__ import annotations

import threading
from typing import Any

import psycopg
import pytest
from django.contrib.auth.models import Group, User
from django.db import connection, connections, transaction

from reviews import policies
from reviews.models import ReviewPolicy
from tests.reviews.conftest import pause, use_policies
from tests.support.processes import database_url_for_children
from tests.support.waiting import wait_for

pytestmark = pytest.mark.django_db

REFUND = {"calls": [{"name": "issue_refund", "args": {"order_id": "7", "amount": 500.0}}]}


def refunds(approvals: int = 2) -> ReviewPolicy:
    row = ReviewPolicy.objects.create(
        name="refunds", tool="issue_refund", required_approvals=approvals
    )
    row.reviewer_groups.add(Group.objects.create(name="finance"))
    return row


def approvals() -> int:
    return policies.resolve("tool_review", ["issue_refund"]).approvals


def test_resolving_again_without_a_change_reads_only_the_generation(
    django_assert_num_queries: Any,
) -> None:
    refunds()
    assert approvals() == 2

    with django_assert_num_queries(1):
        assert approvals() == 2


def test_an_update_without_signals_is_seen() -> None:
    refunds()
    assert approvals() == 2

    ReviewPolicy.objects.update(required_approvals=3)

    assert approvals() == 3


def test_raw_sql_a_deletion_and_a_new_row_are_seen() -> None:
    row = refunds()
    assert approvals() == 2
    with connection.cursor() as cursor:
        cursor.execute("UPDATE bw_review_policy SET required_approvals = 4")
    assert approvals() == 4

    row.delete()
    assert approvals() == 1
    ReviewPolicy.objects.create(name="again", tool="issue_refund", required_approvals=5)
    assert approvals() == 5


def test_changed_members_and_renamed_names_are_seen(alice: User) -> None:
    row = refunds()
    row.allowed_responders.add(alice)
    assert policies.resolve("g", ["issue_refund"]).responders == ("alice",)

    Group.objects.filter(name="finance").update(name="fin")
    User.objects.filter(pk=alice.pk).update(username="alicia")

    chosen = policies.resolve("g", ["issue_refund"])
    assert (chosen.groups, chosen.responders) == (("fin",), ("alicia",))
    row.reviewer_groups.clear()
    assert policies.resolve("g", ["issue_refund"]).groups == ()


def test_a_change_rolled_back_is_not_kept() -> None:
    refunds()
    assert approvals() == 2
    with pytest.raises(RuntimeError), transaction.atomic():
        ReviewPolicy.objects.update(required_approvals=5)
        assert approvals() == 5
        raise RuntimeError("roll back")

    assert approvals() == 2
    ReviewPolicy.objects.update(required_approvals=3)
    assert approvals() == 3


def test_changed_settings_are_seen(settings: Any) -> None:
    use_policies(settings, {"name": "refunds", "tool": "issue_refund", "approvals": 2})
    assert approvals() == 2

    settings.BEAMWEAVER["REVIEW_POLICIES"][0]["approvals"] = 3

    assert approvals() == 3


@pytest.mark.django_db(transaction=True)
def test_an_interrupt_after_another_process_edits_a_policy_uses_the_new_one() -> None:
    refunds()
    assert pause(input=REFUND).required_approvals == 2

    # Another process (the admin's): its own connection, committed, by raw SQL.
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("UPDATE bw_review_policy SET required_approvals = 3")
    finally:
        other.close()

    assert pause(input=REFUND).required_approvals == 3


@pytest.mark.django_db(transaction=True)
def test_two_transactions_changing_two_policies_in_opposite_orders_both_commit() -> None:
    """Two admins (or bulk actions) change policies A and B in opposite orders. The
    generation row is bumped by every such change: when it was locked after the policy
    row, each transaction held a policy the other needed, Postgres found the deadlock
    and aborted one of them. Locked first, the second one waits at its first change."""
    first_policy, second_policy = (
        ReviewPolicy.objects.create(name=name, tool=name, required_approvals=1)
        for name in ("first", "second")
    )
    update = "UPDATE bw_review_policy SET required_approvals = required_approvals + 1 WHERE id = %s"
    url = database_url_for_children()
    with psycopg.connect(url) as one, psycopg.connect(url) as other:
        one.execute(update, [first_policy.pk])
        failures: list[BaseException] = []

        def other_in_opposite_order() -> None:
            try:
                other.execute(update, [second_policy.pk])
                other.execute(update, [first_policy.pk])
                other.commit()
            except BaseException as error:  # reported below, in the test's thread
                failures.append(error)

        thread = threading.Thread(target=other_in_opposite_order)
        thread.start()
        pid = other.info.backend_pid

        def other_waits_for_a_lock() -> bool:
            with connection.cursor() as cursor:
                cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid])
                return cursor.fetchone() == ("Lock",)

        wait_for(other_waits_for_a_lock, timeout=10, what="the other transaction to wait")
        try:
            one.execute(update, [second_policy.pk])
            one.commit()
        finally:
            thread.join(15)
        assert failures == []
    assert sorted(ReviewPolicy.objects.values_list("required_approvals", flat=True)) == [3, 3]
