"""Durable runs in one process: queue, claim, execute, pause, resume, fence, sweep."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from prometheus_client import REGISTRY

from beamweaver_core.checkpoint import PostgresCheckpointer
from beamweaver_core.exceptions import StaleWriterError, ThreadBusyError
from beamweaver_core.models import Run, RunEvent, Thread
from beamweaver_core.runtime import registry, service
from beamweaver_core.runtime.execution import execute
from beamweaver_core.runtime.queue import (
    claim_next_run,
    claim_run,
    extend_lease,
    finish_run,
    sweep_expired_leases,
)
from beamweaver_core.runtime.signals import run_finished, run_paused
from beamweaver_core.runtime.worker import Worker, WorkerSettings
from tests.support.locks import held_meanwhile

pytestmark = pytest.mark.django_db(transaction=True)

LEASE = 30.0


def run_next() -> Run:
    claim = claim_next_run("test-worker", LEASE)
    assert claim is not None
    execute(claim)
    return Run.objects.get(id=claim.run_id)


def expire(run_id: Any) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE bw_run SET lease_expires_at = now() - interval '1 second' WHERE id = %s",
            [run_id],
        )


def state(thread_id: str, graph: str = "approval") -> Any:
    return registry.compiled_graph(graph, PostgresCheckpointer()).get_state(
        {"configurable": {"thread_id": thread_id}}
    )


def test_a_started_run_pauses_and_its_resume_completes() -> None:
    paused: list[Any] = []
    finished: list[Any] = []
    run_paused.connect(
        lambda sender, run, interrupts, **kw: paused.append((run.id, interrupts)),
        weak=False,
        dispatch_uid="t1",
    )
    run_finished.connect(
        lambda sender, run, **kw: finished.append(run.id), weak=False, dispatch_uid="t2"
    )
    try:
        started = service.start_run("approval", {"amount": 250}, thread_id="approve-1")
        assert (started.status, started.kind, started.input) == ("queued", "start", {"amount": 250})

        first = run_next()
        assert first.status == "interrupted"
        assert Thread.objects.get(id="approve-1").status == "interrupted"
        [(run_id, interrupts)] = paused
        assert run_id == first.id
        assert interrupts[0].value == {"question": "Approve?", "amount": 250}
        assert first.result == {"interrupts": [interrupts[0].to_dict()]}

        resumed = service.resume_thread("approve-1", {interrupts[0].id: True})
        assert (resumed.kind, resumed.input) == ("resume", {interrupts[0].id: True})
        second = run_next()
        assert second.status == "succeeded"
        assert finished == [second.id]
        assert Thread.objects.get(id="approve-1").status == "completed"
        assert state("approve-1").values == {"amount": 250, "approved": True, "done": True}
    finally:
        run_paused.disconnect(dispatch_uid="t1")
        run_finished.disconnect(dispatch_uid="t2")


def test_run_events_are_stored_with_the_run() -> None:
    service.start_run("approval", {"amount": 1}, thread_id="events-1")
    run = run_next()
    events = list(RunEvent.objects.filter(run=run).values_list("event", "node"))
    assert events == [
        ("run.started", ""),
        ("node.started", "ask"),
        ("node.finished", "ask"),
        ("run.interrupted", ""),
    ]


def test_a_failing_run_is_failed_with_a_redacted_error() -> None:
    service.start_run("explode", {}, thread_id="boom-1")
    run = run_next()
    assert run.status == "failed"
    assert "RuntimeError: the tool backend is down" in run.error
    assert "sk-test-0123456789abcdefghij" not in run.error
    assert Thread.objects.get(id="boom-1").status == "failed"


def test_start_run_refuses_unknown_graphs_and_bad_input() -> None:
    with pytest.raises(registry.UnknownGraphError, match="No graph named 'nope' is registered"):
        service.start_run("nope", {})
    with pytest.raises(ValueError, match="must be a JSON object"):
        service.start_run("approval", ["not", "a", "dict"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="NUL character"):
        service.start_run("approval", {"note": "a\x00b"})
    assert Run.objects.count() == 0


def test_answers_for_a_thread_join_its_queued_resume_run() -> None:
    service.start_run("pair", {}, thread_id="pair-1")
    run_next()
    pending = state("pair-1", "pair").interrupts
    first = service.resume_thread("pair-1", {pending[0].id: "L"})
    second = service.resume_thread("pair-1", {pending[1].id: "R"})
    assert first.id == second.id
    assert Run.objects.get(id=first.id).input == {pending[0].id: "L", pending[1].id: "R"}
    assert run_next().status == "succeeded"
    assert state("pair-1", "pair").values == {"answers": ["left:L", "right:R"]}


def test_a_second_queued_start_on_a_thread_is_refused() -> None:
    service.start_run("approval", {}, thread_id="busy-1")
    with pytest.raises(ThreadBusyError, match="already has a queued run"):
        service.start_run("approval", {}, thread_id="busy-1")


def test_a_thread_with_a_running_run_is_not_claimed_again() -> None:
    service.start_run("pair", {}, thread_id="one-writer")
    claim = claim_next_run("w1", LEASE)
    assert claim is not None
    service.resume_thread("one-writer", {"0" * 32: "x"})  # queued behind the running run
    assert claim_next_run("w2", LEASE) is None
    execute(claim)
    assert claim_next_run("w2", LEASE) is not None


def test_the_claim_marks_the_thread_running_in_the_same_statement() -> None:
    service.start_run("approval", {}, thread_id="claim-marks")
    assert Thread.objects.get(id="claim-marks").status == Thread.Status.IDLE
    assert claim_next_run("w1", LEASE) is not None
    assert Thread.objects.get(id="claim-marks").status == Thread.Status.RUNNING


def test_a_claim_skips_a_run_whose_thread_a_transaction_holds_instead_of_waiting() -> None:
    """A resume being queued holds the thread and then wants its queued run; a claim that
    held the run and waited for the thread would deadlock with it. The claim skips the
    locked thread and takes the run once the lock is gone."""
    from django.db import connections, transaction

    service.start_run("approval", {}, thread_id="claim-locked")
    locked, release = threading.Event(), threading.Event()

    def hold_thread() -> None:
        with transaction.atomic():
            list(Thread.objects.select_for_update().filter(id="claim-locked"))
            locked.set()
            release.wait(10)
        connections.close_all()

    holder = threading.Thread(target=hold_thread)
    holder.start()
    try:
        assert locked.wait(10)
        started = time.monotonic()
        assert claim_next_run("w1", LEASE) is None
        assert time.monotonic() - started < 2.0
    finally:
        release.set()
        holder.join(10)
    claim = claim_next_run("w1", LEASE)
    assert claim is not None and claim.thread_id == "claim-locked"


def test_a_row_referencing_a_queued_run_being_written_does_not_hide_it_from_a_claim() -> None:
    """A write that only refers to the run or its thread (a protocol record, a review
    item's resume run: a foreign key, whose check locks the run's row `FOR KEY SHARE`)
    committing while a woken worker claims must not make the claim skip the run until the
    next poll."""
    from django.db import connections, transaction

    from beamweaver_core.protocol.models import ProtocolRun

    run = service.start_run("approval", {}, thread_id="claim-key-share")
    written, release = threading.Event(), threading.Event()

    def refer_to_the_run() -> None:
        with transaction.atomic():
            # Django's foreign keys are checked (and the run's row locked) at COMMIT:
            # checked at once here, the lock is held for as long as the test needs.
            with connection.cursor() as cursor:
                cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            ProtocolRun.objects.create(run_id=run.id, assistant_id="approval")
            written.set()
            release.wait(10)
        connections.close_all()

    writer = threading.Thread(target=refer_to_the_run)
    writer.start()
    try:
        assert written.wait(10)
        claim = claim_next_run("w1", LEASE)
    finally:
        release.set()
        writer.join(10)
    assert claim is not None and claim.run_id == run.id


def test_a_runs_outcome_marks_its_thread_in_the_same_statement_locking_the_run_first() -> None:
    """The outcome and the thread's status are one statement, which takes the run's lock
    before the thread's (`runtime.locks`): while a transaction holds the thread, the
    outcome waits for it holding the run, never the other way round."""
    from django.db import transaction

    service.start_run("approval", {}, thread_id="outcome-order")
    claim = claim_next_run("w1", LEASE)
    assert claim is not None
    run_free_meanwhile: list[bool] = []

    def holding_the_thread(held: Callable[[], None]) -> None:
        with transaction.atomic():
            Thread.objects.select_for_update().get(id="outcome-order")
            held()  # until the outcome waits for the thread
            free = Run.objects.select_for_update(skip_locked=True).filter(id=claim.run_id)
            run_free_meanwhile.append(free.exists())

    with (
        held_meanwhile(holding_the_thread, until_waiting="%WITH finished AS%"),
        transaction.atomic(),
    ):
        finished = finish_run(claim, Run.Status.FAILED, error="simulated")

    assert run_free_meanwhile == [False]
    assert finished is not None and finished.status == Run.Status.FAILED
    assert Thread.objects.get(id="outcome-order").status == Thread.Status.FAILED


def test_a_thread_without_a_graph_takes_the_run_s_and_keeps_it() -> None:
    Thread.objects.create(id="graphless")
    service.start_run("approval", {}, thread_id="graphless", metadata={"from": "test"})
    assert Thread.objects.get(id="graphless").graph == "approval"
    service.start_run("approval", {}, thread_id="with-meta", metadata={"team": "ops"})
    assert Thread.objects.get(id="with-meta").metadata == {"team": "ops"}
    run_next()
    with pytest.raises(ValueError, match="belongs to graph 'approval', not 'pair'"):
        service.start_run("pair", {}, thread_id="graphless")
    assert Run.objects.filter(thread_id="graphless").count() == 1


def test_a_start_on_an_existing_thread_adds_the_metadata_keys_it_lacks_and_keeps_its_own() -> None:
    Thread.objects.create(id="known", graph="approval", metadata={"team": "ops"})
    service.start_run(
        "approval", {}, thread_id="known", metadata={"team": "sales", "graph_id": "approval"}
    )
    assert Thread.objects.get(id="known").metadata == {"team": "ops", "graph_id": "approval"}


def test_two_workers_racing_claim_each_run_once() -> None:
    rounds = 40
    for i in range(rounds):
        service.start_run("approval", {}, thread_id=f"race-{i}")
    claims: list[list[Any]] = [[], []]
    barrier = threading.Barrier(2)

    def racer(index: int) -> None:
        from django.db import connections

        try:
            for _ in range(rounds):
                barrier.wait()
                claim = claim_next_run(f"racer-{index}", LEASE)
                if claim is not None:
                    claims[index].append(claim.run_id)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=racer, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    taken = claims[0] + claims[1]
    assert len(taken) == rounds == len(set(taken))


def test_an_expired_lease_is_swept_and_the_old_owner_is_fenced_off() -> None:
    service.start_run("approval", {}, thread_id="zombie-1")
    old = claim_next_run("old-worker", LEASE)
    assert old is not None
    expire(old.run_id)

    requeued, failed = sweep_expired_leases(max_attempts=5)
    new = claim_next_run("new-worker", LEASE)

    assert (requeued, failed) == ([old.run_id], [])
    assert new is not None and new.run_id == old.run_id and new.token == old.token + 1
    assert not extend_lease(old, LEASE)
    assert not finish_run(old, "succeeded")
    stale = registry.compiled_graph(
        "approval", PostgresCheckpointer().fenced(old.run_id, old.token)
    )
    with pytest.raises(StaleWriterError):
        stale.invoke({}, {"configurable": {"thread_id": "zombie-1"}})
    assert execute(old) == "lost"
    assert execute(new) == "interrupted"


def test_a_run_out_of_attempts_fails_instead_of_looping() -> None:
    service.start_run("approval", {}, thread_id="doomed")
    for _ in range(3):
        claim = claim_next_run("w", LEASE)
        assert claim is not None
        expire(claim.run_id)
        sweep_expired_leases(max_attempts=3)
    run = Run.objects.get(thread_id="doomed")
    assert run.status == "failed"
    assert "lost its worker 3 times" in run.error


def test_a_retried_start_run_continues_instead_of_restarting() -> None:
    service.start_run("approval", {"amount": 9}, thread_id="retry-1")
    first = claim_next_run("w1", LEASE)
    assert first is not None
    graph = registry.compiled_graph(
        "approval", PostgresCheckpointer().fenced(first.run_id, first.token)
    )
    paused = graph.invoke(
        {"amount": 9}, {"configurable": {"thread_id": "retry-1"}, "run_id": str(first.run_id)}
    )
    expire(first.run_id)  # the worker died after pausing but before recording it
    sweep_expired_leases(max_attempts=5)
    retry = claim_next_run("w2", LEASE)
    assert retry is not None and retry.attempts == 2

    assert execute(retry) == "interrupted"
    history = list(
        registry.compiled_graph("approval", PostgresCheckpointer()).get_state_history(
            {"configurable": {"thread_id": "retry-1"}}
        )
    )
    assert [s.metadata["source"] for s in history] == ["input"]  # not started a second time
    assert state("retry-1").interrupts == paused.interrupts
    assert Run.objects.get(id=retry.run_id).result == {"interrupts": [paused.interrupt.to_dict()]}


def test_cancel_stops_a_running_run_at_its_next_write() -> None:
    service.start_run("approval", {}, thread_id="cancel-1")
    claim = claim_next_run("w", LEASE)
    assert claim is not None
    service.cancel_run(claim.run_id)
    assert execute(claim) == "lost"
    assert Run.objects.get(id=claim.run_id).status == "cancelled"
    assert Thread.objects.get(id="cancel-1").status == "cancelled"
    assert state("cancel-1").values == {}


def test_a_failed_run_can_be_requeued_and_finishes() -> None:
    service.start_run("approval", {}, thread_id="requeue-1")
    claim = claim_run(Run.objects.get(thread_id="requeue-1").id, "w", LEASE)
    assert claim is not None
    finish_run(claim, "failed", error="simulated")
    with pytest.raises(service.RunStateError):
        service.cancel_run(claim.run_id)
    service.requeue_run(claim.run_id)
    assert run_next().status == "interrupted"


def test_a_failed_run_is_not_requeued_next_to_a_queued_one() -> None:
    service.start_run("approval", {}, thread_id="requeue-2")
    claim = claim_run(Run.objects.get(thread_id="requeue-2").id, "w", LEASE)
    assert claim is not None
    finish_run(claim, "failed", error="simulated")
    service.start_run("approval", {}, thread_id="requeue-2")
    with pytest.raises(ThreadBusyError, match="already has a queued run") as info:
        service.requeue_run(claim.run_id)
    assert "instead of re-queueing run" in str(info.value)
    assert Run.objects.get(id=claim.run_id).status == "failed"


def test_a_worker_picks_up_queued_runs_by_itself() -> None:
    worker = Worker(
        threads=1,
        conf=WorkerSettings(
            lease_seconds=10, heartbeat_seconds=1, poll_seconds=0.2, max_attempts=3
        ),
    ).start()
    try:
        service.start_run("approval", {}, thread_id="auto-1")
        deadline = time.monotonic() + 20
        while (
            time.monotonic() < deadline
            and Run.objects.get(thread_id="auto-1").status != "interrupted"
        ):
            time.sleep(0.05)
        assert Run.objects.get(thread_id="auto-1").status == "interrupted"
    finally:
        worker.stop(5)


def _claims(outcome: str) -> float:
    return REGISTRY.get_sample_value("beamweaver_run_claims_total", {"outcome": outcome}) or 0.0


def test_one_queued_run_wakes_one_idle_thread_and_stopping_wakes_them_all() -> None:
    """Four idle threads and one queued run: one thread claims it, and claims once more
    after it (the queue is empty); the other three sleep on. (A `threading.Event` woke
    all four, and each made a claim for nothing.) Stopping wakes every thread at once,
    long before the 30-second poll."""
    baseline = _claims("empty")
    worker = Worker(
        threads=4,
        conf=WorkerSettings(lease_seconds=10, heartbeat_seconds=1, poll_seconds=30, max_attempts=3),
    ).start()
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and _claims("empty") < baseline + 4:
            time.sleep(0.02)
        assert _claims("empty") == baseline + 4  # each thread found the queue empty once
        time.sleep(0.2)  # and waits now
        empty, claimed = _claims("empty"), _claims("claimed")

        service.start_run("approval", {}, thread_id="one-wakes")
        while (
            time.monotonic() < deadline
            and Run.objects.get(thread_id="one-wakes").status != "interrupted"
        ):
            time.sleep(0.02)
        assert Run.objects.get(thread_id="one-wakes").status == "interrupted"
        while time.monotonic() < deadline and _claims("empty") < empty + 1:
            time.sleep(0.02)  # the drain after the run
        time.sleep(0.3)  # time for any claim more to show
        assert _claims("claimed") == claimed + 1
        assert _claims("empty") == empty + 1
    finally:
        started = time.monotonic()
        worker.stop(5)
    assert not worker.running and time.monotonic() - started < 5


def test_a_paused_run_whose_decision_is_queued_cannot_be_cancelled() -> None:
    service.start_run("approval", {}, thread_id="cancel-race")
    paused = run_next()
    pending = state("cancel-race").interrupts
    resume = service.resume_thread("cancel-race", {pending[0].id: True})

    with pytest.raises(service.RunStateError, match="its resume is queued"):
        service.cancel_run(paused.id)
    with pytest.raises(service.RunStateError, match="its resume is queued"):
        service.cancel_run(resume.id)
    assert run_next().status == "succeeded"


def race_cancel_and_decide(thread_id: str) -> dict[str, str]:
    """Pause a run, then cancel it and answer it at the same instant."""
    service.start_run("approval", {}, thread_id=thread_id)
    paused = run_next()
    pending = state(thread_id).interrupts
    barrier = threading.Barrier(2)
    outcome: dict[str, str] = {}

    def attempt(name: str, action: Any) -> None:
        from django.db import connections

        try:
            barrier.wait()
            action()
            outcome[name] = "ok"
        except (service.RunStateError, ThreadBusyError):
            outcome[name] = "refused"
        finally:
            connections.close_all()

    threads = [
        threading.Thread(target=attempt, args=("cancel", lambda: service.cancel_run(paused.id))),
        threading.Thread(
            target=attempt,
            args=("decide", lambda: service.resume_thread(thread_id, {pending[0].id: True})),
        ),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    outcome["cancelled"] = Run.objects.get(id=paused.id).status
    return outcome


def test_cancelling_and_deciding_at_once_never_both_happen() -> None:
    """Cancel racing an accepted decision (reliability C1.7c): exactly one of them wins."""
    for round_ in range(10):
        thread_id = f"race-cancel-{round_}"
        outcome = race_cancel_and_decide(thread_id)
        resumes = Run.objects.filter(thread_id=thread_id, kind="resume", status="queued").count()
        cancelled = outcome["cancelled"] == "cancelled"
        assert cancelled != bool(resumes), outcome
        assert {outcome["cancel"], outcome["decide"]} == {"ok", "refused"}, outcome
        while (leftover := claim_next_run("drain", LEASE)) is not None:
            execute(leftover)


def test_the_one_queued_run_constraint_is_reported_as_a_busy_thread() -> None:
    """Should the constraint refuse a queued run after all (an operator re-queued one
    meanwhile), the caller gets `ThreadBusyError`, not a raw `IntegrityError`."""
    from django.db import transaction

    from beamweaver_core.runtime.service import _busy

    service.start_run("approval", {}, thread_id="raced")
    with (
        pytest.raises(ThreadBusyError, match="already has a queued run"),
        _busy("raced"),
        transaction.atomic(),
    ):
        Run.objects.create(thread_id="raced", graph="approval", kind=Run.Kind.START)
    assert Run.objects.filter(thread_id="raced").count() == 1
