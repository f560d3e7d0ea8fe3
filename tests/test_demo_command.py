"""The README's run command, `manage.py demo`, as a real process.

With `DATABASE_URL` (here: the test database) it migrates, queues the demo requests, runs
them on in-process workers with the scripted model until each pauses for review, and
serves the inbox. With no `DATABASE_URL` it starts an embedded PostgreSQL under the var
directory and serves from it.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from beamweaver_core.embedded_postgres import stop_server
from beamweaver_core.models import Run
from tests.support.processes import ROOT, database_url_for_children

pytestmark = pytest.mark.processes

# No key: the demo agent must run offline on its scripted model.
_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "BEAMWEAVER_GRAPHS", "REDIS_URL")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def demo(env: dict[str, str], log: Path, *args: str, timeout: float = 180) -> Iterator[str]:
    """Run `manage.py demo`; yield its URL once it prints that it is running."""
    port = free_port()
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), "demo", "--port", str(port), *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        deadline = time.monotonic() + timeout
        while "BeamWeaver is running" not in log.read_text():
            if proc.poll() is not None:
                raise AssertionError(f"demo exited ({proc.returncode}):\n{log.read_text()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"demo did not start in {timeout}s:\n{log.read_text()}")
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def base_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _KEYS}
    env.update(
        DJANGO_SETTINGS_MODULE="beamweaver_core.settings",
        PYTHONPATH=str(ROOT),
        BEAMWEAVER_VAR_DIR=str(tmp_path / "var"),
    )
    return env


def get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=10) as response:  # follows the login redirect
        return response.status, response.read().decode()


@pytest.mark.django_db(transaction=True)
def test_demo_serves_the_inbox_and_its_requests_wait_for_review(tmp_path: Path) -> None:
    env = {**base_env(tmp_path), "DATABASE_URL": database_url_for_children()}
    log = tmp_path / "demo.log"

    with demo(env, log) as url:
        status, page = get(url)
        assert status == 200 and "password" in page.lower()
        deadline = time.monotonic() + 60
        while Run.objects.filter(graph="ops_assistant", status="interrupted").count() < 3:
            assert time.monotonic() < deadline, (
                list(Run.objects.values_list("graph", "status", "error")),
                log.read_text(),
            )
            time.sleep(0.3)

    output = log.read_text()
    assert "Queued 3 demo requests" in output
    assert re.search(r"Password:\s+\S{8,}", output)
    assert not Run.objects.filter(status="failed").exists()


def test_without_database_url_the_demo_starts_an_embedded_postgres(tmp_path: Path) -> None:
    env = base_env(tmp_path)
    env.pop("DATABASE_URL", None)
    pgdata = tmp_path / "pgdata"
    env["BEAMWEAVER_PGDATA"] = str(pgdata)
    log = tmp_path / "demo.log"
    try:
        with demo(env, log, "--no-seed") as url:
            status, page = get(url)
            assert status == 200 and "password" in page.lower()
        assert (pgdata / "PG_VERSION").exists()
    finally:
        stop_server(pgdata)
