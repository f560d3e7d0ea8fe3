"""Review items follow the runtime: created on pause, cancelled when no longer pending."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from beamweaver_core.models import Run, Thread
from beamweaver_core.runtime import service
from beamweaver_core.types import Interrupt
from reviews import realtime
from reviews.models import AuditEvent, ReviewItem
from reviews.receivers import on_run_paused
from tests.reviews.conftest import pause, run_next
from tests.reviews.graphs import EMAIL_SCHEMA

pytestmark = pytest.mark.django_db


@pytest.fixture
def hints(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    sent: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(
        realtime, "group_send", lambda group, message: sent.append((group, message))
    )
    return sent


def test_a_tool_review_pause_becomes_one_pending_item_with_a_canonical_payload() -> None:
    item = pause(
        input={
            "calls": [{"name": "send_email", "args": {"to": "a@b.c", "subject": "s", "body": "b"}}]
        }
    )

    assert (item.kind, item.status, item.graph, item.node) == (
        "tool_review",
        "pending",
        "tool_review",
        "propose",
    )
    assert item.tool_names == ["send_email"]
    assert item.run == Run.objects.get(thread_id=item.thread_id)
    assert item.payload == {
        "action_requests": [
            {
                "name": "send_email",
                "args": {"to": "a@b.c", "subject": "s", "body": "b"},
                "description": "Run send_email as proposed?",
            }
        ],
        "review_configs": [
            {
                "action_name": "send_email",
                "allowed_decisions": ["approve", "edit", "reject", "respond"],
                "args_schema": EMAIL_SCHEMA,
            }
        ],
    }
    assert item.payload_json == json.dumps(item.payload, sort_keys=True, ensure_ascii=False)
    assert item.digest == hashlib.sha256(item.payload_json.encode()).hexdigest()
    assert AuditEvent.objects.get().action == "created"


def test_plain_interrupts_and_breakpoints_get_their_own_kinds() -> None:
    question = pause("approval", {"amount": 3})
    breakpoint = pause("checkpointed")

    assert (question.kind, question.payload, question.tool_names) == (
        "interrupt",
        {"amount": 3, "question": "Approve?"},
        [],
    )
    assert (breakpoint.kind, breakpoint.timing, breakpoint.payload) == (
        "breakpoint",
        "before",
        None,
    )


def test_items_are_created_once_per_interrupt() -> None:
    item = pause()
    interrupt = Interrupt(id=item.interrupt_id, value=item.payload, node=item.node)

    on_run_paused(Run, run=item.run, interrupts=(interrupt,))

    assert ReviewItem.objects.count() == 1
    assert AuditEvent.objects.filter(action="created").count() == 1


def test_a_changed_payload_updates_the_pending_item_and_its_digest(hints: list[Any]) -> None:
    item = pause()
    changed = {
        **item.payload,
        "action_requests": [{"name": "send_email", "args": {}, "description": ""}],
    }

    on_run_paused(
        Run,
        run=item.run,
        interrupts=(Interrupt(id=item.interrupt_id, value=changed, node="propose"),),
    )

    fresh = ReviewItem.objects.get(pk=item.pk)
    assert fresh.status == "pending"
    assert fresh.digest != item.digest
    assert AuditEvent.objects.filter(action="updated").count() == 1


def test_an_interrupt_that_is_no_longer_pending_is_superseded() -> None:
    first = pause("pair")
    left, right = ReviewItem.objects.filter(thread_id=first.thread_id).order_by("node")
    resume = service.resume_thread(first.thread_id, {left.interrupt_id: "L"})
    ReviewItem.objects.filter(pk=left.pk).update(status="decided")

    rerun = run_next()

    assert rerun.id == resume.id and rerun.status == "interrupted"
    right.refresh_from_db()
    assert (right.status, right.run_id) == ("pending", rerun.id)


def test_a_stale_pending_item_is_cancelled_when_the_run_pauses_elsewhere() -> None:
    item = pause()
    other = Interrupt(id="another", value="new question", node="propose")

    on_run_paused(Run, run=item.run, interrupts=(other,))

    item.refresh_from_db()
    assert (item.status, item.status_reason) == (
        "cancelled",
        "superseded: the run moved on without this answer",
    )
    assert ReviewItem.objects.get(interrupt_id="another").status == "pending"


def test_a_cancelled_run_cancels_its_threads_pending_items() -> None:
    item = pause()

    service.cancel_run(item.run_id)

    item.refresh_from_db()
    assert (item.status, item.status_reason) == ("cancelled", "the run was cancelled")
    assert Thread.objects.get(id=item.thread_id).status == "cancelled"
    assert AuditEvent.objects.filter(action="cancelled").count() == 1


def test_hints_are_sent_to_the_inbox_the_thread_and_the_item_after_commit(
    hints: list[Any], django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        item = pause()
    assert hints == []

    for callback in callbacks:
        callback()

    from beamweaver_core.runtime.groups import thread_group

    created = [(g, m) for g, m in hints if m["type"] == "review.created"]
    assert sorted(g for g, _ in created) == sorted(
        ["inbox", thread_group(item.thread_id), f"review.{item.pk}"]
    )
    assert {m["item_id"] for _, m in created} == {item.pk}


def test_the_requester_of_a_paused_start_run_is_who_started_it() -> None:
    from tests.reviews.conftest import make_reviewer

    alice = make_reviewer("alice")
    item = pause(thread_id="requested", user=alice)
    assert item.requested_by_id == alice.pk
