"""The crash and restart cases' setup: a throwaway Postgres cluster (the only one they
fault), daphne and named worker processes on it, the fake tool service, a reviewer, and
the checks every case ends with (decisions applied, effects counted, no forked chain).

    with crash_rig(quick=options.quick, workers=2) as rig:
        threads = rig.start_paused(3, "send_email")
        items = rig.wait_pending(3)
        ...
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.env import ROOT
from bench.hostile import agents, effects
from bench.hostile.postgres import Cluster
from bench.hostile.toolservice import ToolService
from bench.live import load
from bench.live.server import LiveServer, redis_layer
from bench.live.session import Reviewer, create_reviewer, setup_django
from bench.stats import percentile

log = logging.getLogger(__name__)

LEASE_S = 4.0
"""The workers' lease in these cases (heartbeat a quarter of it, poll 0.3 s)."""
SWEEP_S = max(1.0, LEASE_S / 3)
"""How often a worker sweeps expired leases (`beamweaver_core.runtime.worker`)."""
RECOVERY_TARGET_S = LEASE_S + SWEEP_S + 1.0
"""Lease TTL + sweep + claim latency (reliability.md L1)."""

FAST = {
    "BEAMWEAVER_LEASE_SECONDS": str(LEASE_S),
    "BEAMWEAVER_HEARTBEAT_SECONDS": str(LEASE_S / 4),
    "BEAMWEAVER_POLL_SECONDS": "0.3",
    "BEAMWEAVER_RATE_DECISIONS": "100000/10",
    "BEAMWEAVER_LOG_LEVEL": "INFO",
}

CALLS: dict[str, dict[str, Any]] = {
    "send_email": {"to": "ops@example.com", "subject": "hostile", "body": "hello"},
    "wire_funds": {"account": "ACC-1", "amount": 10},
    "fetch_file": {"path": "/tmp/report.txt"},
    "block_loop": {"text": "block"},
}
"""One call of each tool the cases use (`fetch_file` is not reviewed: it runs at once)."""


def wait_until(predicate: Callable[[], Any], timeout: float, what: str, step: float = 0.05) -> Any:
    """Poll `predicate` until it is truthy (its value) or `timeout` passes (raises)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(step)


def spread(values: list[float], digits: int = 2) -> dict[str, Any]:
    """n / p50 / p99 / max of `values` (seconds)."""
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "p50": round(percentile(values, 50), digits),
        "p99": round(percentile(values, 99), digits),
        "max": round(max(values), digits),
    }


@dataclass
class Rig:
    cluster: Cluster
    url: str
    server: LiveServer
    reviewer: Reviewer
    tools: ToolService
    work_dir: Path
    worker_env: dict[str, str]
    spawned: int = 0
    notes: list[str] = field(default_factory=list)

    # -- processes ------------------------------------------------------------------------

    def spawn_worker(
        self, *, threads: int = 1, grace: float = 5.0, wait: bool = True, **env: str
    ) -> str:
        """Start worker `worker-<n>` (its lease owner and application_name); its name."""
        self.spawned += 1
        name = f"worker-{self.spawned}"
        self.server.spawn_worker(name, threads=threads, grace=grace, env={**self.worker_env, **env})
        if wait:
            wait_until(lambda: self.server.worker_ready(name), 60, f"{name} to start", 0.1)
        return name

    def proc(self, name: str) -> subprocess.Popen[bytes]:
        return self.server.processes[name]

    def signal(self, name: str, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc(name).pid, sig)

    def kill(self, name: str) -> None:
        self.signal(name, signal.SIGKILL)
        self.proc(name).wait(10)

    def alive_workers(self) -> list[str]:
        return [n for n, p in self.server.processes.items() if n != "daphne" and p.poll() is None]

    def log_text(self, name: str) -> str:
        path = self.work_dir / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    # -- runs and reviews -----------------------------------------------------------------

    def start_runs(self, count: int, tool: str, tag: str) -> list[str]:
        """Start `count` runs of the ledger agent proposing one `tool` call each."""
        from django.db import connection

        from beamweaver_core.runtime.service import start_run

        # This process holds its connection between calls (no request cycle closes it):
        # after a Postgres restart it is dead, so take a fresh (checked) one.
        connection.close()

        threads = []
        for index in range(count):
            thread = f"{tag}-{index}"
            call = {"name": tool, "args": {**CALLS[tool]}}
            start_run("ledger_agent", agents.agent_input([call]), thread_id=thread)
            threads.append(thread)
        return threads

    def query(self, text: str, *params: Any) -> list[tuple[Any, ...]]:
        with self.cluster.connect("hostile") as conn:
            cursor = conn.execute(text, params or None)
            return cursor.fetchall() if cursor.description else []

    def scalar(self, text: str, *params: Any) -> Any:
        rows = self.query(text, *params)
        return rows[0][0] if rows else None

    def pending_items(self, threads: list[str] | None = None) -> list[dict[str, Any]]:
        rows = self.query(
            "SELECT id, interrupt_id, digest, thread_id, payload_json FROM bw_review_item "
            "WHERE status = 'pending' ORDER BY id"
        )
        items = [
            {"id": r[0], "interrupt_id": r[1], "digest": r[2], "thread": r[3], "payload": r[4]}
            for r in rows
        ]
        return [i for i in items if threads is None or i["thread"] in threads]

    def wait_pending(self, threads: list[str], timeout: float = 60) -> list[dict[str, Any]]:
        """Wait until each of `threads` has a pending review item; those items."""

        def ready() -> list[dict[str, Any]]:
            items = self.pending_items(threads)
            return items if len({i["thread"] for i in items}) == len(threads) else []

        return list(wait_until(ready, timeout, f"{len(threads)} pending reviews", 0.1))

    def decide(self, item: dict[str, Any], client_id: str | None = None) -> int:
        """POST approve for `item` (one request); the HTTP status."""

        async def once() -> int:
            async with load.client(self.server.base) as http:
                sent = await load.decide(
                    http, self.reviewer, self.server.base, item, client_id=client_id
                )
                return sent.status

        return asyncio.run(once())

    def get(self, path: str, timeout: float = 30) -> httpx.Response:
        """GET `path` as the reviewer."""
        with httpx.Client(base_url=self.server.base, timeout=timeout) as http:
            return http.get(path, headers=self.reviewer.http_headers(self.server.base))

    def run_of(self, thread: str, kind: str = "resume") -> tuple[Any, ...] | None:
        """(id, status, lease_owner, attempts, fencing_token) of the thread's latest run."""
        rows = self.query(
            "SELECT id, status, lease_owner, attempts, fencing_token FROM bw_run "
            "WHERE thread_id = %s AND kind = %s ORDER BY created_at DESC LIMIT 1",
            thread,
            kind,
        )
        return rows[0] if rows else None

    def thread_status(self, thread: str) -> str:
        return str(self.scalar("SELECT status FROM bw_thread WHERE id = %s", thread))

    def wait_status(self, thread: str, statuses: tuple[str, ...], timeout: float) -> str:
        return str(
            wait_until(
                lambda: (s := self.thread_status(thread)) in statuses and s,
                timeout,
                f"thread {thread} to become {statuses}",
            )
        )

    def claimed_by(self, thread: str, timeout: float = 30) -> str:
        """Wait until the thread's resume run is running under a lease; the owner."""

        def owner() -> str:
            run = self.run_of(thread)
            return str(run[2]) if run and run[1] == "running" and run[2] else ""

        return str(wait_until(owner, timeout, f"the resume of {thread} to be claimed", 0.02))

    def keys_of(self, thread: str) -> list[str]:
        return [
            r[0]
            for r in self.query("SELECT key FROM bw_tool_execution WHERE thread_id = %s", thread)
        ]

    def wait_effect(self, thread: str, timeout: float = 30) -> None:
        """Wait until the tool service received a call of one of the thread's actions."""
        wait_until(
            lambda: any(self.tools.requests().get(k) for k in self.keys_of(thread)),
            timeout,
            f"the effect of {thread}",
            0.02,
        )

    def wait_effect_started(self, thread: str, timeout: float = 30) -> None:
        """Wait until the ledger recorded one of the thread's tool calls as started."""
        wait_until(lambda: self.keys_of(thread), timeout, f"the tool call of {thread}", 0.02)

    def resumed_elsewhere(self, thread: str, dead: str, timeout: float) -> float:
        """Wait until a worker other than `dead` holds (or finished) the thread's resume
        run; the monotonic time it was first seen."""

        def moved() -> bool:
            run = self.run_of(thread)
            if run is None:
                return False
            return (run[1] == "running" and run[2] not in ("", dead)) or run[1] in (
                "succeeded",
                "interrupted",
            )

        wait_until(moved, timeout, f"another worker to resume {thread}", 0.02)
        return time.monotonic()

    def settle(self, threads: list[str], timeout: float) -> list[str]:
        """Wait (bounded) until every thread completed; the ones that did not, each
        described in `notes` (its runs, review items and decisions)."""
        deadline = time.monotonic() + timeout
        left = list(threads)
        while left and time.monotonic() < deadline:
            left = [t for t in left if self.thread_status(t) != "completed"]
            time.sleep(0.1)
        for thread in left:
            self.notes.append(f"{thread} not completed: {self.describe(thread)}")
        return left

    def describe(self, thread: str) -> dict[str, Any]:
        return {
            "thread": self.thread_status(thread),
            "runs": self.query(
                "SELECT kind, status, attempts, fencing_token, left(error, 200) FROM bw_run "
                "WHERE thread_id = %s ORDER BY created_at",
                thread,
            ),
            "items": self.query(
                "SELECT i.id, i.kind, i.status, d.id, d.outcome, d.resume_run_id "
                "FROM bw_review_item i LEFT JOIN bw_review_decision d ON d.item_id = i.id "
                "WHERE i.thread_id = %s ORDER BY i.id",
                thread,
            ),
        }

    # -- checks ---------------------------------------------------------------------------

    def effects_by_thread(self) -> dict[str, int]:
        """Effects the tool service applied, summed per thread (one logical action each)."""
        applied = self.tools.applied()
        rows = self.query("SELECT key, thread_id FROM bw_tool_execution")
        out: dict[str, int] = {}
        for key, thread in rows:
            out[thread] = out.get(thread, 0) + applied.get(key, 0)
        return out

    def forked_chains(self) -> int:
        """Checkpoints on a main line with two children (LangGraph #8796)."""
        return int(
            self.scalar(
                "SELECT count(*) FROM (SELECT thread_id, parent_id FROM bw_checkpoint "
                "WHERE ns = '' AND parent_id IS NOT NULL GROUP BY thread_id, parent_id "
                "HAVING count(*) > 1) AS forks"
            )
        )

    def decisions(self, threads: list[str]) -> dict[str, int]:
        rows = self.query(
            "SELECT i.thread_id, count(d.id) FROM bw_review_item i "
            "LEFT JOIN bw_review_decision d ON d.item_id = i.id "
            "WHERE i.thread_id = ANY(%s) AND i.kind = 'tool_review' GROUP BY i.thread_id",
            list(threads),
        )
        return {thread: int(n) for thread, n in rows}

    def outcome_unknown_pending(self, thread: str) -> bool:
        return bool(
            self.scalar(
                "SELECT count(*) FROM bw_review_item WHERE thread_id = %s AND status = 'pending' "
                "AND payload_json LIKE '%%outcome_unknown%%'",
                thread,
            )
        )


class Feeder:
    """Keeps at least `backlog` unreviewed `fetch_file` runs queued (a saturating load)
    from a thread of this process, until `stop()`; bounded by `limit` runs in all."""

    def __init__(self, rig: Rig, tag: str, backlog: int = 20, limit: int = 20_000) -> None:
        self.rig, self.tag, self.backlog, self.limit = rig, tag, backlog, limit
        self.started: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._feed, name="feeder", daemon=True)

    def _feed(self) -> None:
        from django.db import connection

        try:
            while not self._stop.is_set() and len(self.started) < self.limit:
                queued = int(self.rig.scalar("SELECT count(*) FROM bw_run WHERE status = 'queued'"))
                if queued < self.backlog:
                    batch = f"{self.tag}-{len(self.started)}"
                    self.started += self.rig.start_runs(10, "fetch_file", batch)
                else:
                    self._stop.wait(0.1)
        except Exception:
            log.exception("feeder stopped")
        finally:
            connection.close()

    def __enter__(self) -> Feeder:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


def completed_between(rig: Rig, start: float, end: float) -> int:
    """Runs that finished successfully between two wall-clock times."""
    return int(
        rig.scalar(
            "SELECT count(*) FROM bw_run WHERE status = 'succeeded' "
            "AND finished_at >= to_timestamp(%s) AND finished_at < to_timestamp(%s)",
            start,
            end,
        )
    )


@contextlib.contextmanager
def crash_rig(
    *,
    workers: int = 2,
    keep: bool = False,
    cluster_settings: dict[str, Any] | None = None,
    server_env: dict[str, str] | None = None,
    app_role: bool = False,
    **worker_env: str,
) -> Iterator[Rig]:
    """A cluster, a migrated database `hostile`, the tool service, daphne and `workers`
    worker processes (`worker-1`...), torn down (and deleted unless `keep`) on exit.
    `app_role`: the server processes connect as an ordinary role `app` (so the superuser
    slots stay free for the harness), not as the superuser."""
    cluster = Cluster.start(**(cluster_settings or {}))
    work_dir = Path(tempfile.mkdtemp(prefix="bw-hostile-"))
    tools = ToolService().start()
    server: LiveServer | None = None
    try:
        url = cluster.create_database("hostile")
        subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), "migrate", "--noinput", "-v", "0"],
            cwd=ROOT,
            env={**os.environ, "DATABASE_URL": url, "LOG_LEVEL": "WARNING"},
            check=True,
            capture_output=True,
            timeout=300,
        )
        layer = redis_layer()
        setup_django(url, layer, agents.GRAPHS)
        # The harness checks and supplies from a few threads: a small pool, so that its
        # connections and the product's fit the cluster together (case 49).
        from beamweaver_core.postgres.pool_size import set_pool_size

        set_pool_size(8)
        reviewer = create_reviewer()
        server_url = url
        if app_role:
            cluster.create_role("app")
            with cluster.connect("hostile") as conn:
                conn.execute("GRANT ALL ON ALL TABLES IN SCHEMA public TO app")
                conn.execute("GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO app")
            server_url = cluster.url("hostile", "app")
        server = LiveServer(server_url, "redis", work_dir, layer, workers=0)
        base_env = {**FAST, effects.EFFECTS_ENV: tools.url, **(server_env or {})}
        server.env.update({**base_env, "BEAMWEAVER_GRAPHS": os.environ["BEAMWEAVER_GRAPHS"]})
        server.start()
        rig = Rig(cluster, url, server, reviewer, tools, work_dir, dict(worker_env))
        for _ in range(workers):
            rig.spawn_worker()
        yield rig
    finally:
        if server is not None:
            for proc in server.processes.values():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGCONT)
            server.stop(timeout=10)
        from django.db import connections

        connections.close_all()
        tools.stop()
        cluster.stop()
        if keep:
            log.info("logs kept in %s", work_dir)
        else:
            shutil.rmtree(work_dir, ignore_errors=True)


def async_client(rig: Rig) -> httpx.AsyncClient:
    return load.client(rig.server.base)


__all__ = [
    "CALLS",
    "FAST",
    "LEASE_S",
    "RECOVERY_TARGET_S",
    "Rig",
    "async_client",
    "crash_rig",
    "spread",
    "wait_until",
]
