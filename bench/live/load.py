"""The load side of the realtime workloads: paced (open-loop) requests, the run starts and
decisions a browser would POST, and waiting on Postgres for what they caused.

Open loop: request `i` is sent at `t0 + i / rate` whether or not earlier ones were
answered, so a slow server meets the same arrival rate instead of slowing the generator
down (closed-loop clients hide queueing).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

from bench import pg
from bench.live.graphs import GRAPH_NAME
from bench.live.session import Reviewer

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Sent:
    """One request: when it left (wall clock), when its answer came, what it answered."""

    sent: float
    done: float
    status: int
    ref: str
    """What the request names: the new run's thread id, or the client decision id."""

    @property
    def latency_s(self) -> float:
        return self.done - self.sent


async def paced(
    rate: float, count: int, send: Callable[[int], Awaitable[T]]
) -> tuple[list[T], float]:
    """Start `send(i)` for `i < count` at `rate` per second; their results, and how far
    (seconds) the schedule ever fell behind (the generator's own lateness)."""
    loop = asyncio.get_running_loop()
    start = loop.time() + 0.05
    tasks: list[asyncio.Task[T]] = []
    behind = 0.0
    for i in range(count):
        delay = start + i / rate - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        else:
            behind = max(behind, -delay)
        tasks.append(asyncio.create_task(send(i)))  # type: ignore[arg-type]
    return list(await asyncio.gather(*tasks)), behind


def client(base: str) -> httpx.AsyncClient:
    """A keep-alive HTTP/1.1 client of the live server (redirects are not followed)."""
    return httpx.AsyncClient(
        base_url=base,
        timeout=60,
        follow_redirects=False,
        limits=httpx.Limits(max_connections=64, max_keepalive_connections=64),
    )


async def start_run(http: httpx.AsyncClient, reviewer: Reviewer, base: str, topic: str) -> Sent:
    """POST the start-run form for the benchmark graph (what the "Start a run" page does);
    the answer redirects to the new thread's page."""
    data = {"graph": GRAPH_NAME, "input_json": json.dumps({"topic": topic})}
    sent = time.time()
    response = await http.post("/runs/new/", data=data, headers=reviewer.http_headers(base))
    done = time.time()
    location = response.headers.get("location", "")
    thread_id = location.rstrip("/").rsplit("/", 1)[-1] if "/threads/" in location else ""
    return Sent(sent, done, response.status_code, thread_id)


async def decide(
    http: httpx.AsyncClient,
    reviewer: Reviewer,
    base: str,
    item: dict[str, Any],
    client_id: str | None = None,
) -> Sent:
    """POST "approve" for a pending tool-review item, as the item page's htmx form does
    (interrupt id, digest and a client decision id: fresh, or `client_id` to retry the
    same decision); the answer is the panel."""
    client_id = client_id or uuid.uuid4().hex
    data = {
        "interrupt_id": item["interrupt_id"],
        "digest": item["digest"],
        "client_decision_id": client_id,
        "d0-type": "approve",
        "d0-message": "",
    }
    page = f"/items/{item['id']}/"
    headers = reviewer.htmx_headers(base, "decision-panel", page)
    sent = time.time()
    response = await http.post(f"{page}decide/", data=data, headers=headers)
    done = time.time()
    return Sent(sent, done, response.status_code, client_id)


async def queue_run(topic: str) -> Sent:
    """Queue a run of the benchmark graph straight in Postgres (`start_run`, as an API or
    another process would, outside the web server); its hint wakes a worker over Redis."""

    def queue() -> str:
        from beamweaver_core.runtime.service import start_run

        return str(start_run(GRAPH_NAME, {"topic": topic}).thread.pk)

    sent = time.time()
    thread_id = await asyncio.to_thread(queue)
    return Sent(sent, time.time(), 302, thread_id)


async def queue_runs_paced(n: int, rate: float, tag: str) -> tuple[list[Sent], float]:
    """`queue_run` `n` times at `rate` per second."""
    return await paced(rate, n, lambda i: queue_run(f"{tag}-{i}"))


def count(database_url: str, query: str, params: tuple[Any, ...] = ()) -> int:
    with pg.connect(database_url) as conn:
        row = conn.execute(query, params).fetchone()
    return int(row[0]) if row else 0


def wait_for_count(
    database_url: str, query: str, expected: int, timeout: float, params: tuple[Any, ...] = ()
) -> int:
    """Poll `query` (a count) until it reaches `expected` or `timeout` passes; the last count."""
    deadline = time.monotonic() + timeout
    seen = count(database_url, query, params)
    while seen < expected and time.monotonic() < deadline:
        time.sleep(0.1)
        seen = count(database_url, query, params)
    return seen


async def start_runs_paced(
    base: str, reviewer: Reviewer, n: int, rate: float, tag: str
) -> tuple[list[Sent], float]:
    """Start `n` runs of the benchmark graph at `rate` per second; the requests and how
    far the generator fell behind its schedule (seconds)."""
    async with client(base) as http:
        return await paced(rate, n, lambda i: start_run(http, reviewer, base, f"{tag}-{i}"))


async def start_runs(base: str, reviewer: Reviewer, n: int, rate: float, tag: str) -> list[Sent]:
    """Start `n` runs at `rate` per second (setup and warm-up)."""
    sent, _ = await start_runs_paced(base, reviewer, n, rate, tag)
    return sent


PENDING = "SELECT count(*) FROM bw_review_item WHERE status = 'pending'"
