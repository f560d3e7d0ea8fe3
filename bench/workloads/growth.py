"""Workload 4, state growth: a chat-like list of ~500-byte messages, one appended per step.

S steps (default 200) on one thread, one invoke per chat turn (the peer's `--mode turns`,
`--channel reducer`): the input carries the turn number, the node appends one message to
`messages` (`operator.add`). After the steps in `BYTES_POINTS` (and the last), outside the
timed part, the bytes the thread takes in storage are read: `stored_bytes(thread_id)` for
BeamWeaver, the same `sum(pg_column_size(row))` over LangGraph's three tables for
LangGraph, with their ratio to the raw bytes of the messages so far (`stored_to_raw_at`).
`latency_growth` is the step latency (9-step median) at each point over the one at step 10:
flat in the thread's length is 1.
"""

from __future__ import annotations

import json
import math
import operator
import random
import time
import uuid
from typing import Annotated, Any, TypedDict

from bench.engines.base import Engine
from bench.stats import percentile, summarize_ms
from bench.workloads.phases import measure

DEFAULTS = {"steps": 200, "msg_bytes": 500, "backend": "postgres"}
LATENCY_POINTS = (1, 10, 50, 100, 150, 200, 400, 600, 800, 1000)
BYTES_POINTS = (1, 10, 25, 50, 100, 150, 200, 400, 600, 800, 1000)
"""Steps after which bytes are read (reading them for every step of a 1,000-turn LangGraph
thread would re-read gigabytes)."""

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


class GrowthState(TypedDict):
    messages: Annotated[list[dict[str, Any]], operator.add]
    turn: int


def message(turn: int, size: int) -> dict[str, Any]:
    """A deterministic chat message whose JSON takes about `size` bytes."""
    rng = random.Random(turn)
    words: list[str] = []
    length = 0
    room = max(size - 90, 10)  # what the other fields take
    while length < room:
        word = "".join(rng.choice(_LETTERS) for _ in range(rng.randint(2, 9)))
        words.append(word)
        length += len(word) + 1
    return {
        "role": "assistant" if turn % 2 else "user",
        "id": f"msg-{turn:06d}",
        "step": turn,
        "content": " ".join(words)[:room],
    }


def build(engine: Engine, msg_bytes: int, checkpointer: Any) -> Any:
    def respond(state: GrowthState) -> dict[str, Any]:
        return {"messages": [message(state["turn"], msg_bytes)]}

    builder = engine.builder(GrowthState)
    builder.add_node("respond", respond)
    builder.add_edge(engine.START, "respond")
    builder.add_edge("respond", engine.END)
    return builder.compile(checkpointer=checkpointer)


def _around(latencies: list[float], step: int) -> dict[str, float]:
    """Latency of step `step` (1-based) and the median of the 9 steps around it."""
    i = min(step, len(latencies)) - 1
    window = latencies[max(0, i - 4) : i + 5]
    return {
        "step_ms": round(latencies[i] * 1000, 4),
        "window_median_ms": round(percentile(window, 50) * 1000, 4),
    }


def run(engine: Engine, params: dict[str, Any]) -> dict[str, Any]:
    p = {**DEFAULTS, **params}
    steps, msg_bytes = int(p["steps"]), int(p["msg_bytes"])
    store = engine.store(p["backend"], "growth")
    thread_id = f"growth-{uuid.uuid4().hex[:8]}"
    latencies: list[float] = []
    low = max(10, steps // 10)
    points = {p for p in (*BYTES_POINTS, low, steps) if p <= steps}
    stored: dict[int, int | None] = {}

    def warm(graph: Any) -> None:
        config = store.config("warm", recursion_limit=100)
        for turn in range(3):
            engine.invoke(graph, {"turn": turn}, config)

    def timed(graph: Any) -> None:
        config = store.config(thread_id, recursion_limit=100)
        for turn in range(steps):
            t0 = time.perf_counter()
            out = engine.invoke(graph, {"turn": turn}, config)
            latencies.append(time.perf_counter() - t0)
            if turn + 1 in points:
                stored[turn + 1] = store.thread_bytes(thread_id)
        assert len(out.values["messages"]) == steps, len(out.values["messages"])

    try:
        m = measure(store, lambda cp: build(engine, msg_bytes, cp), warm, timed)
    finally:
        store.teardown()
    raw_at, raw = {}, 0
    for turn in range(steps):
        raw += len(json.dumps(message(turn, msg_bytes)))
        if turn + 1 in points:
            raw_at[turn + 1] = raw
    latency_at = {str(s): _around(latencies, s) for s in LATENCY_POINTS if s <= steps}
    out: dict[str, Any] = {
        "step_ms": summarize_ms(latencies),
        "steps_per_s": round(steps / m.wall_s, 2),
        "latency_at": latency_at,
        "raw_message_bytes": raw,
        **m.facts(steps, "step"),
    }
    if "10" in latency_at:
        base = latency_at["10"]["window_median_ms"]
        out["latency_growth"] = {
            p: round(at["window_median_ms"] / base, 3) for p, at in latency_at.items() if base
        }
    if stored.get(steps) is not None:  # the store can tell a thread's bytes
        out.update(_bytes_figures({p: int(b or 0) for p, b in stored.items()}, raw_at, low))
    return out


def _bytes_figures(stored: dict[int, int], raw_at: dict[int, int], low: int) -> dict[str, Any]:
    """Bytes after chosen steps, their ratio to the raw messages, the growth exponent."""
    steps = max(stored)
    final = stored[steps]
    exponent = (
        (math.log(final) - math.log(stored[low])) / (math.log(steps) - math.log(low))
        if steps > low and stored[low] > 0
        else None
    )
    return {
        "bytes_after_step": {str(s): stored[s] for s in BYTES_POINTS if s in stored},
        "stored_to_raw_at": {
            str(s): round(stored[s] / raw_at[s], 3) for s in BYTES_POINTS if s in stored
        },
        "stored_bytes_final": final,
        "stored_to_raw": round(final / raw_at[steps], 3),
        "growth_exponent": round(exponent, 3) if exponent is not None else None,
    }
