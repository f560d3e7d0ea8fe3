"""Workload 5, concurrency: P asyncio tasks (default 50) doing interrupt + resume round trips.

prepare -> ask (`interrupt()`) -> finish, async nodes. The P tasks share R round trips
(default 500), each on a fresh thread: `ainvoke` until the interrupt, then resume to the
end. LangGraph: `AsyncPostgresSaver` over an `AsyncConnectionPool` of `pool_size`
connections, as in the peer's `concurrency.py`. BeamWeaver: what the product's worker
runs, `ainvoke` / `aresume` with `PostgresCheckpointer` (its blocking database work goes to
asyncio's default executor; Django's connection pool holds `pool_size` connections).
"""

from __future__ import annotations

import asyncio
import operator
import time
import uuid
from typing import Annotated, Any, TypedDict

from bench.engines.base import Engine
from bench.stats import summarize_ms
from bench.workloads.phases import ameasure

DEFAULTS = {"tasks": 50, "runs": 500, "pool_size": 10, "warmup": 3, "backend": "postgres"}


class ConcurrencyState(TypedDict):
    topic: str
    answers: Annotated[list[Any], operator.add]
    done: bool


def build(engine: Engine, checkpointer: Any) -> Any:
    async def prepare(state: ConcurrencyState) -> dict[str, Any]:
        return {"topic": state["topic"] + "!"}

    async def ask(state: ConcurrencyState) -> dict[str, Any]:
        answer = engine.interrupt({"question": f"approve {state['topic']}?"})
        return {"answers": [answer]}

    async def finish(state: ConcurrencyState) -> dict[str, Any]:
        return {"done": True}

    builder = engine.builder(ConcurrencyState)
    builder.add_node("prepare", prepare)
    builder.add_node("ask", ask)
    builder.add_node("finish", finish)
    builder.add_edge(engine.START, "prepare")
    builder.add_edge("prepare", "ask")
    builder.add_edge("ask", "finish")
    builder.add_edge("finish", engine.END)
    return builder.compile(checkpointer=checkpointer)


async def _run(engine: Engine, p: dict[str, Any]) -> dict[str, Any]:
    tasks, runs = int(p["tasks"]), int(p["runs"])
    store = engine.store(p["backend"], "conc", pool_size=int(p["pool_size"]))
    run_id = uuid.uuid4().hex[:8]
    to_interrupt: list[float] = []
    to_end: list[float] = []

    async def roundtrip(graph: Any, tag: str, i: int, record: bool) -> None:
        config = store.config(f"{tag}-{run_id}-{i}")
        t0 = time.perf_counter()
        paused = await engine.ainvoke(graph, {"topic": "doc", "answers": [], "done": False}, config)
        t1 = time.perf_counter()
        assert len(paused.interrupts) == 1, paused
        done = await engine.aresume(graph, "yes", config)
        t2 = time.perf_counter()
        assert done.values["done"] is True and done.values["answers"] == ["yes"], done
        if record:
            to_interrupt.append(t1 - t0)
            to_end.append(t2 - t1)

    async def warm(graph: Any) -> None:
        for i in range(int(p["warmup"])):
            await roundtrip(graph, "warm", i, record=False)
        burst = min(tasks, 20)
        await asyncio.gather(*(roundtrip(graph, "warmc", i, record=False) for i in range(burst)))

    async def timed(graph: Any) -> None:
        next_index = 0

        async def worker() -> None:
            nonlocal next_index
            while next_index < runs:
                i = next_index
                next_index += 1
                await roundtrip(graph, "conc", i, record=True)

        await asyncio.gather(*(worker() for _ in range(tasks)))

    try:
        m = await ameasure(store, lambda cp: build(engine, cp), warm, timed)
    finally:
        store.teardown()
    return {
        "roundtrips_per_s": round(runs / m.wall_s, 2),
        "roundtrip_ms": summarize_ms([a + b for a, b in zip(to_interrupt, to_end, strict=True)]),
        "interrupt_ms": summarize_ms(to_interrupt),
        "resume_ms": summarize_ms(to_end),
        **m.facts(runs, "roundtrip"),
    }


def run(engine: Engine, params: dict[str, Any]) -> dict[str, Any]:
    return asyncio.run(_run(engine, {**DEFAULTS, **params}))
