"""The big database: a million checkpointed threads, a hundred thousand pending items.

Built once and kept (`bench_scale` on the benchmark server, or `BENCH_SCALE_DSN`): its
database comment holds a marker (`FIXTURE_VERSION`, the sizes, `complete`), so a re-run
that finds a complete fixture of the same version and sizes only applies new migrations
to it (as a deployment would) instead of rebuilding. A build:

1. clones the migrated template database (`bench.live.database`) into `bench_scale`;
2. writes, through the runtime (`bench.scale.sample`), one template thread per graph and
   state (paused on its review; approved and run to its end) and a sample of `SAMPLE`
   more threads;
3. clones the templates in bulk (`bench.scale.bulk`) until the database holds `threads`
   threads of which `pending` wait on a pending review item: every tenth thread from
   the oldest on is paused, the rest were approved and completed; graphs, customers and
   orders vary with the thread's number; creation times are spread over `SPAN` ending now;
4. `VACUUM ANALYZE`s every table (this server runs with autovacuum off; a production
   server's autovacuum would have done the same).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from psycopg import sql

from bench import pg
from bench.env import ROOT
from bench.live import database as live_database
from bench.live.session import server_env

logger = logging.getLogger("bench.scale")

FIXTURE_VERSION = 1
"""Bump when what a build writes changes (graphs, mix, templates): the next run rebuilds."""
DATABASE = "bench_scale"
THREADS = 1_000_000
PENDING = 100_000
SAMPLE = 300
"""Threads written through the runtime besides the templates (a tenth of them paused)."""
SPAN = timedelta(days=30)
BATCH = 20_000


def dsn(threads: int = THREADS, pending: int = PENDING) -> str:
    """The fixture of these sizes: `bench_scale` for the published ones (or
    `BENCH_SCALE_DSN`), `bench_scale_<threads>_<pending>` for others (`--quick`), so a
    small build never replaces the big one."""
    if (threads, pending) == (THREADS, PENDING):
        return os.environ.get("BENCH_SCALE_DSN") or pg.with_database(pg.dsn(), DATABASE)
    return pg.with_database(pg.dsn(), f"{DATABASE}_{threads}_{pending}")


def env(url: str) -> dict[str, str]:
    """What a process of the big database (or of its empty twin) runs with."""
    from bench.scale.graphs import GRAPHS

    return {**os.environ, **server_env(url, GRAPHS), "PYTHONPATH": str(ROOT)}


def marker(url: str) -> dict[str, Any] | None:
    """The fixture's marker, or `None` when the database does not exist or has none."""
    with pg.connect(pg.with_database(url, "postgres")) as conn:
        row = conn.execute(
            "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s",
            (pg.database_of(url),),
        ).fetchone()
    if row is None or not row[0]:
        return None
    try:
        found: dict[str, Any] = json.loads(row[0])
    except ValueError:
        return None
    return found


def _set_marker(url: str, value: dict[str, Any]) -> None:
    with pg.connect(pg.with_database(url, "postgres")) as conn:
        conn.execute(
            sql.SQL("COMMENT ON DATABASE {} IS {}").format(
                sql.Identifier(pg.database_of(url)), sql.Literal(json.dumps(value))
            )
        )


def _manage(url: str, *args: str, timeout: float = 7200) -> None:
    done = subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=env(url),
        timeout=timeout,
        check=False,
        stdout=subprocess.PIPE,
        stderr=None,  # progress goes to the caller's stderr
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(args)} failed (exit {done.returncode}): {done.stdout[-400:]}"
        )


def ensure(
    threads: int = THREADS, pending: int = PENDING, *, rebuild: bool = False
) -> dict[str, Any]:
    """The fixture at `dsn()`, built if it is missing, incomplete, of another version or
    other sizes (or `rebuild`); migrated to the tree's migrations either way. Its marker."""
    url = dsn(threads, pending)
    want = {"version": FIXTURE_VERSION, "threads": threads, "pending": pending}
    found = marker(url)
    if (
        not rebuild
        and found is not None
        and found.get("state") == "complete"
        and all(found.get(k) == v for k, v in want.items())
    ):
        logger.info("big database %s is built (%s); applying new migrations", url, found)
        _manage(url, "manage.py", "migrate", "--noinput", "-v", "0")
        return found
    logger.info("building the big database %s: %s threads, %s pending", url, threads, pending)
    started = time.monotonic()
    template = live_database.template_dsn()
    if live_database._template_fingerprint() != live_database.fingerprint():
        reason = live_database.prepare_template()
        if reason is not None:
            raise RuntimeError(reason)
    with pg.connect(pg.with_database(url, "postgres")) as conn:
        name = sql.Identifier(pg.database_of(url))
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(name))
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                name, sql.Identifier(pg.database_of(template))
            )
        )
    _set_marker(url, {**want, "state": "building"})
    _manage(url, "-m", "bench.scale", "rows", "--threads", str(threads), "--pending", str(pending))
    done = {
        **want,
        "state": "complete",
        "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "build_s": round(time.monotonic() - started, 1),
        "load_at_build": list(os.getloadavg()),
    }
    _set_marker(url, done)
    return done


def drop(threads: int = THREADS, pending: int = PENDING) -> None:
    url = dsn(threads, pending)
    with pg.connect(pg.with_database(url, "postgres")) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(pg.database_of(url))
            )
        )


def customer(i: int) -> str:
    """The customer of thread number `i`: one of 1,000, spread evenly."""
    return f"cust-{(i * 7919) % 1000:04d}"


def plan(n: int, paused: int) -> Iterator[tuple[int, str, bool]]:
    """(number, graph, decided) of `n` threads of which `paused` are paused, spread evenly
    from the oldest on."""
    from bench.scale.graphs import TOOLS

    graphs = sorted(TOOLS)
    every = n / paused if paused else 0.0
    next_paused = 0.0
    for i in range(n):
        is_paused = paused > 0 and i >= next_paused
        if is_paused:
            next_paused += every
        yield i, graphs[i % len(graphs)], not is_paused


def write_rows(threads: int, pending: int) -> dict[str, int]:
    """Steps 2 to 4 of a build, in a Django process configured on the fixture database."""
    from bench.scale import bulk, recipe, sample
    from bench.scale.graphs import TOOLS

    who = sample.people()
    templates = {}
    for graph in sorted(TOOLS):
        for decided in (False, True):
            tid = sample.real_thread(
                graph, "cust-9999", f"ord-9{len(templates):06d}", decided=decided, who=who
            )
            templates[recipe.kind(graph, decided)] = tid
    real = list(plan(SAMPLE, SAMPLE // 10))
    for i, graph, decided in real:
        sample.real_thread(graph, customer(i), f"ord-s{i:06d}", decided=decided, who=who)
    real_pending = sum(1 for *_, d in real if not d) + len(TOOLS)
    n = max(0, threads - SAMPLE - len(templates))
    paused = max(0, pending - real_pending)
    from django.db import connection

    connection.ensure_connection()
    conn = connection.connection  # autocommit, as Django keeps it outside transactions
    bulk.prepare(conn)
    for tid in templates.values():
        bulk.capture(conn, tid)
    statements = {name: bulk.insert_statements(conn, name) for name in templates}
    times = bulk.template_times(conn)
    first = bulk.reserve_item_ids(conn, n)
    if conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()[0]:
        # Rows cloned from checked templates reference rows of the same batch: skip the
        # per-row foreign key triggers, as pg_restore --disable-triggers does.
        conn.execute("SET session_replication_role = replica")
    end = datetime.now(UTC) - timedelta(minutes=5)
    start = end - SPAN
    step = SPAN / max(1, n)
    batch: list[bulk.Clone] = []
    written = 0
    started = time.monotonic()
    for i, graph, decided in plan(n, paused):
        base = recipe.new_base(graph, decided, customer(i), f"ord-{i:07d}", first + i)
        batch.append(bulk.Clone(i, recipe.kind(graph, decided), base, start + step * i))
        if len(batch) == BATCH:
            written += bulk.write(conn, batch, statements, times)
            batch = []
            rate = written / (time.monotonic() - started)
            logger.info("  %d / %d threads cloned (%.0f/s)", written, n, rate)
    written += bulk.write(conn, batch, statements, times)
    conn.execute("RESET session_replication_role")
    logger.info("vacuum analyze")
    for table, _ in bulk.TABLES:
        conn.execute(sql.SQL("VACUUM (ANALYZE) {}").format(sql.Identifier(table)))
    conn.execute("VACUUM (ANALYZE)")
    return {"templates": len(templates), "sample": SAMPLE, "cloned": written}
