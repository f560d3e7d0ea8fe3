"""Issue 16 point 1, serving cost: server CPU per interrupt with 0, 5, 20 and 100 open inboxes.

One live server (`bench.live`) and one database for every level: for each number of open
inboxes (`levels`), a listener process opens that many `ws/inbox/` sockets with the
reviewer's session (as that many browser tabs would) and waits for their snapshots; then
`per_level` runs of a graph that pauses in its first step are started over HTTP at `rate`
per second (the start form), and the window ends when every pause has committed and every
socket has received a frame naming every new row. The figure is the CPU time (user +
system, from `/proc`, robust to the machine's other load) the server processes used in
that window, divided by the interrupts committed: start request → claim → run to the
pause → review item, audit, notification → the pushes to every open inbox.

`added_ms_per_inbox` is the slope between the 5 and the 100 inbox levels (what each
further open inbox costs per interrupt). The machine's load average is recorded before
and after (the machine is shared; CPU time is what is compared, not wall time).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from bench import pg
from bench.live import load
from bench.live.listener import InboxListener
from bench.live.spy import ServerProfile
from bench.live.stack import Stack, live_stack
from bench.stats import summarize_ms

logger = logging.getLogger(__name__)

DEFAULTS = {
    "mode": "single",
    "levels": [0, 5, 20, 100],
    "rate": 10.0,
    "per_level": 150,
    "warmup": 20,
    "drain_s": 60.0,
    "spy": "",
    "keep": False,
}


def _level(stack: Stack, p: dict[str, Any], inboxes: int, index: int) -> dict[str, Any]:
    url = stack.database_url
    listener = None
    if inboxes:
        listener = InboxListener(
            stack.server.ws_base,
            stack.server.base,
            stack.reviewer.cookie,
            inboxes,
            stack.work_dir / f"frames-{inboxes}.json",
        )
        listener.wait_ready(180)
    try:
        time.sleep(1.0)  # the snapshots' renders are out of the window
        first = load.count(url, "SELECT coalesce(max(id), 0) FROM bw_review_item")
        n = int(p["per_level"])
        spy = None
        if p["spy"]:
            spy = ServerProfile(stack.server.pids(), Path(p["spy"]) / f"inboxes-{inboxes}")
            spy.start()
        cpu_before = stack.cpu_seconds()
        started = time.monotonic()
        sent, behind = asyncio.run(
            load.start_runs_paced(
                stack.server.base, stack.reviewer, n, float(p["rate"]), f"lvl{index}"
            )
        )
        load.wait_for_count(
            url,
            "SELECT count(*) FROM bw_review_item WHERE id > %s",
            n,
            float(p["drain_s"]),
            (first,),
        )
        with pg.connect(url) as conn:
            rows = conn.execute(
                "SELECT id, extract(epoch FROM created_at)::float8 FROM bw_review_item"
                " WHERE id > %s ORDER BY id",
                (first,),
            ).fetchall()
        missing: set[tuple[int, int]] = set()
        push: list[float] = []
        if listener is not None:
            wanted = {(s, r[0]) for r in rows for s in range(inboxes)}
            missing = listener.wait_for(wanted, float(p["drain_s"]))
        cpu_after = stack.cpu_seconds()
        wall = time.monotonic() - started
        profiles = spy.stop() if spy else []
        if listener is not None:
            frames = listener.stop()["frames"]
            seen: dict[tuple[int, int], float] = {}
            for received, socket, ids, _size in frames:
                for item_id in ids:
                    seen.setdefault((socket, item_id), received)
            created = {r[0]: r[1] for r in rows}
            push = [at - created[i] for (_s, i), at in seen.items() if i in created]
    finally:
        if listener is not None:
            listener.__exit__(None, None, None)
    cpu = {k: round(cpu_after[k] - cpu_before[k], 3) for k in cpu_before}
    return {
        "inboxes": inboxes,
        "interrupts": len(rows),
        "start_refused": sum(1 for s in sent if s.status != 302),
        "frames_missing": len(missing),
        "server_cpu_s": cpu,
        "cpu_ms_per_interrupt": round(sum(cpu.values()) * 1000 / max(1, len(rows)), 2),
        "window_s": round(wall, 2),
        "generator_behind_ms": round(behind * 1000, 1),
        "push_ms": summarize_ms(push),
        "profiles": profiles,
    }


def run(engine: Any, params: dict[str, Any]) -> dict[str, Any]:
    p = {**DEFAULTS, **params}
    load_before = os.getloadavg()
    with live_stack(str(p["mode"]), 0, keep=bool(p["keep"])) as stack:
        base, reviewer = stack.server.base, stack.reviewer
        warmup = int(p["warmup"])
        asyncio.run(load.start_runs(base, reviewer, warmup, 10.0, "warm"))
        if load.wait_for_count(stack.database_url, load.PENDING, warmup, 60) < warmup:
            raise RuntimeError("the warm-up runs did not all pause within 60 s")
        levels = []
        for index, inboxes in enumerate(p["levels"]):
            levels.append(_level(stack, p, int(inboxes), index))
            logger.warning("serving cost: %s", json.dumps(levels[-1]))
    by = {str(level["inboxes"]): level for level in levels}
    slope = None
    if "5" in by and "100" in by:
        slope = round((by["100"]["cpu_ms_per_interrupt"] - by["5"]["cpu_ms_per_interrupt"]) / 95, 3)
    return {
        "mode": p["mode"],
        "levels": by,
        "added_ms_per_inbox": slope,
        "machine_load": {"before": load_before, "after": os.getloadavg(), "cpus": os.cpu_count()},
    }
