"""Workload 6, the floor: what one durable super-step cannot beat on this server.

Raw psycopg on one autocommit connection, no engine: `INSERT` of a 1 KB JSONB row with its
commit (`synchronous_commit = on`: the commit waits for the WAL fsync), the same with
`synchronous_commit = off` (no wait: what fsync costs), and `SELECT 1` (one round trip).

`step_write` is the floor of a super-step shaped write, the peer's `step_txn_sync` done
the way BeamWeaver writes a step: ONE statement (`WITH ... INSERT`) putting four rows in
three tables (a ~1.2 KB JSONB checkpoint, a ~100 B blob, two ~100 B task writes) and its
commit. Statements are prepared (`prepare_threshold=0`), as the checkpointer's are.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from typing import Any

from psycopg import sql

from bench import pg
from bench.stats import summarize_ms

DEFAULTS = {"n": 2000, "doc_bytes": 1024, "warmup": 100}
SCHEMA = "bench_floor"


_STEP_TABLES = {
    "step_cp": "id bigint PRIMARY KEY, doc jsonb NOT NULL",
    "step_blob": "cp bigint, channel text, blob bytea, PRIMARY KEY (cp, channel)",
    "step_write": "cp bigint, idx int, blob bytea, PRIMARY KEY (cp, idx)",
}
_STEP_WRITE = """
WITH c AS (INSERT INTO step_cp (id, doc) VALUES (%s, %s::jsonb)),
     b AS (INSERT INTO step_blob (cp, channel, blob) VALUES (%s, 'messages', %s))
INSERT INTO step_write (cp, idx, blob) VALUES (%s, 0, %s), (%s, 1, %s)
"""


def document(size: int) -> str:
    """A JSON object of about `size` bytes."""
    rng = random.Random(1)
    doc: dict[str, Any] = {"v": 1, "values": {}}
    while len(json.dumps(doc)) < size:
        doc["values"][f"k{len(doc['values'])}"] = "".join(
            rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(40)
        )
    return json.dumps(doc)


def run(engine: None, params: dict[str, Any]) -> dict[str, Any]:
    p = {**DEFAULTS, **params}
    n, doc = int(p["n"]), document(int(p["doc_bytes"]))
    pg.reset_schema(SCHEMA)
    with pg.connect() as admin:
        admin.execute(
            sql.SQL("CREATE TABLE {} (id bigint PRIMARY KEY, doc jsonb NOT NULL)").format(
                sql.Identifier(SCHEMA, "docs")
            )
        )
        for table, columns in _STEP_TABLES.items():
            admin.execute(
                sql.SQL("CREATE TABLE {} ({})").format(
                    sql.Identifier(SCHEMA, table), sql.SQL(columns)
                )
            )
    next_id = 0
    checkpoint, small = document(1200), b"x" * 100

    def insert(conn: Any) -> None:
        nonlocal next_id
        next_id += 1
        conn.execute("INSERT INTO docs (id, doc) VALUES (%s, %s::jsonb)", (next_id, doc))

    def step_write(conn: Any) -> None:
        nonlocal next_id
        next_id += 1
        i = next_id
        conn.execute(_STEP_WRITE, (i, checkpoint, i, small, i, small, i, small))

    def select_1(conn: Any) -> None:
        conn.execute("SELECT 1").fetchone()

    ops: dict[str, tuple[str, Callable[[Any], None]]] = {
        "insert_commit": ("on", insert),
        "insert_commit_no_fsync_wait": ("off", insert),
        "step_write": ("on", step_write),
        "select_1": ("on", select_1),
    }
    results: dict[str, Any] = {}
    try:
        for name, (sync_commit, op) in ops.items():
            results[name] = _measure_op(op, sync_commit, n, int(p["warmup"]))
    finally:
        pg.drop_schema(SCHEMA)
    return {
        "doc_bytes": len(doc),
        "server_settings": pg.server_facts(),
        "ops": results,
    }


def _measure_op(op: Callable[[Any], None], sync_commit: str, n: int, warmup: int) -> dict[str, Any]:
    def open_conn() -> Any:
        conn = pg.connect(prepare_threshold=0, options=f"-c search_path={SCHEMA}")
        conn.execute(f"SET synchronous_commit = {sync_commit}")
        return conn

    with open_conn() as conn:
        for _ in range(warmup):
            op(conn)
    before = pg.counters(pg.dsn())
    latencies: list[float] = []
    with open_conn() as conn:
        for _ in range(n):
            t0 = time.perf_counter()
            op(conn)
            latencies.append(time.perf_counter() - t0)
    delta = pg.counters_delta(before, pg.counters(pg.dsn()))
    return {
        "synchronous_commit": sync_commit,
        "latency_ms": summarize_ms(latencies),
        "ops_per_s": round(n / sum(latencies), 1),
        "wal_sync_per_op": round(delta["wal_sync"] / n, 3),
        "commits_per_op": round(delta["xact_commit"] / n, 3),
    }
