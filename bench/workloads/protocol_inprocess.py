"""Workload 10b, row 10's HITL round trip in process: the same protocol calls on the same
`ask` graph (bench/live/protocol_graphs.py), through the durable runtime, without HTTP.

Row 10 times `threads.create` → `runs.wait` to the interrupt → `runs.wait` with
`command.resume` → the end through the official SDK against the live server. This row does
what those three requests do on the server, in this one process and thread, in the same
order and with the same functions:

- the thread created as `threads.create` creates it (one row, its own transaction);
- the run started by the protocol's own `launch` with the same body (the run queued with
  its protocol record, in one transaction), then claimed and executed here as a worker
  thread does it (`claim_run` then `execute`: the lease and fencing token, the fenced
  step, the pause's outcome with the inbox's review item, its audit row and
  notification), then the wait's answer read as `runs.wait` reads it (`outcome.result`);
- the resume by `launch` with `command.resume`: the decision service (validation, review
  policy, audit, one decision per interrupt) queues the resume run, claimed and executed
  the same way, and its answer read.

What row 10 has and this row does not: HTTP (the SDK's client, daphne, Django's handler
and middleware, the token's check), the wait's asynchronous machinery (hints, the
database thread), and the hand-off to a worker (the queue's wake-up; a worker thread
picking the run up). So row 10 / row 10b is what serving the round trip over the
protocol costs on top of the same durable work; row 10b / row 3 is what the durable
runtime, the inbox and the decision service cost on top of the engine.

Besides the round trip and its parts: this process's CPU per round trip (the Python side;
Postgres's own CPU is not in it, as it is not in row 10's server CPU) and the statements
and commits per round trip, counted on one more pass in Django's query log (counting adds
its own cost, so that pass is not timed; the checkpointer's own statements, on cursors of
its own, are not in that log, the commits of their transactions are). BeamWeaver only:
LangGraph's library has no run queue, inbox or decision service.
"""

from __future__ import annotations

import os
import time
import uuid
from itertools import pairwise
from typing import Any

from bench.live import database
from bench.live.protocol_graphs import GRAPHS
from bench.live.session import setup_django
from bench.stats import summarize_ms
from bench.workloads import protocol

DEFAULTS = {"roundtrips": 100, "warmup": 10}
PARTS = ("create", "start", "to_interrupt", "resume", "to_end")
"""The round trip's parts, in order: the thread's creation, the start, its run to the
pause with the answer read, the resume, its run to the end with the answer read."""


def _roundtrip(user: Any, index: int) -> list[float]:
    """One round trip; the `perf_counter` at its start and after each of `PARTS`."""
    from django.db import transaction

    from beamweaver_core.models import Run, Thread
    from beamweaver_core.protocol.launch import launch
    from beamweaver_core.protocol.outcome import result
    from beamweaver_core.runtime.execution import execute
    from beamweaver_core.runtime.queue import claim_run

    def carried_out(run: Any) -> dict[str, Any]:
        claim = claim_run(run.pk, "bench-worker", 60)
        assert claim is not None, run.pk
        execute(claim)
        return result(Run.objects.get(pk=run.pk))

    marks = [time.perf_counter()]
    with transaction.atomic():
        thread = Thread.objects.create(id=str(uuid.uuid4()), graph="", metadata={})
    marks.append(time.perf_counter())
    run = launch(user, thread.id, {"assistant_id": "ask", "input": {"amount": index}})
    marks.append(time.perf_counter())
    paused = carried_out(run)
    assert paused["__interrupt__"], paused
    marks.append(time.perf_counter())
    run = launch(user, thread.id, {"assistant_id": "ask", "command": {"resume": "yes"}})
    marks.append(time.perf_counter())
    done = carried_out(run)
    assert done["log"] == ["finish"], done
    marks.append(time.perf_counter())
    return marks


def _counted(user: Any, count: int) -> dict[str, float]:
    """Statements and commits per round trip, over `count` more round trips."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        for index in range(count):
            _roundtrip(user, index)
    commits = sum(1 for q in queries.captured_queries if q["sql"].strip().upper() == "COMMIT")
    return {
        "statements": round(len(queries.captured_queries) / count, 2),
        "commits": round(commits / count, 2),
    }


def run(engine: Any, params: dict[str, Any]) -> dict[str, Any]:
    p = {**DEFAULTS, **params}
    count, warmup = int(p["roundtrips"]), int(p["warmup"])
    os.environ.update(protocol.SERVER_ENV)  # row 10's server's one change of the defaults
    url = database.fresh()
    setup_django(url, None, GRAPHS)
    try:
        user = protocol.reviewer()
        for index in range(warmup):
            _roundtrip(user, index)
        totals: list[float] = []
        parts: dict[str, list[float]] = {part: [] for part in PARTS}
        cpu_before = time.process_time()
        for index in range(count):
            marks = _roundtrip(user, index)
            totals.append(marks[-1] - marks[0])
            for part, (start, end) in zip(PARTS, pairwise(marks), strict=True):
                parts[part].append(end - start)
        cpu_ms = (time.process_time() - cpu_before) * 1000 / count
        out: dict[str, Any] = {
            "params": p,
            "roundtrip_ms": summarize_ms(totals),
            **{f"{part}_ms": summarize_ms(seconds) for part, seconds in parts.items()},
            "cpu_ms_per_roundtrip": round(cpu_ms, 2),
            "per_roundtrip": _counted(user, max(1, min(count, 20))),
        }
    finally:
        from django.db import connections

        connections.close_all()
        database.drop()
    return out
