"""Case 50: websocket fan-out, 1,000 idle thread-page sockets over 50 groups on one daphne
(quick: 100) opened at 20 per second, 50 events per second, one slow client, then a daphne restart.

daphne and one worker in `redis` mode on a throwaway Redis. 50 paused threads; each
thread page (`ws/threads/<id>/`, group `thread.<id>`) is open in 20 sockets (quick: 2),
the first of which never reads (case 25). Run events (`run.event`, what a worker sends
as a run progresses: the consumer re-checks the session and the thread's visibility in
Postgres, renders the event row, writes it) are sent to the groups round-robin at 50 per
second for 20 s (quick: 10 s), each numbered so that every socket's frames can be matched
to the send time; the inbox page is fetched twice a second meanwhile. Then daphne gets
SIGTERM and starts again; every socket reconnects.

Checks: daphne's RSS does not grow without bound during the events (under 64 MiB over
its level with the sockets open), the reconnect storm is over within 120 s of daphne
answering, every page resynced (a snapshot after the restart), inbox pages 200. Figures:
RSS per connection, healthy push p50/p99 (event sent → frame), delivered / expected
frames, inbox page latency, reconnect p50/p99/max.
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse
import uuid
from typing import Any

from bench import pg
from bench.hostile import realtime
from bench.hostile.case import Case, Options, Outcome
from bench.hostile.sockets import SocketFleet, frames, reconnect_gaps
from bench.live import load
from bench.stats import summarize_ms

SEQ_BASE = 1_000_000
"""Event numbers start here: far above the real run events a thread page's snapshot shows."""
GROUPS = 50
RATE = 50.0
STORM_BOUND_S = 120.0
OPEN_RATE = 20.0
"""Sockets opened per second at the start (reviewers arriving, not one SYN flood)."""
THREADS = "SELECT id FROM bw_thread ORDER BY created_at LIMIT %s"


def _send_events(threads: list[str], runs: list[str], seconds: float) -> dict[int, float]:
    """`run.event` to each thread's group in turn at RATE per second; seq → send time."""
    from beamweaver_core.runtime.groups import thread_group
    from beamweaver_core.runtime.publish import group_send

    sent: dict[int, float] = {}
    start = time.monotonic()
    for seq in range(SEQ_BASE, SEQ_BASE + int(RATE * seconds)):
        delay = start + (seq - SEQ_BASE) / RATE - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        g = seq % len(threads)
        record = {"seq": seq, "event": "task.end", "node": "act", "ns": "", "data": None}
        sent[seq] = time.time()
        group_send(
            thread_group(threads[g]),
            {"type": "run.event", "thread_id": threads[g], "run_id": runs[g], "event": record},
        )
    return sent


def run(options: Options) -> Outcome:
    per_group = 2 if options.quick else 20
    seconds = 10.0 if options.quick else 20.0
    sockets = GROUPS * per_group
    checks: dict[str, bool] = {}
    figures: dict[str, Any] = {}
    with realtime.redis_stack(keep=options.keep) as (stack, _redis):
        url, base = stack.database_url, stack.server.base
        realtime.make_pending(stack, GROUPS, "fan")
        with pg.connect(url) as conn:
            threads = [r[0] for r in conn.execute(THREADS, (GROUPS,)).fetchall()]
        runs = [str(uuid.uuid4()) for _ in threads]
        # Socket k watches thread k % GROUPS; socket 0 is the slow one.
        paths = [
            f"/ws/threads/{urllib.parse.quote(threads[k % GROUPS], safe='')}/"
            for k in range(sockets)
        ]
        rss = realtime.RssSampler(stack.server.pids())
        before = rss.sample()["daphne"]
        with SocketFleet(
            stack.server.ws_base,
            base,
            stack.reviewer.cookie,
            paths,
            stack.work_dir,
            slow=1,
            open_rate=OPEN_RATE,
            ready_timeout=sockets / OPEN_RATE + 60,
        ) as fleet:
            opened = fleet.wait_ready(sockets / OPEN_RATE + 90)
            time.sleep(2.0)
            with_sockets = rss.sample()["daphne"]
            rss.start()

            async def load_phase() -> tuple[dict[int, float], list[load.Sent]]:
                pages = asyncio.create_task(realtime.inbox_pages(base, stack.reviewer, seconds))
                sent = await asyncio.to_thread(_send_events, threads, runs, seconds)
                return sent, await pages

            sent, pages = asyncio.run(load_phase())
            expected = {
                (k, seq) for seq in sent for k in range(1, sockets) if k % GROUPS == seq % GROUPS
            }
            deadline = time.monotonic() + 60
            count, last = -1, time.monotonic()
            while time.monotonic() < deadline and time.monotonic() - last < 5:
                n = len(fleet.events())
                if n != count:
                    count, last = n, time.monotonic()
                time.sleep(0.5)
            memory = rss.stop()
            fleet.resume_reading()
            signalled, _exited, answering = realtime.restart_daphne(stack)
            reopened = fleet.wait_open(sockets, STORM_BOUND_S)
            storm_s = time.time() - answering
            time.sleep(2.0)
            events = fleet.stop()
        got: dict[tuple[int, int], float] = {}
        for f in frames(events):
            for seq in f[4]:
                got.setdefault((f[2], seq), f[1])
        push = [got[key] - sent[key[1]] for key in expected if key in got]
        snapshot_after = {f[2] for f in frames(events) if f[1] > answering}
        growth = memory["daphne"]["peak_mib"] - with_sockets
        figures.update(
            {
                "sockets": f"{opened}/{sockets} opened over {GROUPS} groups",
                "daphne_rss_mib": {
                    "before": round(before, 1),
                    "with_sockets": round(with_sockets, 1),
                    **memory["daphne"],
                },
                "rss_per_connection_kib": round((with_sockets - before) * 1024 / max(1, opened), 1),
                "events": f"{len(sent)} at {RATE:.0f}/s for {seconds:.0f} s",
                "healthy_frames_delivered": f"{len(push)}/{len(expected)}",
                "healthy_push_ms": summarize_ms(push),
                "inbox_page_ms": realtime.latency(pages),
                "inbox_statuses": realtime.statuses(pages),
                "reconnected": f"{reopened}/{sockets}",
                "storm_s": round(storm_s, 2),
                "reconnect_ms": summarize_ms(reconnect_gaps(events, signalled)),
                "peak_opens_per_s": realtime.open_rate_peak(events, answering),
                "pages_resynced_after_restart": f"{len(snapshot_after)}/{sockets}",
            }
        )
        checks["every socket opened"] = opened == sockets
        checks["daphne RSS bounded"] = growth < 64
        checks["inbox pages 200"] = all(p.status == 200 for p in pages)
        checks[f"storm done within {STORM_BOUND_S:.0f} s"] = (
            reopened == sockets and storm_s <= STORM_BOUND_S
        )
        checks["every page resynced"] = len(snapshot_after) == sockets
    return Outcome(50, CASE.title, all(checks.values()), figures, checks)


CASE = Case(50, "WebSocket fan-out: 1,000 sockets, 50 groups", run, budget_s=420)
