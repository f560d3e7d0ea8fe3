"""LangGraph 1.2 as the workloads drive it, set up the way the peer scripts set it up.

`StateGraph`, `invoke(..., durability=...)`, `Command(resume=...)`. The Postgres store
opens the saver's connection exactly as `PostgresSaver.from_conn_string` does (autocommit,
`prepare_threshold=0`, dict rows) plus a `search_path` to the workload's own schema; the
async store is `AsyncPostgresSaver` over an `AsyncConnectionPool`, as the peer's
concurrency script uses it.
"""

from __future__ import annotations

from typing import Any

from bench import pg
from bench.engines.base import Config, Engine, Outcome, Store


def _saver_kwargs(schema: str) -> dict[str, Any]:
    from psycopg.rows import dict_row

    return {
        "autocommit": True,
        "prepare_threshold": 0,
        "row_factory": dict_row,
        "options": f"-c search_path={schema}",
    }


class _NoStore(Store):
    backend = "none"

    def open(self) -> None:
        return None

    def close(self) -> None:
        pass


class _MemoryStore(Store):
    backend = "memory"

    def open(self) -> Any:
        from langgraph.checkpoint.memory import InMemorySaver

        return InMemorySaver()

    def close(self) -> None:
        pass


class _PostgresStore(Store):
    """`PostgresSaver` (or `AsyncPostgresSaver` over a pool) in schema `lgb_<tag>`."""

    backend = "postgres"

    def __init__(self, tag: str, pool_size: int | None) -> None:
        self.schema = f"lgb_{tag}"
        self.pool_size = pool_size or 10
        self._conn: Any = None
        self._pool: Any = None
        pg.reset_schema(self.schema)
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver

        with psycopg.connect(pg.dsn(), **_saver_kwargs(self.schema)) as conn:
            PostgresSaver(conn).setup()

    def open(self) -> Any:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver

        self._conn = psycopg.connect(pg.dsn(), **_saver_kwargs(self.schema))
        return PostgresSaver(self._conn)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    async def aopen(self) -> Any:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from psycopg_pool import AsyncConnectionPool

        self._pool = AsyncConnectionPool(
            pg.dsn(),
            min_size=self.pool_size,
            max_size=self.pool_size,
            kwargs=_saver_kwargs(self.schema),
            open=False,
        )
        await self._pool.open(wait=True)
        return AsyncPostgresSaver(conn=self._pool)

    async def aclose(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    def forget(self) -> None:
        pg.truncate(pg.dsn(), pg.LANGGRAPH_TABLES, self.schema)

    def counters(self) -> dict[str, int]:
        return pg.counters(pg.dsn())

    def storage(self) -> dict[str, Any]:
        return pg.storage(pg.dsn(), pg.LANGGRAPH_TABLES, self.schema)

    def thread_bytes(self, thread_id: str) -> int:
        from psycopg import sql

        parts = [
            sql.SQL(
                "(SELECT coalesce(sum(pg_column_size(x.*)), 0) FROM {} x WHERE thread_id = %(t)s)"
            ).format(sql.Identifier(self.schema, table))
            for table in pg.LANGGRAPH_TABLES
        ]
        query = sql.SQL("SELECT ") + sql.SQL(" + ").join(parts)
        with pg.connect() as conn:
            return int(conn.execute(query, {"t": thread_id}).fetchone()[0])

    def teardown(self) -> None:
        self.close()
        pg.drop_schema(self.schema)


class LangGraphEngine(Engine):
    name = "langgraph"

    def __init__(self, durability: str = "async") -> None:
        from langgraph.graph import END, START, StateGraph
        from langgraph.types import Command, interrupt

        self.START, self.END = START, END
        self.durability = durability
        self._state_graph = StateGraph
        self._command = Command
        self._interrupt = interrupt

    def builder(self, state_schema: type) -> Any:
        return self._state_graph(state_schema)

    def interrupt(self, value: Any) -> Any:
        return self._interrupt(value)

    def store(self, backend: str, tag: str, pool_size: int | None = None) -> Store:
        if backend == "none":
            return _NoStore()
        if backend == "memory":
            return _MemoryStore()
        if backend == "postgres":
            return _PostgresStore(tag, pool_size)
        raise ValueError(f"unknown backend {backend!r}; use none, memory or postgres")

    def _kwargs(self, config: Config) -> dict[str, Any]:
        # Durability only means something with a checkpointer (the peer passes none then).
        return {} if config is None else {"durability": self.durability}

    @staticmethod
    def _outcome(out: dict[str, Any]) -> Outcome:
        pending = out.get("__interrupt__") or ()
        return Outcome(out, tuple((i.id, i.value) for i in pending))

    def invoke(self, graph: Any, input: Any, config: Config) -> Outcome:
        return self._outcome(graph.invoke(input, config, **self._kwargs(config)))

    def resume(self, graph: Any, answer: Any, config: Config) -> Outcome:
        command = self._command(resume=answer)
        return self._outcome(graph.invoke(command, config, **self._kwargs(config)))

    async def ainvoke(self, graph: Any, input: Any, config: Config) -> Outcome:
        return self._outcome(await graph.ainvoke(input, config, **self._kwargs(config)))

    async def aresume(self, graph: Any, answer: Any, config: Config) -> Outcome:
        command = self._command(resume=answer)
        return self._outcome(await graph.ainvoke(command, config, **self._kwargs(config)))

    def describe(self) -> dict[str, Any]:
        return {"durability": self.durability}
