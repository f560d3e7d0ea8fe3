"""Workload 10, the LangGraph Platform protocol over HTTP, through the official Python SDK
(`langgraph-sdk`), on BeamWeaver's `/lg` and on LangGraph's own server (`langgraph dev`,
in-memory), in this one process, one after the other, on the same machine:

- HITL round trip: `threads.create` → `runs.wait` to the interrupt → `runs.wait` with
  `command.resume` → the end (the `ask` graph, bench/live/protocol_graphs.py, and its
  LangGraph equivalent), `roundtrips` times after `warmup`;
- SSE first event: `runs.stream` of the `linear` graph on a new thread, from the call to
  the first event (`metadata`) and to the first `updates` event (the run has started on a
  worker and finished a step), `streams` times;
- the floor under that round trip: the same number of requests (three) through the same
  SDK, each authenticated and each doing the least the protocol offers (`assistants.get`
  of the graph: the token checked, no run, no thread), timed the same way; and, on
  BeamWeaver, the server's CPU time (daphne's user + system, where its in-process workers
  also run) per round trip and per three floor requests;
- `concurrent` streams at once on one server (BeamWeaver only): that many clients each
  stream a stateless `linear` run to its `end` with the async SDK; the wall time for all,
  each stream's time, and how many did not reach `end`.

BeamWeaver runs as the single-process server (daphne with its in-process workers on a
fresh Postgres database, `bench.live.server`), `langgraph dev` with its defaults. One
default is changed on BeamWeaver: the per-user decision rate limit (`RATE_DECISIONS`, 20
per 10 s), which a single client resuming one run after another can exceed once its round
trip is under half a second; `langgraph dev` has no such limit.

Each server's measurement has a deadline (`deadline_s`): the SDK's `runs.wait` reads a
response that the server keeps alive with heartbeat bytes until the run ends, so its read
timeout never fires on a run that never ends, and a bench once hung there. Past the
deadline the server's row is `{"error": ...}`; leaving the server's context stops the
server, which ends the blocked call in the measuring thread.
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.live import database
from bench.live.langgraph_dev import langgraph_dev
from bench.live.protocol_graphs import GRAPHS
from bench.live.server import LiveServer
from bench.live.session import setup_django
from bench.stats import summarize_ms

DEFAULTS = {"roundtrips": 100, "warmup": 10, "streams": 50, "concurrent": 200, "deadline_s": 480}
SERVER_ENV = {"BEAMWEAVER_RATE_DECISIONS": "1000000/10"}
"""What the benchmark's server changes from the defaults (see above)."""


def _roundtrips(lg: Any, count: int, warmup: int) -> list[float]:
    seconds = []
    for index in range(warmup + count):
        started = time.perf_counter()
        thread_id = lg.threads.create()["thread_id"]
        paused = lg.runs.wait(thread_id, "ask", input={"amount": index})
        assert paused["__interrupt__"], paused
        done = lg.runs.wait(thread_id, "ask", command={"resume": "yes"})
        assert done["log"] == ["finish"], done
        if index >= warmup:
            seconds.append(time.perf_counter() - started)
    return seconds


FLOOR_REQUESTS = 3
"""Requests in one HITL round trip (`threads.create` and two `runs.wait`), so in its floor."""


def _floor(lg: Any, count: int, warmup: int) -> list[float]:
    """`count` times (after `warmup`): three authenticated requests that start nothing."""
    # By its id: `langgraph dev` takes a graph's name as an assistant id for runs, not here.
    assistant_id = lg.assistants.search(graph_id="ask", limit=1)[0]["assistant_id"]
    seconds = []
    for index in range(warmup + count):
        started = time.perf_counter()
        for _ in range(FLOOR_REQUESTS):
            assert lg.assistants.get(assistant_id)["graph_id"] == "ask"
        if index >= warmup:
            seconds.append(time.perf_counter() - started)
    return seconds


def _first_events(lg: Any, count: int) -> dict[str, list[float]]:
    first: list[float] = []
    update: list[float] = []
    for _ in range(count):
        thread_id = lg.threads.create()["thread_id"]
        started = time.perf_counter()
        seen_first = seen_update = None
        for part in lg.runs.stream(thread_id, "linear", input={"log": []}, stream_mode="updates"):
            now = time.perf_counter() - started
            seen_first = now if seen_first is None else seen_first
            if part.event == "updates" and seen_update is None:
                seen_update = now
        assert seen_first is not None and seen_update is not None
        first.append(seen_first)
        update.append(seen_update)
    return {"first": first, "update": update}


async def _concurrent(url: str, token: str, count: int) -> dict[str, Any]:
    from langgraph_sdk import get_client

    lg = get_client(url=url, api_key=token, timeout=300)

    async def one() -> tuple[float, bool]:
        started = time.perf_counter()
        ended = False
        async for part in lg.runs.stream(None, "linear", input={"log": []}, stream_mode="updates"):
            ended = ended or part.event == "end"
        return time.perf_counter() - started, ended

    started = time.perf_counter()
    outcomes = await asyncio.gather(*(one() for _ in range(count)), return_exceptions=True)
    wall = time.perf_counter() - started
    times = [o[0] for o in outcomes if isinstance(o, tuple)]
    return {
        "wall_s": round(wall, 3),
        "stream_ms": summarize_ms(times),
        "not_ended": sum(1 for o in outcomes if not (isinstance(o, tuple) and o[1])),
        "errors": sorted({type(o).__name__ for o in outcomes if isinstance(o, BaseException)}),
    }


def _measure(lg: Any, p: dict[str, Any], cpu: Callable[[], float] | None = None) -> dict[str, Any]:
    """The round trips, their floor and the first events; with `cpu` (the server's CPU
    seconds so far), the server's CPU milliseconds per round trip and per floor."""
    firsts = _first_events(lg, int(p["streams"]))
    count, warmup = int(p["roundtrips"]), int(p["warmup"])
    out: dict[str, Any] = {}
    for key, work in (("roundtrip", _roundtrips), ("floor", _floor)):
        before = cpu() if cpu else 0.0
        seconds = work(lg, count, warmup)
        if cpu:
            spent = cpu() - before  # warm-up included: per measured one, an upper bound
            out[f"server_cpu_ms_per_{key}"] = round(spent * 1000 / (count + warmup), 2)
        out[f"{key}_ms"] = summarize_ms(seconds)
    out["first_event_ms"] = summarize_ms(firsts["first"])
    out["first_update_ms"] = summarize_ms(firsts["update"])
    return out


def _cpu_seconds(pid: int) -> Callable[[], float]:
    """A reader of process `pid`'s CPU seconds (user + system) so far."""
    import psutil

    process = psutil.Process(pid)

    def read() -> float:
        times = process.cpu_times()
        return float(times.user + times.system)

    return read


def _bounded(work: Callable[[], dict[str, Any]], seconds: float) -> dict[str, Any]:
    """`work()`'s result, or an error row when it raised or ran past `seconds`."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = work()
        except Exception as error:  # reported as the row, not raised
            box["result"] = {"error": f"{type(error).__name__}: {error}"}

    thread = threading.Thread(target=target, name="bench-protocol", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        return {"error": f"timed out after {seconds:.0f} s"}
    result: dict[str, Any] = box["result"]
    return result


def reviewer() -> Any:
    """The benchmark's caller: a user with the reviewer permission, read back fresh."""
    from django.contrib.auth.models import Permission, User

    user = User.objects.create(username="bench-protocol")
    user.user_permissions.add(
        Permission.objects.get(codename="review", content_type__app_label="reviews")
    )
    return User.objects.get(pk=user.pk)


def _token() -> str:
    from reviews.models import ApiToken

    return str(ApiToken.objects.issue(reviewer(), "protocol benchmark")[1])


def run(engine: Any, params: dict[str, Any]) -> dict[str, Any]:
    from langgraph_sdk import get_sync_client

    p = {**DEFAULTS, **params}
    work_dir = Path(tempfile.mkdtemp(prefix="bench-protocol-"))
    out: dict[str, Any] = {"params": p}

    url = database.fresh()
    setup_django(url, None, GRAPHS)
    token = _token()
    try:
        with LiveServer(url, "single", work_dir, graphs=GRAPHS, env=SERVER_ENV) as server:
            lg_url = f"{server.base}/lg"
            deadline = float(p["deadline_s"])
            client = get_sync_client(url=lg_url, api_key=token)
            cpu = _cpu_seconds(server.pids()["daphne"])
            out["beamweaver"] = _bounded(lambda: _measure(client, p, cpu), deadline)
            if int(p["concurrent"]) and "error" not in out["beamweaver"]:
                out["beamweaver"]["concurrent"] = _bounded(
                    lambda: asyncio.run(
                        asyncio.wait_for(_concurrent(lg_url, token, int(p["concurrent"])), deadline)
                    ),
                    deadline + 10,
                )
    finally:
        from django.db import connections

        connections.close_all()
        database.drop()

    started = time.perf_counter()
    with langgraph_dev(work_dir) as base:
        out["langgraph_start_s"] = round(time.perf_counter() - started, 1)
        dev_client = get_sync_client(url=base, api_key="unused")
        out["langgraph"] = _bounded(lambda: _measure(dev_client, p), float(p["deadline_s"]))
    return out
