"""BeamWeaver's benchmark database: created fresh and migrated once per `python -m bench` run.

`PostgresCheckpointer` stores through Django models, so its tables come from the
project's migrations. They go into a database of their own on the benchmark server
(`pg.bw_dsn()`, default `bench_bw`), recreated each run so every run starts from the same
empty tables, as LangGraph's schemas do.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

from bench import pg
from bench.env import ROOT


def missing_reason() -> str | None:
    """Why BeamWeaver's Postgres workloads cannot run from this tree, or `None`."""
    if importlib.util.find_spec("beamweaver_core.checkpoint.postgres") is None:
        return "PostgresCheckpointer not available"
    return None


def worker_env() -> dict[str, str]:
    """Variables that point the worker's Django settings at the benchmark database."""
    return {
        "DATABASE_URL": pg.bw_dsn(),
        "DJANGO_SETTINGS_MODULE": "beamweaver_core.settings",
        "LOG_LEVEL": "WARNING",
        "BEAMWEAVER_LOG_LEVEL": "WARNING",
    }


def prepare() -> str | None:
    """Recreate and migrate the database; returns why that failed, or `None`."""
    reason = missing_reason()
    if reason is not None:
        return reason
    pg.recreate_database(pg.bw_dsn())
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT,
        env={**os.environ, **worker_env()},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        return f"PostgresCheckpointer not available: migrate failed ({tail[0][:160]})"
    return None
