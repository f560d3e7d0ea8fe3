"""A run's context: kept with the run, handed to the graph as `runtime.context` by the
worker, carried on by the thread's resumes unless a new one is given."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.contrib.auth.models import User

from beamweaver_core.exceptions import ThreadBusyError
from beamweaver_core.models import Run
from beamweaver_core.runtime import service
from beamweaver_core.runtime.context import MAX_CONTEXT_BYTES
from beamweaver_core.runtime.execution import execute
from beamweaver_core.runtime.queue import claim_next_run, sweep_expired_leases
from beamweaver_core.runtime.worker import Worker, WorkerSettings
from tests.runtime.test_runs import expire, run_next, state

pytestmark = pytest.mark.django_db(transaction=True)

LEASE = 30.0


def question(thread_id: str) -> Any:
    """The value of the thread's pending interrupt."""
    [pending] = state(thread_id, "contextual").interrupts
    return pending


def test_the_worker_hands_the_run_s_context_to_the_graph() -> None:
    run = service.start_run(
        "contextual", {}, thread_id="ctx-1", context={"tenant": "acme", "strict": True}
    )

    assert Run.objects.get(id=run.id).context == {"tenant": "acme", "strict": True}
    assert run_next().status == "interrupted"
    assert question("ctx-1").value == {
        "question": "Go on?",
        "context": {"tenant": "acme", "strict": True},
    }


def test_a_run_without_a_context_or_a_user_has_none() -> None:
    run = service.start_run("contextual", {}, thread_id="ctx-none")

    assert run.context is None
    run_next()
    assert question("ctx-none").value["context"] is None


def test_a_run_started_for_a_user_names_them_and_cannot_be_made_to_name_another() -> None:
    alice = User.objects.create_user("alice")

    run = service.start_run(
        "contextual",
        {},
        thread_id="ctx-user",
        user=alice,
        context={"user_id": 999, "username": "mallory", "team": "ops"},
    )

    assert run.context == {"user_id": alice.pk, "username": "alice", "team": "ops"}
    assert run.created_by == alice


def test_a_resume_carries_on_the_context_of_the_run_it_continues() -> None:
    service.start_run("contextual", {}, thread_id="ctx-reuse", context={"tenant": "acme"})
    run_next()

    resume = service.resume_thread("ctx-reuse", {question("ctx-reuse").id: "yes"})

    assert resume.context == {"tenant": "acme"}
    assert run_next().status == "succeeded"
    values = state("ctx-reuse", "contextual").values
    assert (values["asked_in"], values["finished_in"]) == ({"tenant": "acme"}, {"tenant": "acme"})


def test_a_resume_with_a_new_context_uses_it_and_later_resumes_keep_it() -> None:
    service.start_run("contextual", {}, thread_id="ctx-new", context={"tenant": "acme"})
    run_next()

    resume = service.resume_thread(
        "ctx-new", {question("ctx-new").id: "yes"}, context={"tenant": "globex"}
    )

    assert resume.context == {"tenant": "globex"}
    assert run_next().status == "succeeded"
    assert state("ctx-new", "contextual").values["finished_in"] == {"tenant": "globex"}


def test_a_decider_is_not_put_in_the_context_of_the_resume() -> None:
    alice, bob = User.objects.create_user("alice"), User.objects.create_user("bob")
    service.start_run("contextual", {}, thread_id="ctx-decider", user=alice)
    run_next()

    resume = service.resume_thread("ctx-decider", {question("ctx-decider").id: "ok"}, user=bob)

    assert resume.context == {"user_id": alice.pk, "username": "alice"}
    assert resume.created_by == bob


def test_answers_joining_a_queued_resume_keep_its_one_context() -> None:
    """A queued resume that several answers share has one context: answers without one
    (or with the same one) join it; a different one is refused, and nothing changes."""
    service.start_run("pair", {}, thread_id="ctx-pair", context={"tenant": "acme"})
    run_next()
    left, right = state("ctx-pair", "pair").interrupts

    first = service.resume_thread("ctx-pair", {left.id: "L"})
    with pytest.raises(ThreadBusyError, match="already has a queued resume with another context"):
        service.resume_thread("ctx-pair", {right.id: "R"}, context={"tenant": "globex"})
    same = service.resume_thread("ctx-pair", {right.id: "R"}, context={"tenant": "acme"})

    assert same.id == first.id
    queued = Run.objects.get(id=first.id)
    assert (queued.context, queued.input) == ({"tenant": "acme"}, {left.id: "L", right.id: "R"})
    assert Run.objects.filter(thread_id="ctx-pair").count() == 2


def test_a_retried_resume_gets_the_run_s_context_again() -> None:
    service.start_run("contextual", {}, thread_id="ctx-retry", context={"tenant": "acme"})
    run_next()
    service.resume_thread("ctx-retry", {question("ctx-retry").id: "yes"})
    lost = claim_next_run("dead-worker", LEASE)  # its worker dies before doing anything
    assert lost is not None
    expire(lost.run_id)
    sweep_expired_leases(max_attempts=5)

    retry = claim_next_run("w2", LEASE)
    assert retry is not None and retry.attempts == 2 and retry.context == {"tenant": "acme"}
    assert execute(retry) == "succeeded"
    assert state("ctx-retry", "contextual").values["finished_in"] == {"tenant": "acme"}


def test_a_worker_pool_runs_a_start_and_its_resume_in_the_run_s_context() -> None:
    worker = Worker(
        threads=1,
        conf=WorkerSettings(
            lease_seconds=10, heartbeat_seconds=1, poll_seconds=0.2, max_attempts=3
        ),
    ).start()

    def wait_for(status: str) -> Run:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            latest = Run.objects.filter(thread_id="ctx-pool").order_by("-created_at").first()
            if latest is not None and latest.status == status:
                return latest
            time.sleep(0.05)
        raise AssertionError(f"no run of ctx-pool became {status}")

    try:
        service.start_run("contextual", {}, thread_id="ctx-pool", context={"tenant": "acme"})
        wait_for("interrupted")
        service.resume_thread("ctx-pool", {question("ctx-pool").id: "yes"})
        wait_for("succeeded")
    finally:
        worker.stop(5)
    values = state("ctx-pool", "contextual").values
    assert (values["asked_in"], values["finished_in"]) == ({"tenant": "acme"}, {"tenant": "acme"})


@pytest.mark.parametrize(
    ("context", "message"),
    [
        (["not", "an", "object"], "must be a JSON object \\(a dict\\), got list"),
        ({"when": time}, "context.when is a module"),
        ({"pair": (1, 2)}, "context.pair is a tuple"),
        ({"ratio": float("nan")}, r"context\.ratio.*nan"),
        ({"__bw__": "message"}, "reserved key '__bw__'"),
        (
            {"deep": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]},
            "nested more than 32",
        ),
        ({"blob": "x" * MAX_CONTEXT_BYTES}, "at most 65536 are allowed"),
    ],
)
def test_a_context_that_is_not_a_small_json_object_is_refused(context: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        service.start_run("contextual", {}, thread_id="ctx-bad", context=context)
    service.start_run("contextual", {}, thread_id="ctx-bad-resume", context={"ok": 1})
    run_next()
    with pytest.raises(ValueError, match=message):
        service.resume_thread("ctx-bad-resume", {question("ctx-bad-resume").id: 1}, context=context)
    assert list(Run.objects.values_list("thread_id", flat=True)) == ["ctx-bad-resume"]
