"""Starting real child processes (workers, graph runs) against the tests' database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

from django.db import connection

from tests.support.graphs import TEST_GRAPHS

ROOT = Path(__file__).resolve().parents[2]
# The Redis the multi-process tests share (the machine's server; CI provides one).
REDIS_URL = os.environ.get("BEAMWEAVER_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def database_url_for_children() -> str:
    """A DATABASE_URL for the test database this process uses (unix socket or TCP)."""
    connection.ensure_connection()
    info = connection.connection.info
    user = f"{quote(info.user, safe='')}:{quote(info.password or '', safe='')}"
    if info.host.startswith("/"):
        return f"postgresql://{user}@:{info.port}/{quote(info.dbname)}?host={quote(info.host)}"
    return f"postgresql://{user}@{info.host}:{info.port}/{quote(info.dbname)}"


def child_env(**extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "DATABASE_URL": database_url_for_children(),
        "DJANGO_SETTINGS_MODULE": "beamweaver_core.settings",
        "PYTHONPATH": str(ROOT),
        "BEAMWEAVER_GRAPHS": json.dumps(TEST_GRAPHS),
        "BEAMWEAVER_LOG_LEVEL": "INFO",
    }
    env.update(extra)
    return env


def start_worker(env: dict[str, str], *args: str, **popen: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "beamweaver_worker", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **popen,
    )


def stop(proc: subprocess.Popen[Any]) -> None:
    """Terminate a child process, and kill it if it does not exit within 10 s."""
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)
