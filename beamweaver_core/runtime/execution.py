"""Executing one claimed run: the registered graph, a fenced checkpointer, live events.

A retried run (its worker died) continues from what earlier attempts saved instead of
starting over: a start run whose input checkpoint exists continues, a resume run drops the
answers its earlier attempt already delivered. The outcome, the thread's status and the
review items of a pause (through `run_paused`) are written in one transaction, and only
if the run is still ours.
"""

from __future__ import annotations

import logging
import traceback
from typing import Any

from django.db import connections, transaction
from django.db.utils import InterfaceError, OperationalError

from beamweaver_core.agent.async_subagents import use_async_task_client
from beamweaver_core.agent.ledger import use_ledger
from beamweaver_core.checkpoint.postgres import PostgresCheckpointer
from beamweaver_core.exceptions import BeamWeaverError, StaleWriterError
from beamweaver_core.graph.compiled import CompiledGraph
from beamweaver_core.models import Run
from beamweaver_core.observability.runs import observed
from beamweaver_core.redaction import redact_text
from beamweaver_core.runtime import options as run_options
from beamweaver_core.runtime import registry
from beamweaver_core.runtime.async_tasks import DurableAsyncTasks
from beamweaver_core.runtime.events import (
    RunRecorder,
    announce_status,
    last_stored_seq,
    to_display,
)
from beamweaver_core.runtime.queue import Claim, finish_run, promote_waiting
from beamweaver_core.runtime.signals import run_finished, run_paused
from beamweaver_core.runtime.tool_ledger import PostgresToolLedger
from beamweaver_core.types import Completed, Interrupted, RunResult

logger = logging.getLogger(__name__)


class _LostRun(Exception):
    """The run is no longer ours (lease taken over, or cancelled)."""


def execute(claim: Claim, *, using: str = "default") -> str:
    """Run the claimed run to its next pause or end; returns the status recorded
    (`"lost"` if another worker or an operator took the run away meanwhile). Traced,
    timed and counted (`observability.runs`)."""
    with observed(claim) as record:
        status = _execute(claim, using)
        record(status)
    return status


def _execute(claim: Claim, using: str) -> str:
    run_id = str(claim.run_id)
    # A retried run numbers its events after those its earlier attempts stored, so the
    # run's event log only grows and a client resuming a stream never goes backwards.
    recorder = RunRecorder(
        run_id,
        claim.thread_id,
        seq_base=last_stored_seq(run_id, using) if claim.attempts > 1 else 0,
    )
    checkpointer = PostgresCheckpointer(using).fenced(
        claim.run_id, claim.token, on_write=recorder.store, head=claim.head
    )
    config: dict[str, Any] = {"configurable": {"thread_id": claim.thread_id}, "run_id": run_id}
    # The claim marked the thread running (in its own statement).
    announce_status(claim.thread_id, run_id, Run.Status.RUNNING)
    error = ""
    result: RunResult | None = None
    options = claim.options
    config = run_options.configured(config, options)
    try:
        graph = run_options.configured_graph(
            registry.compiled_graph(claim.graph, checkpointer), options
        )
        with (
            use_ledger(PostgresToolLedger(claim, using)),
            use_async_task_client(DurableAsyncTasks(claim)),
        ):
            result = _advance(graph, claim, config, recorder, options)
    except StaleWriterError:
        logger.warning("Run %s lost its lease or was cancelled; another owner continues it", run_id)
        return "lost"
    except (OperationalError, InterfaceError):
        # Postgres restarting or a killed backend: not the run's fault. The worker backs
        # off; the lease expires and the run is retried from its last checkpoint.
        raise
    except BeamWeaverError as exc:
        error = redact_text(f"{type(exc).__name__}: {exc}")
    except Exception as exc:
        logger.exception("Run %s failed", run_id)
        error = redact_text(f"{type(exc).__name__}: {exc}\n\n{traceback.format_exc(limit=20)}")
    try:
        return _record(claim, result, error, recorder, using)
    except _LostRun:
        logger.warning("Run %s was taken over before its outcome was recorded", run_id)
        return "lost"


def _advance(
    graph: CompiledGraph,
    claim: Claim,
    config: dict[str, Any],
    recorder: RunRecorder,
    options: dict[str, Any] | None,
) -> RunResult:
    if claim.attempts > 1:
        resumed = _continue_retry(graph, claim, config, recorder)
        if resumed is not None:
            return resumed
    if claim.kind == Run.Kind.START and claim.input is not None:
        return graph.invoke(claim.input, config, context=claim.context, on_event=recorder)
    # No input (`start_run(input=None)`) or a resume: continue the thread from its pending
    # step, with the answers and the options' goto / update.
    answers = claim.input if claim.kind == Run.Kind.RESUME else None
    command = run_options.continuation(options, answers)
    return graph.invoke(command, config, context=claim.context, on_event=recorder)


def _continue_retry(
    graph: CompiledGraph, claim: Claim, config: dict[str, Any], recorder: RunRecorder
) -> RunResult | None:
    """What an earlier attempt of this run left: continue it, or `None` to run normally."""
    snapshot = graph.get_state(config)
    wrote = any(
        s.metadata.get("run_id") == config["run_id"]
        for s in graph.get_state_history(config, limit=50)
    )
    if claim.kind == Run.Kind.START and not wrote:
        return None
    pending = {i.id for i in snapshot.interrupts}
    if claim.kind == Run.Kind.RESUME and isinstance(claim.input, dict):
        remaining = {k: v for k, v in claim.input.items() if k in pending}
        if remaining:
            # The run's goto / update went in with the first checkpoint it wrote.
            command = run_options.continuation(None if wrote else claim.options, remaining)
            return graph.invoke(command, config, context=claim.context, on_event=recorder)
    elif claim.kind == Run.Kind.RESUME and not wrote:
        return None
    if snapshot.interrupts:
        return Interrupted(
            interrupt=snapshot.interrupts[0], interrupts=snapshot.interrupts, state=snapshot.values
        )
    if snapshot.next:
        return graph.invoke(None, config, context=claim.context, on_event=recorder)
    return Completed(state=snapshot.values)


def _record(
    claim: Claim, result: RunResult | None, error: str, recorder: RunRecorder, using: str
) -> str:
    if isinstance(result, Interrupted):
        status = Run.Status.INTERRUPTED
        summary: Any = {"interrupts": [to_display(i) for i in result.interrupts]}
    elif isinstance(result, Completed):
        status, summary = Run.Status.SUCCEEDED, {"keys": sorted(result.state)}
    else:
        status, summary = Run.Status.FAILED, None
    with transaction.atomic(using=using):
        # The run, then the thread's row (its lock until the commit), in one statement: a
        # check made under that lock (a copy's, a change's) sees the review items the
        # pause writes next, which may hide the thread, or runs before them.
        run = finish_run(claim, status, result=summary, error=error, using=using)
        if run is None:
            raise _LostRun
        with connections[using].cursor() as cursor:
            recorder.store(cursor)
        if isinstance(result, Interrupted):
            run_paused.send(sender=Run, run=run, interrupts=result.interrupts)
        else:
            run_finished.send(sender=Run, run=run)
        # The outcome holds the thread's row lock: the next waiting run is queued once.
        promote_waiting(claim.thread_id, using)
    announce_status(claim.thread_id, str(claim.run_id), status)
    return str(status)


__all__ = ["execute"]
