"""Helpers of the reliability tests: paused agent threads, barrier races, and the views the
checks compare (audit, dispatch, side effects, checkpoint chain)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.db import connection, connections

from beamweaver_core.models import Run
from beamweaver_core.runtime import service
from beamweaver_core.runtime.execution import execute
from beamweaver_core.runtime.queue import claim_next_run, claim_run
from bench.hostile import effects
from bench.hostile.agents import agent_input
from reviews.models import AuditEvent, Decision, ReviewItem
from reviews.services import DecisionOutcome, DecisionRequest, decide

EMAIL = {"to": "ops@example.com", "subject": "Weekly report", "body": "All good."}
SEND_EMAIL = {"name": "send_email", "args": EMAIL}
APPROVE = {"decisions": [{"type": "approve"}]}
REJECT = {"decisions": [{"type": "reject", "message": "Not now."}]}


def pause_agent(*turns: Sequence[dict[str, Any]], thread_id: str | None = None) -> ReviewItem:
    """Start `ledger_agent` on `turns` (default: one `send_email`) and run it to its pause."""
    return pause("ledger_agent", agent_input(*(turns or ([SEND_EMAIL],))), thread_id=thread_id)


def pause(graph: str, input: dict[str, Any], thread_id: str | None = None) -> ReviewItem:
    """Start a run of `graph` and execute that run (whatever else is queued) to its pause;
    its first review item."""
    run = service.start_run(graph, input, thread_id=thread_id)
    claim = claim_run(run.id, "reliability", 30.0)
    assert claim is not None
    assert execute(claim) == "interrupted", Run.objects.get(id=run.id).error
    return ReviewItem.objects.filter(thread_id=run.thread_id).order_by("id")[0]


def request(item: ReviewItem, user: User, answer: Any, **fields: Any) -> DecisionRequest:
    """A decision request as the item page would send it (fresh client id, current digest)."""
    values: dict[str, Any] = {
        "item_id": item.pk,
        "user": user,
        "client_decision_id": uuid.uuid4().hex,
        "digest": item.digest,
        "interrupt_id": item.interrupt_id,
        "answer": answer,
    }
    values.update(fields)
    return DecisionRequest(**values)


def race(*attempts: Callable[[], Any], timeout: float = 20) -> list[Any]:
    """Run the callables in threads released together by a barrier; their results in order.

    Each thread closes its database connection, so rounds do not pile up connections."""
    barrier = threading.Barrier(len(attempts), timeout=timeout)
    results: list[Any] = [None] * len(attempts)
    errors: list[BaseException] = []

    def attempt(index: int, fn: Callable[[], Any]) -> None:
        try:
            barrier.wait()
            results[index] = fn()
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=attempt, args=(i, fn)) for i, fn in enumerate(attempts)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    if errors:
        raise errors[0]
    return results


def decide_race(*requests: DecisionRequest) -> list[DecisionOutcome]:
    """Submit the requests to the decision service at the same instant."""
    return race(*(lambda r=r: decide(r) for r in requests))


def run_queued(limit: int = 1000) -> list[Run]:
    """Claim and execute queued runs until none is left; the runs executed."""
    done = []
    for _ in range(limit):
        claim = claim_next_run("reliability", 30.0)
        if claim is None:
            return done
        execute(claim)
        done.append(Run.objects.get(id=claim.run_id))
    raise AssertionError(f"more than {limit} runs were queued")


def audit_view(item: ReviewItem) -> list[tuple[str, str, str, str]]:
    """What the audit log says happened to the item (action, actor, outcome code,
    summary), oldest first."""
    return [
        (e.action, e.actor_name, e.outcome, e.summary)
        for e in AuditEvent.objects.filter(item=item).order_by("at", "id")
        if e.action != AuditEvent.Action.CREATED
    ]


def dispatch_view(thread_id: str) -> list[Any]:
    """What the thread's resume runs carry: the answers delivered to the graph (without
    the execution bindings the inbox adds to approvals and edits; see `bindings`)."""
    return [
        {iid: _unbound(answer) for iid, answer in (run.input or {}).items()}
        for run in Run.objects.filter(thread_id=thread_id, kind=Run.Kind.RESUME).order_by(
            "created_at"
        )
    ]


def bindings(thread_id: str) -> list[str]:
    """The execution digests the thread's resume runs bind approvals and edits to."""
    return [
        decision["binding"]
        for run in Run.objects.filter(thread_id=thread_id, kind=Run.Kind.RESUME)
        for answer in (run.input or {}).values()
        if isinstance(answer, dict)
        for decision in answer.get("decisions", [])
        if "binding" in decision
    ]


def _unbound(answer: Any) -> Any:
    if not isinstance(answer, dict) or not isinstance(answer.get("decisions"), list):
        return answer
    return {
        **answer,
        "decisions": [
            {k: v for k, v in d.items() if k != "binding"} if isinstance(d, dict) else d
            for d in answer["decisions"]
        ],
    }


def executed(log: Path, thread_id: str | None = None) -> list[tuple[str, dict[str, Any]]]:
    """The side effects that took place (tool and arguments), for one thread or all."""
    return [
        (effect["tool"], effect["args"])
        for effect in effects.read(log)
        if thread_id is None or effect["thread"] == thread_id
    ]


def assert_each_action_ran_at_most_once(log: Path) -> None:
    """The ledger check: no idempotency key took effect twice."""
    twice = {key: n for key, n in effects.counts(log).items() if n > 1}
    assert twice == {}, f"tool actions executed more than once: {twice}"


def assert_one_decision_per_item() -> None:
    per_item = Decision.objects.values_list("item_id", flat=True)
    assert len(per_item) == len(set(per_item))


def forked_checkpoints() -> list[tuple[Any, ...]]:
    """Checkpoints with two children on one thread's main line (must stay empty)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT thread_id, parent_id, count(*) FROM bw_checkpoint WHERE ns = '' "
            "AND parent_id IS NOT NULL GROUP BY thread_id, parent_id HAVING count(*) > 1"
        )
        return cursor.fetchall()
