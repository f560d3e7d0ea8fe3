"""Runs beyond their input: options (config, breakpoints, forks, goto/update), runs that
wait their turn on a busy thread, rollback, and a retried run's event numbering."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from beamweaver_core.checkpoint import PostgresCheckpointer
from beamweaver_core.exceptions import ThreadBusyError
from beamweaver_core.models import Run, RunEvent
from beamweaver_core.runtime import registry, service
from beamweaver_core.runtime.execution import execute
from beamweaver_core.runtime.queue import claim_next_run, promote_stalled
from beamweaver_core.runtime.rollback import rollback_run

pytestmark = pytest.mark.django_db(transaction=True)


def run_next() -> Run:
    claim = claim_next_run("test-worker", 30.0)
    assert claim is not None, "no queued run"
    execute(claim)
    return Run.objects.get(id=claim.run_id)


def snapshot(thread_id: str, graph: str = "steps") -> Any:
    return registry.compiled_graph(graph, PostgresCheckpointer()).get_state(
        {"configurable": {"thread_id": thread_id}}
    )


def test_options_are_checked_against_the_graph_before_anything_is_queued() -> None:
    with pytest.raises(ValueError, match=r"'interrupt_before' names node\(s\) \['nope'\]"):
        service.start_run(
            "steps", {"log": []}, thread_id="opt-1", options={"interrupt_before": ["nope"]}
        )
    with pytest.raises(ValueError, match=r"Unknown run option\(s\) \['bogus'\]"):
        service.start_run("steps", {"log": []}, thread_id="opt-1", options={"bogus": 1})
    with pytest.raises(ValueError, match="recursion_limit"):
        service.start_run(
            "steps", {}, thread_id="opt-1", options={"config": {"recursion_limit": 0}}
        )
    assert not Run.objects.exists()


def test_a_run_breakpoint_pauses_before_the_node_and_the_recursion_limit_applies() -> None:
    run = service.start_run(
        "steps", {"log": []}, thread_id="opt-2", options={"interrupt_before": ["s2"]}
    )
    assert run_next().status == "interrupted"
    state = snapshot("opt-2")
    assert state.next == ("s2",) and state.values["log"] == [0, 1]
    assert state.interrupts == ()  # the breakpoint was this run's, not the graph's

    service.start_run(
        "steps", {"log": []}, thread_id="opt-3", options={"config": {"recursion_limit": 2}}
    )
    failed = run_next()
    assert failed.status == "failed" and "Recursion limit of 2" in failed.error
    assert run.options == {"interrupt_before": ["s2"]}


def test_a_run_without_input_continues_with_goto_and_update() -> None:
    service.start_run("steps", {"log": []}, thread_id="opt-4", options={"interrupt_before": ["s1"]})
    run_next()
    service.start_run(
        "steps", None, thread_id="opt-4", options={"goto": "s4", "update": {"log": [9]}}
    )
    assert run_next().status == "succeeded"
    # s1 was pending; goto adds s4 to it, and the update is applied first.
    assert snapshot("opt-4").values["log"][:2] == [0, 9]


def test_a_goto_send_is_checked_as_a_node_name_is() -> None:
    """A send (`{"node", "input"}`) names a node of the graph and gives its input, and
    has nothing else."""
    with pytest.raises(ValueError, match=r"'goto' names node\(s\) \['nope'\]"):
        service.start_run(
            "steps", None, thread_id="opt-16", options={"goto": {"node": "nope", "input": None}}
        )
    shapes = [
        {"node": "s1"},
        {"node": "s1", "input": [1], "extra": 1},
        {"input": {}},
        ["s1", 3],
    ]
    for goto in shapes:
        with pytest.raises(ValueError, match=r"'goto' must be a node name, a send"):
            service.start_run("steps", None, thread_id="opt-16", options={"goto": goto})
    assert not Run.objects.exists()


def test_a_run_forks_from_an_earlier_checkpoint() -> None:
    service.start_run("steps", {"log": []}, thread_id="opt-5")
    run_next()
    graph = registry.compiled_graph("steps", PostgresCheckpointer())
    history = list(graph.get_state_history({"configurable": {"thread_id": "opt-5"}}))
    early = next(s for s in history if s.values.get("log") == [0, 1])
    service.start_run(
        "steps",
        {"log": [100]},
        thread_id="opt-5",
        options={"checkpoint_id": early.config["configurable"]["checkpoint_id"]},
    )
    assert run_next().status == "succeeded"
    assert snapshot("opt-5").values["log"][:3] == [0, 1, 100]


def test_enqueued_runs_wait_their_turn_and_run_in_order() -> None:
    first = service.start_run("steps", {"log": []}, thread_id="opt-6")
    with pytest.raises(ThreadBusyError):
        service.start_run("steps", {"log": [10]}, thread_id="opt-6")
    second = service.start_run("steps", {"log": [10]}, thread_id="opt-6", enqueue=True)
    third = service.start_run("steps", {"log": [20]}, thread_id="opt-6", enqueue=True)
    assert [second.status, third.status] == ["waiting", "waiting"]

    assert run_next().id == first.id
    second.refresh_from_db()
    third.refresh_from_db()
    assert (second.status, third.status) == ("queued", "waiting")
    assert run_next().id == second.id
    assert run_next().id == third.id
    assert claim_next_run("test-worker", 30.0) is None


def test_cancelling_a_waiting_run_leaves_its_thread_alone_and_the_queue_moves_on() -> None:
    first = service.start_run("steps", {"log": []}, thread_id="opt-7")
    waiting = service.start_run("steps", {"log": [1]}, thread_id="opt-7", enqueue=True)
    later = service.start_run("steps", {"log": [2]}, thread_id="opt-7", enqueue=True)
    service.cancel_run(waiting.id)
    assert Run.objects.get(id=first.id).status == "queued"
    service.cancel_run(first.id)  # frees the queued slot: the next waiting run is queued
    assert Run.objects.get(id=later.id).status == "queued"


def test_a_waiting_run_whose_predecessor_never_recorded_its_end_is_promoted_by_the_sweep() -> None:
    first = service.start_run("steps", {"log": []}, thread_id="opt-8")
    waiting = service.start_run("steps", {"log": [1]}, thread_id="opt-8", enqueue=True)
    Run.objects.filter(id=first.id).update(status="failed")  # as the lease sweeper fails it
    assert promote_stalled() == [waiting.id]
    assert Run.objects.get(id=waiting.id).status == "queued"


def test_rollback_cancels_the_run_and_restores_the_state_before_it() -> None:
    service.start_run("steps", {"log": []}, thread_id="opt-9")
    run_next()
    before = snapshot("opt-9").values
    second = service.start_run(
        "steps", {"log": [7]}, thread_id="opt-9", options={"interrupt_before": ["s3"]}
    )
    run_next()
    assert snapshot("opt-9").values != before
    rolled = rollback_run(second.id)
    assert rolled.status == "cancelled"
    state = snapshot("opt-9")
    assert state.values == before and state.next == () and state.interrupts == ()


def test_a_retried_run_numbers_its_events_after_those_already_stored() -> None:
    """Attempt 1 stored events and died before its first checkpoint; attempt 2 starts
    over, and its events follow attempt 1's instead of colliding with them (a stream
    resuming from attempt 1's last event must see all of attempt 2's)."""
    run = service.start_run("steps", {"log": []}, thread_id="opt-10")
    with connection.cursor() as cursor:
        for seq in (1, 2, 3):
            cursor.execute(
                "INSERT INTO bw_run_event (run_id, thread_id, seq, event, node, ns, data, "
                "created_at) VALUES (%s, %s, %s, 'node.started', 's0', '', '{}', now())",
                [run.id, "opt-10", seq],
            )
        cursor.execute("UPDATE bw_run SET attempts = 1 WHERE id = %s", [run.id])
    retry = claim_next_run("w2", 30.0)
    assert retry is not None and retry.attempts == 2
    execute(retry)
    events = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", "event"))
    assert [e for e in events if e[0] <= 3] == [
        (1, "node.started"),
        (2, "node.started"),
        (3, "node.started"),
    ]
    later = [e for e in events if e[0] > 3]
    assert later[0] == (4, "run.started") and later[-1][1] == "run.completed"
    assert [seq for seq, _ in later] == list(range(4, 4 + len(later)))


def test_a_resume_answers_the_breakpoint_its_run_paused_at() -> None:
    """The decision that continues a run's own breakpoint resumes with that run's
    breakpoints, so the breakpoint is still pending (and passed) when the resume runs."""
    service.start_run(
        "steps", {"log": []}, thread_id="opt-11", options={"interrupt_before": ["s2"]}
    )
    paused = run_next()
    assert paused.status == "interrupted"
    (pending,) = paused.result["interrupts"]
    resume = service.resume_thread("opt-11", {pending["id"]: None})
    assert resume.options == {"interrupt_before": ["s2"]}
    assert run_next().status == "succeeded"
    assert snapshot("opt-11").values["log"] == [0, 1, 2, 3, 4, 5]


def _approval_paused(thread_id: str) -> str:
    """`approval` started on `thread_id` and paused at its question; the question's id."""
    service.start_run("approval", {"amount": 3}, thread_id=thread_id)
    paused = run_next()
    assert paused.status == "interrupted"
    return str(paused.result["interrupts"][0]["id"])


def test_a_resume_applies_the_goto_and_update_added_to_it() -> None:
    question = _approval_paused("opt-12")
    resume = service.resume_thread("opt-12", {question: "yes"})

    service.add_command(resume, update={"amount": 7})

    resume.refresh_from_db()
    assert resume.options == {"update": {"amount": 7}}
    assert run_next().status == "succeeded"
    assert snapshot("opt-12", "approval").values == {"amount": 7, "approved": "yes", "done": True}


def test_a_queued_resume_takes_one_command() -> None:
    questions = {thread: _approval_paused(thread) for thread in ("opt-13", "opt-15")}
    resume = service.resume_thread("opt-13", {questions["opt-13"]: "yes"})
    service.add_command(resume, update={"amount": 7})
    other = service.resume_thread("opt-15", {questions["opt-15"]: "yes"})

    with pytest.raises(ThreadBusyError, match="already applies a goto or an update"):
        service.add_command(resume, goto="finish")
    with pytest.raises(ValueError, match=r"'goto' names node\(s\) \['nope'\]"):
        service.add_command(other, goto=["nope"])
    other.refresh_from_db()
    assert other.options is None


def test_a_retried_resume_that_wrote_nothing_still_applies_its_command() -> None:
    """Attempt 1 died before it wrote a checkpoint: attempt 2 answers the question and
    applies the run's update, which went nowhere yet."""
    question = _approval_paused("opt-14")
    resume = service.resume_thread("opt-14", {question: "yes"})
    service.add_command(resume, update={"amount": 8})
    Run.objects.filter(id=resume.id).update(attempts=1)

    retry = claim_next_run("w2", 30.0)
    assert retry is not None and retry.attempts == 2
    execute(retry)

    assert snapshot("opt-14", "approval").values == {"amount": 8, "approved": "yes", "done": True}
