"""Workload 1, linear: N nodes in a line (default 10), T threads invoked one after another.

Every node adds 1 to `n` (no reducer) and appends its index to `log` (`operator.add`), so
each invoke on a fresh thread runs N super-steps. Same shape as the peer's `linear.py`.
"""

from __future__ import annotations

import operator
import time
import uuid
from typing import Annotated, Any, TypedDict

from bench.engines.base import Engine
from bench.stats import scaled, summarize_ms
from bench.workloads.phases import measure

DEFAULTS = {"nodes": 10, "threads": 200, "warmup": 10, "backend": "memory"}


class LinearState(TypedDict):
    n: int
    log: Annotated[list[int], operator.add]


def _node(i: int) -> Any:
    def step(state: LinearState) -> dict[str, Any]:
        return {"n": state["n"] + 1, "log": [i]}

    step.__name__ = f"step_{i}"
    return step


def build(engine: Engine, nodes: int, checkpointer: Any) -> Any:
    builder = engine.builder(LinearState)
    previous = engine.START
    for i in range(nodes):
        builder.add_node(f"step_{i}", _node(i))
        builder.add_edge(previous, f"step_{i}")
        previous = f"step_{i}"
    builder.add_edge(previous, engine.END)
    return builder.compile(checkpointer=checkpointer)


def run(engine: Engine, params: dict[str, Any]) -> dict[str, Any]:
    p = {**DEFAULTS, **params}
    nodes, threads = int(p["nodes"]), int(p["threads"])
    store = engine.store(p["backend"], "linear")
    run_id = uuid.uuid4().hex[:8]
    latencies: list[float] = []

    def one(graph: Any, tag: str, i: int) -> None:
        out = engine.invoke(graph, {"n": 0, "log": []}, store.config(f"{tag}-{run_id}-{i}"))
        assert out.values["n"] == nodes and len(out.values["log"]) == nodes, out

    def warm(graph: Any) -> None:
        for i in range(int(p["warmup"])):
            one(graph, "warm", i)

    def timed(graph: Any) -> None:
        for i in range(threads):
            t0 = time.perf_counter()
            one(graph, "lin", i)
            latencies.append(time.perf_counter() - t0)

    try:
        m = measure(
            store, lambda cp: build(engine, nodes, cp), warm, timed, int(p.get("profile", 0))
        )
    finally:
        store.teardown()
    steps = threads * nodes
    invoke = summarize_ms(latencies)
    out: dict[str, Any] = {
        "invoke_ms": invoke,
        "per_superstep_ms": scaled(invoke, nodes),
        "invokes_per_s": round(threads / m.wall_s, 2),
        "supersteps_per_s": round(steps / m.wall_s, 1),
        "ms_per_superstep": round(m.wall_s * 1000.0 / steps, 4),
        **m.facts(steps, "superstep"),
    }
    if m.storage is not None:
        out["per_thread"] = {
            "rows": round(m.storage["rows"] / threads, 2),
            "payload_bytes": round(m.storage["payload_bytes"] / threads, 1),
        }
    return out
