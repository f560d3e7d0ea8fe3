"""Every inbox and runtime query has an index to use and reads no growing table whole.

A few thousand threads of the scale fixture's shapes (written in bulk from templates the
runtime wrote, `bench.scale.bulk`), `ANALYZE`d, with sequential scans disabled for the
planner: every path of `bench.scale.plans` runs once and each of its statements is
`EXPLAIN ANALYZE`d. A sequential scan of a growing table that remains is one no index
can replace; a scan that reads most of a growing table, even through an index, is a
count or a sort of everything, which grows with every thread. The same check on the big
database is `python -m bench.scale plans`.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from bench.scale import bulk, fixture, plans, recipe, sample
from bench.scale.graphs import GRAPHS, TOOLS

THREADS = 2000


@pytest.fixture(autouse=True)
def _scale_graphs(settings: Any) -> None:
    settings.BEAMWEAVER = {
        **settings.BEAMWEAVER,
        "GRAPHS": {**settings.BEAMWEAVER["GRAPHS"], **GRAPHS},
    }


def _populate() -> None:
    who = sample.people()
    connection.ensure_connection()
    conn = connection.connection
    bulk.prepare(conn)
    names = []
    for graph in sorted(TOOLS):
        for decided in (False, True):
            names.append(
                bulk.capture(
                    conn,
                    sample.real_thread(graph, "cust-9999", "ord-9000000", decided=decided, who=who),
                )
            )
    statements = {name: bulk.insert_statements(conn, name) for name in names}
    first = bulk.reserve_item_ids(conn, THREADS)
    start = timezone.now() - timedelta(days=3)
    clones = [
        bulk.Clone(
            i,
            recipe.kind(graph, decided),
            recipe.new_base(graph, decided, fixture.customer(i), f"ord-{i:07d}", first + i),
            start + timedelta(seconds=60 * i),
        )
        for i, graph, decided in fixture.plan(THREADS, THREADS // 10)
    ]
    bulk.write(conn, clones, statements, bulk.template_times(conn))
    for table in sorted(plans.BIG_TABLES):
        conn.execute(f"ANALYZE {table}")


@pytest.mark.django_db
def test_no_inbox_or_runtime_query_reads_a_growing_table_whole() -> None:
    _populate()
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")
    try:
        verdicts = plans.check()
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET enable_seqscan")

    assert {p for v in verdicts for p in v.paths} == set(plans.PATHS)
    problems = [
        f"{v.path}: {', '.join(v.seq_scans + v.full_scans)} in {' '.join(v.sql.split())[:300]}"
        for v in verdicts
        if v.seq_scans or v.full_scans
    ]
    assert problems == [], "\n".join(problems)
