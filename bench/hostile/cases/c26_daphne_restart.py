"""Case 26: daphne restarted (SIGTERM) with 200 inbox sockets open (quick: 40).

daphne and one worker in `redis` mode on a throwaway Redis; the sockets reconnect as the
htmx websocket extension does (full-jitter exponential backoff, 0.5 s doubling to 8 s).
Before the restart a reviewer decides some items; their pages stay open in other
reviewers' hands. daphne gets SIGTERM, exits, starts again on the same port; while it is
away runs keep pausing (the worker and Postgres are untouched). After it answers, the
other reviewers press "approve" on the pages they still had (stale: decided by someone
else before the restart). Checks: every socket reconnected, the storm over within 30 s of
daphne answering, every stale approve was
refused (409) and no interrupt has two decisions, every socket's page shows Postgres'
pending count afterwards (resync). Figures: reconnect time p50/p99/max (socket closed →
open again), daphne answering → all open, peak opens per second.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench.hostile import realtime
from bench.hostile.case import Case, Options, Outcome
from bench.hostile.sockets import last_pending, reconnect_gaps
from bench.live import load
from bench.stats import summarize_ms

RECONNECT_BOUND_S = 30.0
TWICE = "SELECT count(*) FROM (SELECT item_id FROM bw_review_decision GROUP BY item_id HAVING count(*) > 1) t"


async def _stale(base: str, team: list[Any], items: list[dict[str, Any]]) -> list[load.Sent]:
    async with load.client(base) as http:
        return list(
            await asyncio.gather(
                *(
                    load.decide(http, team[i % len(team)], base, item)
                    for i, item in enumerate(items)
                )
            )
        )


def run(options: Options) -> Outcome:
    sockets = 40 if options.quick else 200
    checks: dict[str, bool] = {}
    figures: dict[str, Any] = {}
    with realtime.redis_stack(keep=options.keep) as (stack, _redis):
        url, base = stack.database_url, stack.server.base
        realtime.make_pending(stack, 40, "setup")
        first, late = realtime.reviewers(2, "first"), realtime.reviewers(4, "late")
        items = realtime.pending_items(url)[:10]
        with realtime.inbox_fleet(stack, sockets) as fleet:
            figures["sockets_open_at_start"] = f"{fleet.wait_ready()}/{sockets}"
            decided = asyncio.run(realtime.decide_paced(base, first, items, 4.0))
            signalled, exited, answering = realtime.restart_daphne(stack)
            _, _ = asyncio.run(load.queue_runs_paced(5, 5.0, "away"))
            reopened = fleet.wait_open(sockets, RECONNECT_BOUND_S)
            all_open_at = time.time()
            stale = asyncio.run(_stale(base, late, items))
            time.sleep(2.0)
            pending_now = load.count(url, load.PENDING)
            realtime.wait_converged(fleet, sockets, pending_now, 30.0)
            events = fleet.stop()
        gaps = reconnect_gaps(events, signalled)
        shown = last_pending(events)
        converged = sum(1 for s in range(sockets) if shown.get(s) == pending_now)
        twice = load.count(url, TWICE)
        accepted_stale = [s for s in stale if 200 <= s.status < 300]
        peak = realtime.open_rate_peak(events, answering)
        figures.update(
            {
                "daphne_sigterm_to_exit_s": round(exited - signalled, 2),
                "daphne_down_s": round(answering - signalled, 2),
                "sockets_reconnected": f"{reopened}/{sockets}",
                "reconnect_ms": summarize_ms(gaps),
                "daphne_answering_to_all_open_s": round(all_open_at - answering, 2)
                if reopened == sockets
                else None,
                "peak_opens_per_s": peak,
                "decided_before_restart": f"{sum(1 for s in decided if s.status == 200)}/{len(decided)}",
                "stale_approves": f"{len(accepted_stale)}/{len(stale)} accepted",
                "stale_statuses": realtime.statuses(stale),
                "interrupts_decided_twice": twice,
                "pages_showing_postgres_pending": f"{converged}/{sockets}",
            }
        )
        checks["every socket reconnected"] = reopened == sockets
        checks[f"storm done within {RECONNECT_BOUND_S:.0f} s"] = (
            reopened == sockets and all_open_at - answering <= RECONNECT_BOUND_S
        )
        checks["decisions before restart 2xx"] = all(s.status == 200 for s in decided)
        checks["0 stale accepted, all 409"] = all(s.status == 409 for s in stale)
        checks["0 interrupts decided twice"] = twice == 0
        checks["inbox resynced"] = converged == sockets
    return Outcome(26, CASE.title, all(checks.values()), figures, checks)


CASE = Case(26, "daphne restart with 200 sockets", run, budget_s=240)
