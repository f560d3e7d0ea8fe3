"""What the runtime tells the metrics, the traces and the logs about a run.

`queued_context()` is what a run keeps of the request that queued it (its trace context
and request id); `observed(claim)` surrounds a worker's execution of the run: its span
(child of that request's), the run and thread ids on every log line, and its duration
and outcome counted.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

from beamweaver_core.observability import context, instruments, tracing

OUTCOME_FAILED = "failed"


def queued_context() -> dict[str, str] | None:
    """The trace context and request id in force, to keep with a run being queued
    (`None` when there is neither)."""
    kept = tracing.carrier()
    request = context.request_id.get()
    if request is not None:
        kept["request_id"] = request
    return kept or None


@contextlib.contextmanager
def observed(claim: Any) -> Iterator[Callable[[str], None]]:
    """Around executing `claim` (a `runtime.queue.Claim`); the body calls the yielded
    function with the status it recorded."""
    kept = claim.trace_context if isinstance(claim.trace_context, dict) else {}
    run_id = str(claim.run_id)
    outcome: dict[str, str] = {}
    started = time.monotonic()
    attributes = {
        "beamweaver.graph": claim.graph,
        "beamweaver.thread_id": claim.thread_id,
        "beamweaver.run_id": run_id,
        "beamweaver.run.kind": claim.kind,
        "beamweaver.run.attempt": claim.attempts,
    }
    request = context.valid_request_id(kept.get("request_id"))
    with (
        context.bound(run_id=run_id, thread_id=claim.thread_id, request_id=request),
        tracing.run_span(kept, attributes) as span,
    ):

        def record(status: str) -> None:
            outcome["status"] = status

        try:
            yield record
        finally:
            status = outcome.get("status", "error")
            if span is not None:
                span.set_attribute("beamweaver.run.status", status)
                if status == OUTCOME_FAILED:
                    tracing.failed(span, None, "the run failed")
            instruments.RUN_EXECUTIONS.labels(claim.graph, status).inc()
            instruments.RUN_SECONDS.labels(claim.graph, status).observe(time.monotonic() - started)


__all__ = ["observed", "queued_context"]
