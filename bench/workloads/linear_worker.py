"""Workload 1b, linear on a worker: the linear graph (10 nodes) run the way the product runs it.

Each run is queued first (`service.start_run`, before the counters are read: that commit
belongs to the API that queues, not to the worker), then claimed and executed in this
process exactly as a worker thread does (`claim_run` then `execute`: the lease and fencing
token, the thread's head read in the claim's transaction, one fenced commit per step with
the run's events, the outcome). BeamWeaver only: LangGraph's library has no run queue.

`commits_per_step_besides_run` leaves out the two commits every run has whatever its
length, its claim and its outcome (each one transaction, as `tests/runtime/
test_commits_per_step.py` counts): what is left is what the steps cost, reads included.
The commits the harness itself causes (closing the pool after the timed part: a few, the
same for any number of runs) are measured separately and left out (`harness_commits`).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from typing import Any

from bench.engines.base import Engine
from bench.stats import scaled, summarize_ms
from bench.workloads import linear
from bench.workloads.phases import measure

DEFAULTS = {"threads": 200, "warmup": 10, "backend": "postgres"}
GRAPH = "bench_linear"
NODES = linear.DEFAULTS["nodes"]


def graph() -> Any:
    """The registered graph (`BEAMWEAVER_GRAPHS`): the linear workload's, 10 nodes."""
    from bench.engines import load_engine

    return linear.build(load_engine("beamweaver", "sync"), NODES, None)


def _open_pool() -> None:
    from django.db import connection

    connection.ensure_connection()
    pool = getattr(connection, "pool", None)
    if pool is not None:
        pool.wait(30)


def run(engine: Engine, params: dict[str, Any]) -> dict[str, Any]:
    if engine.name != "beamweaver":
        raise ValueError("linear_worker runs BeamWeaver's runtime only")
    p = {**DEFAULTS, **params}
    threads = int(p["threads"])
    os.environ["BEAMWEAVER_GRAPHS"] = json.dumps({GRAPH: f"{__name__}:graph"})
    store = engine.store("postgres", "linear_worker")  # configures Django

    from beamweaver_core.runtime import service
    from beamweaver_core.runtime.execution import execute
    from beamweaver_core.runtime.queue import claim_run

    tag = uuid.uuid4().hex[:8]
    queued: list[Any] = []
    latencies: list[float] = []

    def queue(count: int, prefix: str) -> list[Any]:
        return [
            service.start_run(GRAPH, {"n": 0, "log": []}, thread_id=f"{prefix}-{tag}-{i}").id
            for i in range(count)
        ]

    def work(run_id: Any) -> None:
        claim = claim_run(run_id, "bench-worker", 60)
        assert claim is not None, run_id
        status = execute(claim)
        assert status == "succeeded", (run_id, status)

    def warm(_: Any) -> None:
        for run_id in queue(int(p["warmup"]), "warm"):
            work(run_id)

    def prepare() -> None:
        queued.extend(queue(threads, "run"))
        store.close()  # its backend reports the queueing's commits as it exits
        # The timed part's pool, filled, and its connection, taken (each new connection's
        # set-up and the pool's health check are transactions Postgres counts) before
        # the counters are read: the runs then count only what a run costs...
        _open_pool()

    def timed(_: Any) -> None:
        for run_id in queued:
            t0 = time.perf_counter()
            work(run_id)
            latencies.append(time.perf_counter() - t0)

    try:
        m = measure(store, lambda cp: None, warm, timed, prepare=prepare)
        # ... and what closing the pool after the timed part adds, measured the same way.
        _open_pool()
        before = store.counters()
        store.close()
        closing = store.counters()["xact_commit"] - before["xact_commit"]
    finally:
        store.teardown()
    steps = threads * NODES
    per_run = summarize_ms(latencies)
    out: dict[str, Any] = {
        "run_ms": per_run,
        "per_superstep_ms": scaled(per_run, NODES),
        "runs_per_s": round(threads / m.wall_s, 2),
        **m.facts(steps, "superstep"),
    }
    if m.server is not None:
        commits = m.server["xact_commit"] - closing
        out["harness_commits"] = closing
        out["server_per_run"] = {k: round(v / threads, 3) for k, v in m.server.items()}
        out["server_per_run"]["xact_commit"] = round(commits / threads, 3)
        out["commits_per_step_besides_run"] = round((commits - 2 * threads) / steps, 3)
    return out
