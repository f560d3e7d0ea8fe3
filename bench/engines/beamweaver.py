"""BeamWeaver as the workloads drive it: `Graph`, `invoke`/`resume`, our checkpointers.

BeamWeaver has no durability modes: every super-step is committed before the next one
starts (LangGraph's `durability="sync"`). The Postgres store uses `PostgresCheckpointer`
as the product does, through Django configured by `beamweaver_core.settings` with
`DATABASE_URL` pointing at the dedicated benchmark database (`python -m bench` creates and
migrates it, and sets the variables).
"""

from __future__ import annotations

import asyncio
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench import pg
from bench.engines.base import Config, Engine, Outcome, Pending, Store

_ASYNC_THREADS = min(32, (os.cpu_count() or 1) + 4)
"""The size asyncio gives its default executor, where our blocking commits run."""


def _configure_django(pool_size: int | None) -> None:
    if not os.environ.get("DATABASE_URL"):
        raise Pending(
            "BeamWeaver's Postgres workloads need DATABASE_URL set to the benchmark database; "
            "run them through `python -m bench`, which creates, migrates and passes it"
        )
    if pool_size:
        os.environ["BEAMWEAVER_DB_POOL_SIZE"] = str(pool_size)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "beamweaver_core.settings")
    import django

    django.setup()


class _NoStore(Store):
    backend = "none"

    def open(self) -> None:
        return None

    def close(self) -> None:
        pass


class _MemoryStore(Store):
    backend = "memory"

    def __init__(self) -> None:
        self.current: Any = None

    def open(self) -> Any:
        from beamweaver_core.checkpoint import MemoryCheckpointer

        self.current = MemoryCheckpointer()
        return self.current

    def close(self) -> None:
        pass

    def thread_bytes(self, thread_id: str) -> int | None:
        return int(self.current.stored_bytes(thread_id))


class _PostgresStore(Store):
    """`PostgresCheckpointer` on the Django database (pooled, as the settings configure)."""

    backend = "postgres"

    def __init__(self, pool_size: int | None = None) -> None:
        _configure_django(pool_size)
        try:
            from beamweaver_core.checkpoint.postgres import PostgresCheckpointer
        except ImportError as exc:
            raise Pending("PostgresCheckpointer not available") from exc
        self._factory = PostgresCheckpointer
        self.current: Any = None
        self._executor: ThreadPoolExecutor | None = None

    def open(self) -> Any:
        self.current = self._factory()
        return self.current

    def close(self) -> None:
        from django.db import connections

        connections.close_all()
        for conn in connections.all(initialized_only=True):
            close_pool = getattr(conn, "close_pool", None)
            if close_pool is not None:
                close_pool()

    async def aopen(self) -> Any:
        # ainvoke runs our blocking commits with asyncio.to_thread; own that executor (same
        # size as asyncio's default) so aclose can give back each thread's connection.
        self._executor = ThreadPoolExecutor(_ASYNC_THREADS, thread_name_prefix="bench-db")
        asyncio.get_running_loop().set_default_executor(self._executor)
        return self.open()

    async def aclose(self) -> None:
        from django.db import connections

        executor, self._executor = self._executor, None
        if executor is None:
            return
        barrier = threading.Barrier(_ASYNC_THREADS)

        def release() -> None:
            barrier.wait(timeout=10)  # one call per thread, so each closes its own
            connections.close_all()

        loop = asyncio.get_running_loop()
        await asyncio.gather(
            *(loop.run_in_executor(executor, release) for _ in range(_ASYNC_THREADS))
        )
        await loop.run_in_executor(executor, self.close)
        executor.shutdown()

    def forget(self) -> None:
        pg.truncate(pg.bw_dsn(), ("bw_thread", *pg.BEAMWEAVER_TABLES))

    def counters(self) -> dict[str, int]:
        return pg.counters(pg.bw_dsn())

    def storage(self) -> dict[str, Any]:
        return pg.storage(pg.bw_dsn(), pg.BEAMWEAVER_TABLES)

    def thread_bytes(self, thread_id: str) -> int:
        return int(self.current.stored_bytes(thread_id))


class BeamWeaverEngine(Engine):
    name = "beamweaver"

    def __init__(self) -> None:
        from beamweaver_core.graph import END, START, Graph, interrupt

        self.START, self.END = START, END
        self._graph = Graph
        self._interrupt = interrupt

    def builder(self, state_schema: type) -> Any:
        return self._graph(name=state_schema.__name__, state_schema=state_schema)

    def interrupt(self, value: Any) -> Any:
        return self._interrupt(value)

    def store(self, backend: str, tag: str, pool_size: int | None = None) -> Store:
        if backend == "none":
            return _NoStore()
        if backend == "memory":
            return _MemoryStore()
        if backend == "postgres":
            return _PostgresStore(pool_size)
        raise ValueError(f"unknown backend {backend!r}; use none, memory or postgres")

    @staticmethod
    def _outcome(result: Any) -> Outcome:
        interrupts = getattr(result, "interrupts", ())
        return Outcome(result.state, tuple((i.id, i.value) for i in interrupts))

    def invoke(self, graph: Any, input: Any, config: Config) -> Outcome:
        return self._outcome(graph.invoke(input, config))

    def resume(self, graph: Any, answer: Any, config: Config) -> Outcome:
        return self._outcome(graph.resume(answer, config))

    async def ainvoke(self, graph: Any, input: Any, config: Config) -> Outcome:
        return self._outcome(await graph.ainvoke(input, config))

    async def aresume(self, graph: Any, answer: Any, config: Config) -> Outcome:
        return self._outcome(await graph.aresume(answer, config))

    def describe(self) -> dict[str, Any]:
        return {"durability": "every step committed before the next (no modes)"}
