"""What the realtime hostile cases (23-26, 50) share: the product's live server in `redis`
mode on a throwaway Redis, paused runs to decide, paced decisions, RSS samples.

Every case runs in a spawned child of the runner, so pointing `BENCH_REDIS_URL` at the
throwaway server here changes nothing outside the case.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from bench import pg
from bench.hostile.redis import ThrowawayRedis
from bench.hostile.sockets import SocketFleet, last_pending
from bench.live import load
from bench.live.session import Reviewer, create_reviewer
from bench.live.stack import Stack, live_stack
from bench.stats import summarize_ms

PENDING_ITEMS = """
SELECT id, interrupt_id, digest FROM bw_review_item WHERE status = 'pending' ORDER BY id
"""
FIRST_PAGE = """
SELECT id FROM bw_review_item WHERE status = 'pending' ORDER BY created_at, id LIMIT 25
"""
DECIDED = "SELECT client_decision_id FROM bw_review_decision WHERE client_decision_id = ANY(%s)"
RESUMED = """
SELECT count(*) FROM bw_review_decision d JOIN bw_run r ON r.id = d.resume_run_id
 WHERE d.client_decision_id = ANY(%s) AND r.status = 'succeeded'
"""


@contextmanager
def redis_stack(*, keep: bool = False) -> Iterator[tuple[Stack, ThrowawayRedis]]:
    """daphne + one worker process on a fresh database of its own and a throwaway Redis;
    this process is configured on the same database and layer (its run hints reach the
    worker)."""
    with ThrowawayRedis() as redis:
        os.environ["BENCH_REDIS_URL"] = redis.url
        # A database of this case's own: other runs on the machine use `bench_rt`.
        os.environ["BENCH_RT_DSN"] = pg.with_database(pg.dsn(), f"hostile_rt_{os.getpid()}")
        with live_stack("redis", 0, keep=keep, hints=True) as stack:
            yield stack, redis


def pending_items(url: str) -> list[dict[str, Any]]:
    with pg.connect(url) as conn:
        rows = conn.execute(PENDING_ITEMS).fetchall()
    return [{"id": r[0], "interrupt_id": r[1], "digest": r[2]} for r in rows]


def first_page(url: str) -> set[int]:
    """The pending items an inbox page shows first (its order, its page size)."""
    with pg.connect(url) as conn:
        return {r[0] for r in conn.execute(FIRST_PAGE).fetchall()}


def make_pending(stack: Stack, n: int, tag: str, rate: float = 20.0, timeout: float = 120.0) -> int:
    """Queue `n` runs of the benchmark graph (each pauses at once); wait until they have."""
    before = load.count(stack.database_url, load.PENDING)
    asyncio.run(load.queue_runs_paced(n, rate, tag))
    return load.wait_for_count(stack.database_url, load.PENDING, before + n, timeout) - before


def reviewers(n: int, tag: str) -> list[Reviewer]:
    """`n` reviewers (the decision rate limit is per reviewer: 20 per 10 s)."""
    return [create_reviewer(f"{tag}-{k}") for k in range(n)]


async def decide_paced(
    base: str, team: list[Reviewer], items: list[dict[str, Any]], rate: float
) -> list[load.Sent]:
    """Approve `items` at `rate` per second (open loop), round-robin over `team`."""
    async with load.client(base) as http:
        sent, _ = await load.paced(
            rate, len(items), lambda i: load.decide(http, team[i % len(team)], base, items[i])
        )
    return sent


async def inbox_pages(base: str, reviewer: Reviewer, seconds: float) -> list[load.Sent]:
    """GET the inbox page twice a second for `seconds`, as its reviewer."""
    out = []
    async with load.client(base) as http:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            sent = time.time()
            response = await http.get("/", headers=reviewer.http_headers(base))
            out.append(load.Sent(sent, time.time(), response.status_code, "inbox"))
            await asyncio.sleep(0.5)
    return out


def durable(sent: list[load.Sent], url: str) -> dict[str, int]:
    """Of the decisions answered 2xx: how many Postgres holds, how many resumed to the end."""
    accepted = [s.ref for s in sent if 200 <= s.status < 300]
    with pg.connect(url) as conn:
        stored = {r[0] for r in conn.execute(DECIDED, (accepted,)).fetchall()}
    return {
        "accepted": len(accepted),
        "stored": len(stored & set(accepted)),
        "lost": len(set(accepted) - stored),
    }


def wait_resumed(sent: list[load.Sent], url: str, timeout: float) -> int:
    accepted = [s.ref for s in sent if 200 <= s.status < 300]
    return load.wait_for_count(url, RESUMED, len(accepted), timeout, (accepted,))


def statuses(sent: list[load.Sent]) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in sent:
        out[str(s.status)] = out.get(str(s.status), 0) + 1
    return dict(sorted(out.items()))


def latency(sent: list[load.Sent]) -> dict[str, float | int]:
    return summarize_ms([s.latency_s for s in sent])


class RssSampler:
    """RSS of some processes every `interval` seconds in a thread, until `stop()`."""

    def __init__(self, pids: dict[str, int], interval: float = 0.5) -> None:
        import psutil

        self.procs = {name: psutil.Process(pid) for name, pid in pids.items()}
        self.samples: list[tuple[float, dict[str, float]]] = []
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> dict[str, float]:
        out = {}
        for name, proc in self.procs.items():
            try:
                out[name] = proc.memory_info().rss / 2**20
            except Exception:
                out[name] = 0.0
        return out

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.samples.append((time.time(), self.sample()))

    def start(self) -> RssSampler:
        self.samples.append((time.time(), self.sample()))
        self._thread.start()
        return self

    def stop(self) -> dict[str, dict[str, float]]:
        """Per process: RSS (MiB) at the start, the peak, at the end."""
        self._stop.set()
        self._thread.join(5)
        self.samples.append((time.time(), self.sample()))
        out = {}
        for name in self.procs:
            values = [s[name] for _, s in self.samples]
            out[name] = {
                "start_mib": round(values[0], 1),
                "peak_mib": round(max(values), 1),
                "end_mib": round(values[-1], 1),
            }
        return out


def ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


def restart_daphne(stack: Stack, timeout: float = 60.0) -> tuple[float, float, float]:
    """SIGTERM the live server's daphne, wait for it to exit, start it again on the same
    port; wall-clock times of the signal, of the exit, and of the login page answering."""
    server = stack.server
    proc = server.processes["daphne"]
    signalled = time.time()
    proc.terminate()
    try:
        proc.wait(timeout)
    except Exception:
        proc.kill()
        proc.wait(5)
    exited = time.time()
    server._spawn("daphne", "serve", "--host", "127.0.0.1", "--port", str(server.port))
    deadline = time.monotonic() + timeout
    while not server._answers():
        if time.monotonic() > deadline or server.processes["daphne"].poll() is not None:
            raise RuntimeError(f"daphne did not come back:\n{server.log_tail('daphne')}")
        time.sleep(0.05)
    return signalled, exited, time.time()


def open_rate_peak(events: list[list[Any]], after: float) -> int:
    """The most socket opens within one second after `after` (how hard the herd hit)."""
    opens = sorted(e[1] for e in events if e[0] == "open" and e[1] >= after)
    most, start = 0, 0
    for end, at in enumerate(opens):
        while at - opens[start] > 1.0:
            start += 1
        most = max(most, end - start + 1)
    return most


def inbox_fleet(stack: Stack, sockets: int, *, slow: int = 0) -> SocketFleet:
    """`sockets` reconnecting inbox pages of the stack's reviewer (`slow` of them never read)."""
    paths = ["/ws/inbox/"] * sockets
    return SocketFleet(
        stack.server.ws_base,
        stack.server.base,
        stack.reviewer.cookie,
        paths,
        stack.work_dir,
        slow=slow,
    )


def wait_converged(fleet: SocketFleet, sockets: int, pending: int, timeout: float) -> int:
    """Wait until every socket's page shows `pending` pending items; how many do."""
    deadline = time.monotonic() + timeout
    while True:
        shown = last_pending(fleet.events())
        done = sum(1 for s in range(sockets) if shown.get(s) == pending)
        if done == sockets or time.monotonic() > deadline:
            return done
        time.sleep(0.5)
