"""A run's stored events read by size (`protocol.backlog`): Postgres returns, of the next
events, only those whose data before them fits the budget, so a stream of large events
never loads a hundred of them to send one."""

from __future__ import annotations

import pytest
from django.utils import timezone

from beamweaver_core.models import Run, RunEvent, Thread
from beamweaver_core.protocol.backlog import next_events

pytestmark = pytest.mark.django_db


def _run_with(sizes: list[int | None]) -> Run:
    Thread.objects.create(id="backlog")
    run = Run.objects.create(thread_id="backlog", graph="g")
    RunEvent.objects.bulk_create(
        RunEvent(
            run=run,
            thread_id="backlog",
            seq=seq,
            event="node.finished",
            data=None if size is None else {"blob": "x" * size},
            created_at=timezone.now(),
        )
        for seq, size in enumerate(sizes, start=1)
    )
    return run


def seqs(run: Run, first: int, limit: int, budget: float) -> list[int]:
    return [row.seq for row in next_events(run.id, first, limit, budget)]


def test_only_the_events_that_fit_the_budget_are_read() -> None:
    run = _run_with([100_000, 100_000, None, 10, 100_000, 10])
    assert seqs(run, 1, 100, 50_000) == [1]  # the first always, even past the budget
    assert seqs(run, 1, 100, 150_000) == [1, 2]  # up to the event crossing it
    assert seqs(run, 3, 100, 50) == [3, 4, 5]  # empty data counts nothing
    assert seqs(run, 1, 100, -5) == [1]  # a stream past its limit still reads one
    assert seqs(run, 1, 2, 10**9) == [1, 2]  # and never more than the limit
    assert seqs(run, 7, 100, 10**9) == []
    assert next(iter(next_events(run.id, 2, 1, 0))).data == {"blob": "x" * 100_000}
