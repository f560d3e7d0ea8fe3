"""The admin's thread page shows what the thread is and was: its decoded state, what it
waits for (linked to the review items), its history as decoded values, its runs and
events, and "View on site"; a checkpoint's page decodes its stored parts. Read-only,
redacted, and a bounded number of queries however long the thread."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from beamweaver_core.admin import inspection
from beamweaver_core.checkpoint.postgres import PostgresCheckpointer
from beamweaver_core.models import Checkpoint, Run, Thread
from beamweaver_core.runtime import service
from beamweaver_core.runtime.execution import execute
from beamweaver_core.runtime.queue import claim_next_run
from reviews.models import ReviewItem

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz0123"


def _run(graph: str, payload: dict[str, Any], thread_id: str) -> Run:
    service.start_run(graph, payload, thread_id=thread_id)
    claim = claim_next_run("admin-test", 30)
    assert claim is not None
    execute(claim)
    return Run.objects.get(id=claim.run_id)


def _page(staff: Client, thread_id: str, **params: str) -> str:
    response = staff.get(f"/admin/beamweaver_core/thread/{thread_id}/change/", params)
    assert response.status_code == 200
    return response.content.decode()


def test_the_thread_page_shows_state_pending_interrupts_history_runs_and_the_site(
    staff: Client,
) -> None:
    run = _run("approval", {"amount": 5, "api_key": SECRET}, "admin-thread")
    item = ReviewItem.objects.get(thread_id="admin-thread")

    page = _page(staff, "admin-thread")

    state = re.search(r'<pre class="bw-json" id="bw-state-values">(.*?)</pre>', page, re.S)
    assert state is not None
    assert "&quot;amount&quot;: 5" in state.group(1)
    assert SECRET not in page and "[redacted]" in state.group(1)
    assert f'href="/admin/reviews/reviewitem/{item.pk}/change/"' in page
    assert f'href="/items/{item.pk}/"' in page
    assert item.interrupt_id in page
    history = re.findall(r'<tr class="bw-history-row">', page)
    assert len(history) == Checkpoint.objects.filter(thread_id="admin-thread", ns="").count()
    assert "<code>ask</code>" in page  # the node that wrote the latest checkpoint
    assert f"/admin/beamweaver_core/run/{run.pk}/change/" in page
    assert "interrupted" in page  # its run's status and its event
    assert 'href="/threads/admin-thread/"' in page and "View on site" in page
    assert "bw-history-older" not in page


def test_a_finished_thread_waits_for_nothing(staff: Client) -> None:
    _run("steps", {}, "admin-steps")

    page = _page(staff, "admin-steps")

    assert "Nothing is pending" in page
    assert "nothing (the run ended)" in page
    assert "&quot;log&quot;: [\n    0,\n    1," in page  # the list, not its appended deltas


class Statements:
    """Counts the statements of a request: Django's, and the checkpointer's (which run on
    their own server-side-binding cursors, that Django does not see)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.cursors = 0
        opened = PostgresCheckpointer._cursor

        def counted(checkpointer: PostgresCheckpointer) -> Any:
            self.cursors += 1
            return opened(checkpointer)

        monkeypatch.setattr(PostgresCheckpointer, "_cursor", counted)

    def of(self, staff: Client, thread_id: str) -> tuple[int, str]:
        self.cursors = 0
        with CaptureQueriesContext(connection) as django:
            page = _page(staff, thread_id)
        return len(django) + self.cursors, page


def test_the_history_is_paged_and_the_page_costs_the_same_queries_however_long(
    staff: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    statements = Statements(monkeypatch)
    _run("steps", {}, "admin-long")
    _page(staff, "admin-long")  # the content types, cached from then on
    short, _ = statements.of(staff, "admin-long")
    for _ in range(3):
        _run("steps", {}, "admin-long")
    total = Checkpoint.objects.filter(thread_id="admin-long", ns="").count()
    assert total > inspection.HISTORY_PAGE

    long, page = statements.of(staff, "admin-long")

    assert long == short
    assert len(re.findall(r'<tr class="bw-history-row">', page)) == inspection.HISTORY_PAGE
    older = re.search(r'id="bw-history-older" href="\?before=(\w+)"', page)
    assert older is not None
    rest = _page(staff, "admin-long", before=older.group(1))
    assert len(re.findall(r'<tr class="bw-history-row">', rest)) == (
        total - inspection.HISTORY_PAGE
    )
    first = inspection.history(Thread.objects.get(id="admin-long"), "", 3)
    second = inspection.history(Thread.objects.get(id="admin-long"), first.older, 3)
    assert [s.seq for s in first.steps + second.steps] == list(range(total, total - 6, -1))


def test_the_checkpoint_page_decodes_its_values(staff: Client) -> None:
    _run("steps", {}, "admin-cp")
    latest = Checkpoint.objects.filter(thread_id="admin-cp", ns="").order_by("-seq").first()
    assert latest is not None

    page = staff.get(f"/admin/beamweaver_core/checkpoint/{latest.pk}/change/").content.decode()

    assert "Values (decoded)" in page
    assert re.search(r"&quot;log&quot;: \[\s+0,\s+1,\s+2,\s+3,\s+4,\s+5\s+\]", page)


def test_the_thread_page_is_read_only(staff: Client) -> None:
    _run("approval", {"amount": 1}, "admin-ro")

    response = staff.post(
        "/admin/beamweaver_core/thread/admin-ro/change/", {"graph": "other", "status": "idle"}
    )

    assert response.status_code == 403
    assert Thread.objects.get(id="admin-ro").graph == "approval"
    assert 'name="_save"' not in _page(staff, "admin-ro")
