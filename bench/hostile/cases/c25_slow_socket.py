"""Case 25: one inbox socket that never reads while 500 interrupts arrive in 10 s (quick:
150 in 5 s), next to 4 healthy inbox sockets.

daphne and one worker in `redis` mode on a throwaway Redis. Runs that pause at once are
queued at 50 per second; each pause hints every open inbox, whose consumer renders the
row and writes it to its socket. The slow socket stops taking bytes off TCP after one
frame, so what the server writes to it backs up in daphne (the channel layer is drained
by the consumer, which never blocks on a client). RSS of daphne and the worker is
sampled throughout, the Redis keys of the layer (LLEN / ZCARD) at the end of the burst.
Then the slow socket reads again. Checks: daphne's RSS growth stays under a bound (64 MiB
plus 64 KiB per event), every healthy socket saw every new row, the slow socket's page
converges to Postgres (its last pending count equals Postgres', whether it caught up or
was closed and got a fresh snapshot on reconnect), healthy sockets' pages too. Figures:
healthy push p50/p99 (interrupt committed → frame), RSS, layer backlog, the slow socket's
fate (frames caught up or reconnected).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench import pg
from bench.hostile import realtime
from bench.hostile.case import Case, Options, Outcome
from bench.hostile.sockets import first_seen, frames, last_pending
from bench.live import load
from bench.stats import summarize_ms

CREATED = "SELECT id, extract(epoch FROM created_at)::float8 FROM bw_review_item WHERE id > %s"


def run(options: Options) -> Outcome:
    n, seconds = (150, 5.0) if options.quick else (500, 10.0)
    healthy = 4  # every open inbox renders each hint: 5 sockets x 50/s already fill 2 cores
    checks: dict[str, bool] = {}
    figures: dict[str, Any] = {}
    with realtime.redis_stack(keep=options.keep) as (stack, redis):
        url = stack.database_url
        realtime.make_pending(stack, 10, "warm")
        last_id = load.count(url, "SELECT coalesce(max(id), 0) FROM bw_review_item")
        with realtime.inbox_fleet(stack, healthy + 1, slow=1) as fleet:
            figures["sockets_open_at_start"] = f"{fleet.wait_ready()}/{healthy + 1}"
            rss = realtime.RssSampler(stack.server.pids()).start()
            _, behind = asyncio.run(load.queue_runs_paced(n, n / seconds, "burst"))
            committed = load.wait_for_count(
                url, "SELECT count(*) FROM bw_review_item WHERE id > %s", n, 120.0, (last_id,)
            )
            backlog = redis.keys("*")
            with pg.connect(url) as conn:
                rows = conn.execute(CREATED, (last_id,)).fetchall()
            wanted = {(s, r[0]) for r in rows for s in range(1, healthy + 1)}
            deadline = time.monotonic() + 150
            while time.monotonic() < deadline and wanted - set(first_seen(fleet.events())):
                time.sleep(0.5)
            slow_before = len([f for f in frames(fleet.events()) if f[2] == 0])
            fleet.resume_reading()
            pending_now = load.count(url, load.PENDING)
            realtime.wait_converged(fleet, healthy + 1, pending_now, 90.0)
            memory = rss.stop()
            events = fleet.stop()
            daphne_log = (stack.work_dir / "daphne.log").read_text(errors="replace")
        seen = first_seen(events)
        push = [
            seen[(s, i)] - created
            for i, created in rows
            for s in range(1, healthy + 1)
            if (s, i) in seen
        ]
        missing = len(wanted - set(seen))
        shown = last_pending(events)
        slow_frames = [f for f in frames(events) if f[2] == 0]
        slow_closes = [e for e in events if e[0] == "close" and e[2] == 0]
        growth = memory["daphne"]["peak_mib"] - memory["daphne"]["start_mib"]
        bound = 64 + n * 64 / 1024
        figures.update(
            {
                "interrupts": f"{len(rows)}/{n} committed ({committed} counted)",
                "queued_per_s": round(n / seconds, 1),
                "generator_behind_ms": round(behind * 1000, 1),
                "healthy_sockets": healthy,
                "healthy_push_ms": summarize_ms(push),
                "healthy_frames_missing": f"{missing}/{len(wanted)}",
                "rss_mib": memory,
                "daphne_rss_growth_mib": round(growth, 1),
                "daphne_rss_bound_mib": round(bound, 1),
                "layer_keys_at_end_of_burst": dict(sorted(backlog.items())[:10]),
                "slow_frames_while_not_reading": slow_before,
                "slow_frames_total": len(slow_frames),
                "slow_socket_closed": len(slow_closes),
                "pending_in_postgres": pending_now,
                "pending_shown_by_slow": shown.get(0),
                "healthy_socket_closes": sum(
                    1 for e in events if e[0] == "close" and 0 < e[2] <= healthy
                ),
                "inbox_push_failures_logged": daphne_log.count("Inbox push failed"),
                "healthy_pages_converged": f"{sum(1 for s in range(1, healthy + 1) if shown.get(s) == pending_now)}/{healthy}",
            }
        )
        checks["committed every interrupt"] = len(rows) == n
        checks["daphne RSS bounded"] = growth < bound
        checks["healthy sockets saw every row"] = missing == 0
        checks["slow socket resynced"] = shown.get(0) == pending_now
        checks["healthy pages converged"] = all(
            shown.get(s) == pending_now for s in range(1, healthy + 1)
        )
    return Outcome(25, CASE.title, all(checks.values()), figures, checks)


CASE = Case(25, "Slow websocket consumer, 500 events in 10 s", run, budget_s=300)
