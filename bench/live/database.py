"""The live server's database: a fresh clone of a migrated template for every run.

Migrating takes seconds, cloning a fraction of one, so `python -m bench` migrates the
template (`bench_rt_template`) once per run and each realtime run starts from an empty
clone of it (`bench_rt_<pid>`, or `BENCH_RT_DSN`): one database per process, so two
benchmark or hostile runs on the same server never drop each other's database. A run started by hand migrates the template
itself when it is missing or was built from other migrations (the database comment holds
a fingerprint of the migration files).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

from psycopg import sql

from bench import pg
from bench.env import ROOT

RT_DATABASE = f"bench_rt_{os.getpid()}"
TEMPLATE = "bench_rt_template"


def dsn() -> str:
    """The database the live server and the workload's own queries use."""
    return os.environ.get("BENCH_RT_DSN") or pg.with_database(pg.dsn(), RT_DATABASE)


def template_dsn() -> str:
    return pg.with_database(dsn(), TEMPLATE)


def fingerprint() -> str:
    """A digest of every migration file of the project (names and contents)."""
    digest = hashlib.sha256()
    for path in sorted(ROOT.glob("*/migrations/0*.py")):
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _template_fingerprint() -> str | None:
    with pg.connect(pg.with_database(dsn(), "postgres")) as conn:
        row = conn.execute(
            "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s",
            (TEMPLATE,),
        ).fetchone()
    return None if row is None else (row[0] or "")


def prepare_template() -> str | None:
    """Recreate and migrate the template; returns why that failed, or `None`."""
    url = template_dsn()
    pg.recreate_database(url)
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT,
        env={
            **os.environ,
            "DATABASE_URL": url,
            "DJANGO_SETTINGS_MODULE": "beamweaver_core.settings",
            "LOG_LEVEL": "WARNING",
            "BEAMWEAVER_LOG_LEVEL": "WARNING",
        },
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        return f"live server database: migrate failed ({tail[0][:160]})"
    with pg.connect(pg.with_database(dsn(), "postgres")) as conn:
        conn.execute(
            sql.SQL("COMMENT ON DATABASE {} IS {}").format(
                sql.Identifier(TEMPLATE), sql.Literal(fingerprint())
            )
        )
    return None


def fresh() -> str:
    """An empty, migrated database for one run (cloned from the template); its URL."""
    if _template_fingerprint() != fingerprint():
        reason = prepare_template()
        if reason is not None:
            raise RuntimeError(reason)
    name = pg.database_of(dsn())
    with pg.connect(pg.with_database(dsn(), "postgres")) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(TEMPLATE)
            )
        )
    return dsn()


def drop() -> None:
    """Remove the run's database (the template stays for the next run)."""
    name = pg.database_of(dsn())
    with pg.connect(pg.with_database(dsn(), "postgres")) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
