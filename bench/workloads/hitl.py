"""Workload 3, HITL round trip: invoke until `interrupt()`, then resume to the end.

prepare -> ask_0..ask_{K-1} -> finish. With K = 1 one node asks and a plain value answers
it; with K > 1 the K nodes ask in the same super-step and one map `{interrupt_id: answer}`
answers them all. Threads run one after another (the peer's `--order interleaved`).
Same shape as the peer's `hitl_roundtrip.py`.
"""

from __future__ import annotations

import operator
import time
import uuid
from typing import Annotated, Any, TypedDict

from bench.engines.base import Engine, Outcome
from bench.stats import summarize_ms
from bench.workloads.phases import measure

DEFAULTS = {"k": 1, "threads": 200, "warmup": 10, "backend": "postgres"}


class HitlState(TypedDict):
    topic: str
    answers: Annotated[list[Any], operator.add]
    done: bool


def _prepare(state: HitlState) -> dict[str, Any]:
    return {"topic": state["topic"] + "!"}


def _finish(state: HitlState) -> dict[str, Any]:
    return {"done": True}


def build(engine: Engine, k: int, checkpointer: Any) -> Any:
    def ask_node(i: int) -> Any:
        def ask(state: HitlState) -> dict[str, Any]:
            answer = engine.interrupt(
                {"question": f"approve part {i} of {state['topic']}?", "part": i}
            )
            return {"answers": [answer]}

        ask.__name__ = f"ask_{i}"
        return ask

    builder = engine.builder(HitlState)
    builder.add_node("prepare", _prepare)
    builder.add_edge(engine.START, "prepare")
    names = [f"ask_{i}" for i in range(k)]
    for i, name in enumerate(names):
        builder.add_node(name, ask_node(i))
        builder.add_edge("prepare", name)
    builder.add_node("finish", _finish)
    builder.add_edge(names if k > 1 else names[0], "finish")
    builder.add_edge("finish", engine.END)
    return builder.compile(checkpointer=checkpointer)


def answer_for(paused: Outcome, k: int) -> Any:
    """A plain value for one interrupt; one map of interrupt ids for several."""
    if k == 1:
        return "yes"
    return {iid: f"yes-{value['part']}" for iid, value in paused.interrupts}


def run(engine: Engine, params: dict[str, Any]) -> dict[str, Any]:
    p = {**DEFAULTS, **params}
    k, threads = int(p["k"]), int(p["threads"])
    store = engine.store(p["backend"], f"hitl{k}")
    run_id = uuid.uuid4().hex[:8]
    to_interrupt: list[float] = []
    to_end: list[float] = []

    def one(graph: Any, tag: str, i: int, record: bool) -> None:
        config = store.config(f"{tag}-{run_id}-{i}")
        t0 = time.perf_counter()
        paused = engine.invoke(graph, {"topic": "doc", "answers": [], "done": False}, config)
        t1 = time.perf_counter()
        assert len(paused.interrupts) == k, paused
        done = engine.resume(graph, answer_for(paused, k), config)
        t2 = time.perf_counter()
        assert done.values["done"] is True and len(done.values["answers"]) == k, done
        assert not done.interrupts, done
        if record:
            to_interrupt.append(t1 - t0)
            to_end.append(t2 - t1)

    def warm(graph: Any) -> None:
        for i in range(int(p["warmup"])):
            one(graph, "warm", i, record=False)

    def timed(graph: Any) -> None:
        for i in range(threads):
            one(graph, "hitl", i, record=True)

    try:
        m = measure(store, lambda cp: build(engine, k, cp), warm, timed, int(p.get("profile", 0)))
    finally:
        store.teardown()
    out: dict[str, Any] = {
        "interrupt_ms": summarize_ms(to_interrupt),
        "resume_ms": summarize_ms(to_end),
        "total_ms": summarize_ms([a + b for a, b in zip(to_interrupt, to_end, strict=True)]),
        "roundtrips_per_s": round(threads / m.wall_s, 2),
        **m.facts(threads, "roundtrip"),
    }
    if m.storage is not None:
        out["per_thread"] = {
            "rows": round(m.storage["rows"] / threads, 2),
            "payload_bytes": round(m.storage["payload_bytes"] / threads, 1),
        }
    return out
