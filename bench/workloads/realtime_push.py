"""Workload 7a, realtime push: interrupt committed → websocket frame at a connected inbox.

Against the live server (`bench.live`): runs of a graph that pauses in its first step are
started at `rate` per second for `seconds` (open loop, through the start-run form, as a
page or an API client would), so pauses commit at about that rate. One inbox page (or
`clients` of them) listens on `ws/inbox/` in a process of its own with the reviewer's
session cookie. For every measured review item the latency is the receive time of the
first frame naming its row minus the item's `created_at`, written by the pause's own
transaction just before its COMMIT (the gap to the COMMIT is one audit-row INSERT and
the WAL flush: `commit_gap_ms` bounds it by the audit row's time). Both clocks are this
machine's wall clock.

With `start: "db"` (`redis` mode only) the runs are queued straight in Postgres by this
process instead, and its hint wakes the worker over Redis: the web server then only
pushes (a diagnostic of the push path alone; the start form costs the server about as
much CPU as the push).

Warm-up runs (at 10/s) come first and are left out. Also reported: the achieved rates,
the start POST's latency, start → pause, frames lost, and the server processes' CPU.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from bench import pg
from bench.live import load
from bench.live.spy import ServerProfile
from bench.live.stack import Stack, live_stack
from bench.stats import summarize_ms

DEFAULTS = {
    "mode": "single",
    "rate": 50.0,
    "seconds": 60.0,
    "warmup": 25,
    "clients": 1,
    "drain_s": 30.0,
    "start": "http",
    "spy": "",
    "spy_idle": False,
    "keep": False,
}

_ITEMS = """
SELECT i.id, extract(epoch FROM i.created_at)::float8, i.thread_id,
       (SELECT extract(epoch FROM max(a.at))::float8 FROM bw_review_audit a
         WHERE a.item_id = i.id AND a.action = 'created')
  FROM bw_review_item i
 WHERE i.id > %s
 ORDER BY i.id
"""


def _first_frames(frames: list[Any]) -> dict[tuple[int, int], float]:
    """(socket, item id) → receive time of the first frame naming the item's row."""
    first: dict[tuple[int, int], float] = {}
    for received, socket, ids, _size in frames:
        for item_id in ids:
            first.setdefault((socket, item_id), received)
    return first


def _rate(times: list[float]) -> float | None:
    span = max(times) - min(times) if len(times) > 1 else 0.0
    return round((len(times) - 1) / span, 2) if span > 0 else None


def _measure(stack: Stack, p: dict[str, Any]) -> dict[str, Any]:
    base, reviewer, url = stack.server.base, stack.reviewer, stack.database_url
    warmup = int(p["warmup"])
    asyncio.run(load.start_runs(base, reviewer, warmup, min(10.0, float(p["rate"])), "warm"))
    if load.wait_for_count(url, load.PENDING, warmup, 60) < warmup:
        raise RuntimeError("the warm-up runs did not all pause within 60 s")
    warm_max = load.count(url, "SELECT coalesce(max(id), 0) FROM bw_review_item")
    time.sleep(0.5)

    n = max(1, round(float(p["rate"]) * float(p["seconds"])))
    spy = (
        ServerProfile(stack.server.pids(), Path(p["spy"]), idle=bool(p["spy_idle"])).start()
        if p["spy"]
        else None
    )
    cpu_before = stack.cpu_seconds()
    if p["start"] == "db":
        sent, behind = asyncio.run(load.queue_runs_paced(n, float(p["rate"]), "push"))
    else:
        sent, behind = asyncio.run(
            load.start_runs_paced(base, reviewer, n, float(p["rate"]), "push")
        )
    committed = load.wait_for_count(
        url,
        "SELECT count(*) FROM bw_review_item WHERE id > %s",
        n,
        float(p["drain_s"]),
        (warm_max,),
    )
    with pg.connect(url) as conn:
        rows = conn.execute(_ITEMS, (warm_max,)).fetchall()
    pending = load.count(url, load.PENDING)
    assert stack.listener is not None
    wanted = {(socket, r[0]) for r in rows for socket in range(int(p["clients"]))}
    stack.listener.wait_for(wanted, float(p["drain_s"]))
    cpu_after = stack.cpu_seconds()
    profiles = spy.stop() if spy else []
    listened = stack.listener.stop()
    first = _first_frames(listened["frames"])
    sent_at = {s.ref: s.sent for s in sent if s.ref}
    push: list[float] = []
    missing = 0
    for item_id, created, _thread, _audit in rows:
        for socket in range(int(p["clients"])):
            received = first.get((socket, item_id))
            if received is None:
                missing += 1
            else:
                push.append(received - created)
    cpu = {k: round(cpu_after[k] - cpu_before[k], 2) for k in cpu_before}
    created_times = [r[1] for r in rows]
    return {
        "mode": p["mode"],
        "start": p["start"],
        "push_ms": summarize_ms(push),
        "interrupts": {
            "started": n,
            "start_refused": sum(1 for s in sent if s.status != 302),
            "committed": len(rows),
            "not_committed_in_time": n - committed,
            "frames_missing": missing,
            "pending_at_end": int(pending),
        },
        "rate": {
            "target_per_s": float(p["rate"]),
            "sent_per_s": _rate([s.sent for s in sent]),
            "committed_per_s": _rate(created_times),
            "generator_behind_ms": round(behind * 1000, 2),
        },
        "start_post_ms": summarize_ms([s.latency_s for s in sent]),
        "start_to_pause_ms": summarize_ms([r[1] - sent_at[r[2]] for r in rows if r[2] in sent_at]),
        "commit_gap_ms": summarize_ms([r[3] - r[1] for r in rows if r[3] is not None]),
        "frames": {
            "received": len(listened["frames"]),
            "errors": listened["errors"],
            "bytes_median": sorted(f[3] for f in listened["frames"])[len(listened["frames"]) // 2]
            if listened["frames"]
            else 0,
        },
        "server_cpu_s": cpu,
        "server_cpu_ms_per_interrupt": round(sum(cpu.values()) * 1000 / max(1, len(rows)), 2),
        "profiles": profiles,
    }


def run(engine: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Measure push latency on the live server in `params["mode"]` (`single` / `redis`)."""
    p = {**DEFAULTS, **params}
    hints = p["start"] == "db"
    with live_stack(str(p["mode"]), int(p["clients"]), keep=bool(p["keep"]), hints=hints) as stack:
        return _measure(stack, p)
