"""A Hypothesis state machine over the whole decision loop (reliability.md case 48).

Rules: create a run; work (sweep expired leases, execute what is queued) with a worker
crash (a claimed run whose lease expires without it running) or a crash after a tool's
side effect (before its result is recorded); decide an item validly (approve, reject),
invalidly, with a stale interrupt id, or by replaying an earlier request; cancel; expire
an item at its deadline (the real sweep); answer an "outcome unknown" question as the
operator who knows what happened. After every step:

- S1: at most one decision per interrupt, and none on an item that ended otherwise;
- one resume per decision: no interrupt's answer is queued in two resume runs;
- S4: no tool action took effect twice, except an at-least-once tool re-run after a crash
  that hit it mid-call (it is re-run with the same idempotency key, which is what the
  service dedupes on); an at-most-once tool never twice, ever;
- S3: no checkpoint has two children on a thread's main line.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models.functions import Now
from django.utils import timezone
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from beamweaver_core.agent.ledger import OUTCOME_UNKNOWN
from beamweaver_core.models import Run, ToolExecution
from beamweaver_core.runtime import service
from beamweaver_core.runtime.execution import execute
from beamweaver_core.runtime.queue import claim_next_run, claim_run, sweep_expired_leases
from bench.hostile import effects
from bench.hostile.agents import agent_input
from reviews import deadlines
from reviews.models import Decision, ReviewItem
from reviews.services import DecisionRequest, decide
from tests.reliability.support import forked_checkpoints, run_queued
from tests.reviews.conftest import make_reviewer

CALLS = {
    "email": {"name": "send_email", "args": {"to": "a@example.com", "subject": "s", "body": "b"}},
    "wire": {"name": "wire_funds", "args": {"account": "ACC-1", "amount": 10}},
}
PICK = st.integers(min_value=0, max_value=10**6)
SEEN: Counter[str] = Counter()
LEASE = 3600.0
"""Leases end only when a rule expires them: a lease that ran out while a loaded machine
executed a step would fence the run's writes and make the model disagree with the product."""


def _pending(pick: int, *, unknown_outcome: bool) -> ReviewItem | None:
    items = [
        item
        for item in ReviewItem.objects.filter(status="pending").order_by("id")
        if (item.payload.get("kind") == OUTCOME_UNKNOWN) == unknown_outcome
    ]
    return items[pick % len(items)] if items else None


def _a_review_waits(machine: object) -> bool:
    return _pending(0, unknown_outcome=False) is not None


def _a_question_waits(machine: object) -> bool:
    return _pending(0, unknown_outcome=True) is not None


def _a_run_is_active(machine: object) -> bool:
    return Run.objects.filter(status__in=["queued", "running", "interrupted"]).exists()


class DecisionLoop(RuleBasedStateMachine):
    """One model of the product: runs, items, decisions, crashes, expiries. Rules act on
    a pending item or a queued run picked among those that exist, so most steps do
    something: a rule that needs one is only drawn when one exists (Hypothesis's draws
    are not the same in every process, see the test). Plans have one call each: its tool runs on the calling thread, inside the
    example's transaction."""

    def __init__(self) -> None:
        super().__init__()
        # Each example starts from the same empty database and effects log, and leaves
        # nothing behind (a savepoint rolled back at teardown), so Hypothesis can replay
        # and shrink a failing sequence exactly.
        self._example = transaction.atomic()
        self._example.__enter__()
        self.log = Path(os.environ[effects.EFFECTS_ENV]).with_name(f"{uuid.uuid4().hex}.jsonl")
        os.environ[effects.EFFECTS_ENV] = str(self.log)
        self.reviewer = User.objects.get(username="reviewer")
        self.sent: list[DecisionRequest] = []
        self.crashed_keys: set[str] = set()

    def teardown(self) -> None:
        transaction.set_rollback(True)
        self._example.__exit__(None, None, None)

    # -- rules --------------------------------------------------------------------

    @rule(kind=st.sampled_from(sorted(CALLS)))
    def create(self, kind: str) -> None:
        """A run starts and a worker takes it at once, to its pause."""
        thread = f"sm-{uuid.uuid4().hex[:10]}"
        run = service.start_run("ledger_agent", agent_input([CALLS[kind]]), thread_id=thread)
        claim = claim_run(run.id, "worker", LEASE)
        if claim is not None:
            execute(claim)

    @rule(fault=st.sampled_from(["none", "crash before running", "crash after a side effect"]))
    def work(self, fault: str) -> None:
        """A worker sweeps expired leases and takes the queued runs, the first one under
        `fault`: it dies holding the claim, or right after a tool's side effect, before
        the result is recorded; either way its lease then expires."""
        sweep_expired_leases(max_attempts=20)
        claim = claim_next_run("worker", LEASE)
        if claim is None:
            return
        if fault == "none":
            execute(claim)
        elif fault == "crash before running":
            self._expire_lease(claim.run_id)
        else:
            self._crash_after_effect(claim)
        run_queued()

    def _crash_after_effect(self, claim: Any) -> None:
        os.environ[effects.CRASH_ENV] = "*"
        try:
            execute(claim)
        except effects.SimulatedCrash:
            SEEN["crash after a side effect"] += 1
            self.crashed_keys |= set(
                ToolExecution.objects.filter(run_id=claim.run_id, status="started").values_list(
                    "key", flat=True
                )
            )
            self._expire_lease(claim.run_id)
        finally:
            del os.environ[effects.CRASH_ENV]

    @precondition(_a_review_waits)
    @rule(pick=PICK)
    def approve(self, pick: int) -> None:
        """Approving is the common case."""
        self.decide(pick, "approve")

    @precondition(_a_review_waits)
    @rule(pick=PICK, fault=st.sampled_from(["crash before running", "crash after a side effect"]))
    def approve_then_crash(self, pick: int, fault: str) -> None:
        """An approval whose resume meets a dying worker at once."""
        self.decide(pick, "approve")
        self.work(fault)

    @precondition(_a_review_waits)
    @rule(pick=PICK, how=st.sampled_from(["reject", "invalid", "stale", "replay"]))
    def decide(self, pick: int, how: str) -> None:
        if how == "replay":
            if self.sent:
                decide(self.sent[pick % len(self.sent)])
            return
        item = _pending(pick, unknown_outcome=False)
        if item is None:
            return
        answer = {"decisions": [{"type": {"invalid": "explode"}.get(how, how)}]}
        request = DecisionRequest(
            item_id=item.pk,
            user=self.reviewer,
            client_decision_id=uuid.uuid4().hex,
            digest=item.digest,
            interrupt_id=uuid.uuid4().hex if how == "stale" else item.interrupt_id,
            answer=answer,
        )
        outcome = decide(request)
        SEEN[f"decision {outcome.code}"] += 1
        self.sent.append(request)

    @precondition(_a_run_is_active)
    @rule(pick=PICK)
    def cancel(self, pick: int) -> None:
        active = list(
            Run.objects.filter(status__in=["queued", "running", "interrupted"]).order_by(
                "created_at"
            )
        )
        if active:
            with contextlib.suppress(service.RunStateError):
                service.cancel_run(active[pick % len(active)].id)
                SEEN["cancelled"] += 1

    @precondition(_a_review_waits)
    @rule(pick=PICK)
    def expire(self, pick: int) -> None:
        item = _pending(pick, unknown_outcome=False)
        if item is None:
            return
        item.policy = {**item.policy, "on_expiry": "reject"}
        item.due_at = timezone.now() - timezone.timedelta(seconds=1)
        item.save(update_fields=["policy", "due_at"])
        SEEN["expired"] += deadlines.sweep().expired

    @precondition(_a_question_waits)
    @rule(pick=PICK)
    def answer_an_unknown_outcome(self, pick: int) -> None:
        item = _pending(pick, unknown_outcome=True)
        if item is None:
            return
        happened = item.payload["idempotency_key"] in effects.counts(self.log)
        answer = {"outcome": "succeeded"} if happened else {"outcome": "not_run"}
        outcome = decide(
            DecisionRequest(
                item_id=item.pk,
                user=self.reviewer,
                client_decision_id=uuid.uuid4().hex,
                digest=item.digest,
                interrupt_id=item.interrupt_id,
                answer=answer,
            )
        )
        if outcome.accepted:
            SEEN["outcome unknown answered"] += 1

    # -- invariants -----------------------------------------------------------------

    @invariant()
    def one_decision_per_interrupt(self) -> None:
        per_interrupt = Counter(
            Decision.objects.values_list("item__thread_id", "item__interrupt_id")
        )
        assert max(per_interrupt.values(), default=0) <= 1
        assert not Decision.objects.filter(item__status__in=["cancelled", "expired"]).exists()

    @invariant()
    def one_resume_per_decision(self) -> None:
        answered = Counter(
            (run.thread_id, interrupt)
            for run in Run.objects.filter(kind="resume")
            for interrupt in (run.input or {})
        )
        assert max(answered.values(), default=0) <= 1, answered.most_common(3)

    @invariant()
    def no_tool_action_took_effect_twice(self) -> None:
        done = effects.read(self.log)
        for key, count in Counter(e["key"] for e in done).items():
            tool = next(e["tool"] for e in done if e["key"] == key)
            allowed = 2 if key in self.crashed_keys and tool != "wire_funds" else 1
            assert count <= allowed, (tool, key, count)

    @invariant()
    def no_forked_checkpoint_chain(self) -> None:
        assert forked_checkpoints() == []

    # -- helpers ----------------------------------------------------------------------

    @staticmethod
    def _expire_lease(run_id: Any) -> None:
        """The lease ran out by the database's clock, which the sweep reads (`now()`: the
        test's transaction's start, as every example runs inside it). By this process's
        clock it ran out only in the test's first second, and a run whose worker crashed
        later stayed claimed: the sweep never took it back, and how much of the loop the
        machine exercised depended on how fast the examples ran."""
        Run.objects.filter(id=run_id).update(lease_expires_at=Now() - timedelta(seconds=1))


@pytest.mark.django_db
def test_the_decision_loop_keeps_its_invariants_under_any_interleaving(effects_log: Path) -> None:
    """A fixed example budget; the machine must really have exercised crashes, decisions
    and expiries.

    Derandomized, yet the sequences are not the same in every process: Hypothesis also
    draws constants found in the project's modules already imported (`sys.modules`), so
    which test files were collected or ran before changes every draw. Rules that need a
    pending item or an active run are therefore drawn only when one exists (their
    preconditions): the floors below then hold for any of those sequences, where they
    used to depend on luck (alone, this file saw 1 expiry in 50 examples; with the
    whole folder collected, 52)."""
    make_reviewer("reviewer")
    SEEN.clear()
    run_state_machine_as_test(
        DecisionLoop,
        settings=settings(
            max_examples=50,
            stateful_step_count=40,
            deadline=None,
            derandomize=True,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        ),
    )
    assert SEEN["decision accepted"] >= 20, SEEN
    assert SEEN["crash after a side effect"] >= 5, SEEN
    assert SEEN["expired"] >= 5 and SEEN["cancelled"] >= 5, SEEN


@pytest.mark.django_db
@pytest.mark.parametrize("answer", ["succeeded", "skip"])
def test_an_at_most_once_tool_cut_off_after_its_effect_waits_for_a_human(
    answer: str, effects_log: Path
) -> None:
    """S4 end to end: `wire_funds` took effect, then its worker died before recording
    it. The retried run does not wire again: it pauses with an "outcome unknown" item,
    which the operator answers through the decision service; the wire happened once."""
    make_reviewer("reviewer")
    machine = DecisionLoop()
    try:
        machine.create("wire")
        machine.approve_then_crash(0, "crash after a side effect")
        machine.work("none")
        [question] = ReviewItem.objects.filter(status="pending")
        outcome = decide(
            DecisionRequest(
                item_id=question.pk,
                user=machine.reviewer,
                client_decision_id="operator-1",
                digest=question.digest,
                interrupt_id=question.interrupt_id,
                answer={"outcome": answer},
            )
        )
        machine.work("none")

        assert question.payload["kind"] == OUTCOME_UNKNOWN
        assert question.payload["tool"] == "wire_funds"
        assert outcome.accepted
        assert [e["tool"] for e in effects.read(machine.log)] == ["wire_funds"]
        assert Run.objects.order_by("created_at").last().status == "succeeded"  # type: ignore[union-attr]
    finally:
        machine.teardown()


@pytest.mark.django_db
def test_an_at_least_once_tool_cut_off_after_its_effect_runs_again_with_the_same_key(
    effects_log: Path,
) -> None:
    """The other half of S4: `send_email` is retried after the crash with the same
    idempotency key (what the receiving service dedupes on), and recorded done once."""
    make_reviewer("reviewer")
    machine = DecisionLoop()
    try:
        machine.create("email")
        machine.approve_then_crash(0, "crash after a side effect")
        machine.work("none")

        keys = [e["key"] for e in effects.read(machine.log)]
        [execution] = ToolExecution.objects.all()
        assert len(keys) == 2 and len(set(keys)) == 1
        assert (execution.key, execution.status, execution.attempts) == (keys[0], "done", 2)
    finally:
        machine.teardown()
