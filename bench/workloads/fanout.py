"""Workload 2, fanout: START fans out to W parallel nodes (default 8), then a join.

Each worker appends its index to `items` (`operator.add`); `join` runs once, after all W
(a barrier), and writes how many arrived. Same shape as the peer's `fanout.py`.

`stagger_ms` (default 0) makes worker i sleep i x stagger_ms first, so the workers finish
one after another, as model or tool calls of different lengths do: each engine then saves
the writes of the workers that finished while the others still run.
"""

from __future__ import annotations

import operator
import time
import uuid
from typing import Annotated, Any, TypedDict

from bench.engines.base import Engine
from bench.stats import summarize_ms
from bench.workloads.phases import measure

DEFAULTS = {"width": 8, "threads": 200, "warmup": 10, "backend": "memory", "stagger_ms": 0}


class FanoutState(TypedDict):
    items: Annotated[list[int], operator.add]
    joined: int


def _worker(i: int, stagger_s: float) -> Any:
    def worker(state: FanoutState) -> dict[str, Any]:
        if stagger_s:
            time.sleep(i * stagger_s)
        return {"items": [i]}

    worker.__name__ = f"w_{i}"
    return worker


def _join(state: FanoutState) -> dict[str, Any]:
    return {"joined": len(state["items"])}


def build(engine: Engine, width: int, checkpointer: Any, stagger_s: float = 0.0) -> Any:
    builder = engine.builder(FanoutState)
    names = [f"w_{i}" for i in range(width)]
    for i, name in enumerate(names):
        builder.add_node(name, _worker(i, stagger_s))
        builder.add_edge(engine.START, name)
    builder.add_node("join", _join)
    builder.add_edge(names, "join")
    builder.add_edge("join", engine.END)
    return builder.compile(checkpointer=checkpointer)


def run(engine: Engine, params: dict[str, Any]) -> dict[str, Any]:
    p = {**DEFAULTS, **params}
    width, threads = int(p["width"]), int(p["threads"])
    store = engine.store(p["backend"], "fanout")
    run_id = uuid.uuid4().hex[:8]
    latencies: list[float] = []

    def one(graph: Any, tag: str, i: int) -> None:
        out = engine.invoke(graph, {"items": [], "joined": 0}, store.config(f"{tag}-{run_id}-{i}"))
        assert out.values["joined"] == width, out
        assert sorted(out.values["items"]) == list(range(width)), out

    def warm(graph: Any) -> None:
        for i in range(int(p["warmup"])):
            one(graph, "warm", i)

    def timed(graph: Any) -> None:
        for i in range(threads):
            t0 = time.perf_counter()
            one(graph, "fan", i)
            latencies.append(time.perf_counter() - t0)

    try:
        m = measure(
            store,
            lambda cp: build(engine, width, cp, float(p["stagger_ms"]) / 1000),
            warm,
            timed,
            int(p.get("profile", 0)),
        )
    finally:
        store.teardown()
    tasks = threads * (width + 1)
    out: dict[str, Any] = {
        "invoke_ms": summarize_ms(latencies),
        "invokes_per_s": round(threads / m.wall_s, 2),
        "tasks_per_s": round(tasks / m.wall_s, 1),
        "ms_per_task": round(m.wall_s * 1000.0 / tasks, 4),
        **m.facts(threads, "invoke"),
    }
    if m.storage is not None:
        out["per_thread"] = {
            "rows": round(m.storage["rows"] / threads, 2),
            "payload_bytes": round(m.storage["payload_bytes"] / threads, 1),
        }
    return out
