"""The big database's bulk rows are the rows the runtime writes.

`bench.scale` writes a few threads through the runtime and clones them in bulk SQL for the
rest. Here both paths write the same thread (same graph, input and random ids) and every
row of every table must come out the same, column for column (timestamps and identity
columns aside, which differ between any two writes); and a paused thread the bulk path
wrote must resume through the decision service like any other.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from beamweaver_core.models import Run, Thread
from bench.scale import bulk, fixture, recipe, sample
from bench.scale.graphs import GRAPHS
from reviews.models import ReviewItem


@pytest.fixture(autouse=True)
def _scale_graphs(settings: Any) -> None:
    settings.BEAMWEAVER = {
        **settings.BEAMWEAVER,
        "GRAPHS": {**settings.BEAMWEAVER["GRAPHS"], **GRAPHS},
    }


def _pg() -> Any:
    connection.ensure_connection()
    return connection.connection


@pytest.mark.django_db
@pytest.mark.parametrize("decided", [False, True], ids=["paused", "decided"])
def test_a_bulk_clone_writes_exactly_the_rows_the_runtime_wrote(decided: bool) -> None:
    who = sample.people()
    template = sample.real_thread(
        "scale_refund", "cust-9999", "ord-9000000", decided=decided, who=who
    )
    other = sample.real_thread("scale_email", "cust-0417", "ord-0000123", decided=decided, who=who)
    other_template = sample.real_thread(
        "scale_email", "cust-9998", "ord-9000001", decided=decided, who=who
    )
    conn = _pg()
    bulk.prepare(conn)
    bulk.capture(conn, template)
    name = bulk.capture(conn, other_template)
    want = bulk.thread_rows(conn, other)
    base = bulk.read_base(conn, other)
    created = Thread.objects.get(pk=other).created_at
    bulk.delete_thread(conn, other)
    assert not Thread.objects.filter(pk=other).exists()

    statements = {name: bulk.insert_statements(conn, name)}
    written = bulk.write(
        conn, [bulk.Clone(0, name, base, created)], statements, bulk.template_times(conn)
    )

    assert written == 1
    got = bulk.thread_rows(conn, other)
    assert got == want
    assert sum(len(rows) for rows in got.values()) == (24 if decided else 10)
    assert Thread.objects.get(pk=other).created_at == created


@pytest.mark.django_db
def test_a_paused_thread_written_in_bulk_resumes_through_the_decision_service() -> None:
    who = sample.people()
    template = sample.real_thread(
        "scale_notify", "cust-9999", "ord-9000000", decided=False, who=who
    )
    conn = _pg()
    bulk.prepare(conn)
    name = bulk.capture(conn, template)
    first = bulk.reserve_item_ids(conn, 2)
    clones = [
        bulk.Clone(
            i,
            name,
            recipe.new_base("scale_notify", False, fixture.customer(i), f"ord-{i:07d}", first + i),
            Thread.objects.get(pk=template).created_at,
        )
        for i in range(2)
    ]
    bulk.write(conn, clones, {name: bulk.insert_statements(conn, name)}, bulk.template_times(conn))
    item = ReviewItem.objects.get(pk=first + 1)
    assert item.thread_id == clones[1].base.thread_id and item.is_pending
    assert f"{fixture.customer(1)}: escalation about ord-0000001" in item.payload_json

    sample.approve(item, who.decider)

    thread = Thread.objects.get(pk=item.thread_id)
    assert thread.status == Thread.Status.COMPLETED
    resume = Run.objects.get(thread=thread, kind=Run.Kind.RESUME)
    assert resume.status == Run.Status.SUCCEEDED and resume.result == {
        "keys": ["customer", "decisions", "executed", "order"]
    }
    item.refresh_from_db()
    assert item.status == ReviewItem.Status.DECIDED
    assert ReviewItem.objects.get(pk=first).is_pending  # its twin untouched


def test_the_plan_spreads_paused_threads_evenly() -> None:
    rows = list(fixture.plan(1000, 100))
    paused = [i for i, _, decided in rows if not decided]
    assert len(paused) == 100 and paused[:3] == [0, 10, 20]
    assert {graph for *_, graph, _ in [(i, g, d) for i, g, d in rows]} == set(GRAPHS)
