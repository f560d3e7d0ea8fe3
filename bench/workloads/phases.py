"""The shape every workload shares: warm up, forget the warm-up, then measure.

The warm-up runs on its own checkpointer (and connections); its rows are then dropped, so
storage figures and the server's counters cover the timed part only. Counters are read
after the timed part's connections are closed, because a backend reports its statistics
when it closes.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from bench import pg
from bench.engines.base import Store
from bench.profiling import profiled


@dataclass(slots=True)
class Measured:
    """Facts about a timed part, besides the latencies the workload collected itself."""

    wall_s: float
    client_cpu_s: float
    server: dict[str, int] | None
    storage: dict[str, Any] | None
    profile: dict[str, Any] | None

    def facts(self, units: int, unit: str) -> dict[str, Any]:
        """JSON fields: wall and CPU, and the server's counters in total and per `unit`."""
        out: dict[str, Any] = {
            "wall_s": round(self.wall_s, 4),
            "client_cpu_s": round(self.client_cpu_s, 4),
        }
        if self.server is not None:
            out["server"] = self.server
            out[f"server_per_{unit}"] = {k: round(v / units, 3) for k, v in self.server.items()}
        if self.storage is not None:
            out["storage"] = self.storage
        if self.profile is not None:
            out["profile"] = self.profile
        return out


def measure(
    store: Store,
    build: Callable[[Any], Any],
    warm: Callable[[Any], None],
    timed: Callable[[Any], None],
    profile_top: int = 0,
    prepare: Callable[[], None] | None = None,
) -> Measured:
    """Warm up on one checkpointer, forget it, then time `timed(graph)` on a fresh one.

    `prepare` runs after the warm-up is forgotten and before the counters are read (work
    the timed part needs but must not count, e.g. queueing the runs a worker then runs)."""
    warm(build(store.open()))
    store.close()
    store.forget()
    if prepare is not None:
        prepare()
    before = store.counters()
    graph = build(store.open())
    profile = None
    wall0, cpu0 = time.perf_counter(), time.process_time()
    if profile_top:
        _, profile = profiled(lambda: timed(graph), profile_top)
    else:
        timed(graph)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    store.close()
    server = pg.counters_delta(before, store.counters() or {}) if before is not None else None
    return Measured(wall, cpu, server, store.storage(), profile)


async def ameasure(
    store: Store,
    build: Callable[[Any], Any],
    warm: Callable[[Any], Awaitable[None]],
    timed: Callable[[Any], Awaitable[None]],
) -> Measured:
    """`measure` for asyncio workloads (checkpointers from `Store.aopen`)."""
    await warm(build(await store.aopen()))
    await store.aclose()
    store.forget()
    before = store.counters()
    graph = build(await store.aopen())
    wall0, cpu0 = time.perf_counter(), time.process_time()
    await timed(graph)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    await store.aclose()
    server = pg.counters_delta(before, store.counters() or {}) if before is not None else None
    return Measured(wall, cpu, server, store.storage(), None)
