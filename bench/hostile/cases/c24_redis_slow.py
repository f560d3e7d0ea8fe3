"""Case 24: Redis slow, not down (`CLIENT PAUSE 10000 ALL`; quick: 3 s).

daphne and one worker in `redis` mode on a throwaway Redis, reviewers approving paused
runs at a steady rate (open loop) for 5 s before, during and 5 s after a pause of every
Redis client. A decision touches Redis twice (the rate-limit counter, with a 0.25 s
socket timeout that fails open, and the after-commit hints, which never block the
request), so the pause may cost each decision up to that timeout and no more. Checks:
decision p99 during the pause under the budget (1 s), no pile-up (requests in flight at
once stay under one second's worth of arrivals plus the pool), 0 5xx, 0 lost, every
accepted decision resumed. Figures: decision latency before / during / after, the most
requests in flight, how long after the pause latency was back to baseline.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench.hostile import realtime
from bench.hostile.case import Case, Options, Outcome
from bench.live import load
from bench.stats import percentile

BUDGET_P99_MS = 1000.0


def _in_flight(sent: list[load.Sent]) -> int:
    """The most requests sent and not yet answered at one moment."""
    edges = sorted([(s.sent, 1) for s in sent] + [(s.done, -1) for s in sent])
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


def run(options: Options) -> Outcome:
    pause_s = 3.0 if options.quick else 10.0
    rate = 10.0 if options.quick else 20.0
    around_s = 5.0
    n = int(rate * (pause_s + 2 * around_s))
    checks: dict[str, bool] = {}
    figures: dict[str, Any] = {}
    with realtime.redis_stack(keep=options.keep) as (stack, redis):
        url, base = stack.database_url, stack.server.base
        paused = realtime.make_pending(stack, n, "setup", rate=25.0, timeout=240.0)
        items = realtime.pending_items(url)[:n]
        team = realtime.reviewers(max(4, int(rate)), "r24")

        async def scenario() -> tuple[list[load.Sent], float]:
            deciding = asyncio.create_task(realtime.decide_paced(base, team, items, rate))
            await asyncio.sleep(around_s)
            paused_at = await asyncio.to_thread(redis.pause, int(pause_s * 1000))
            return await deciding, paused_at

        sent, paused_at = asyncio.run(scenario())
        ends = paused_at + pause_s
        before = [s for s in sent if s.sent < paused_at]
        during = [s for s in sent if paused_at <= s.sent < ends]
        after = [s for s in sent if s.sent >= ends]
        baseline_p99 = percentile([s.latency_s for s in before], 99) if before else 0.0
        slow_after = [s.sent - ends for s in after if s.latency_s > max(0.2, 2 * baseline_p99)]
        kept = realtime.durable(sent, url)
        resumed = realtime.wait_resumed(sent, url, 60.0)
        during_p99 = percentile([s.latency_s for s in during], 99) if during else 0.0
        most = _in_flight(sent)
        figures.update(
            {
                "pause_s": pause_s,
                "rate_per_s": rate,
                "paused_runs_set_up": paused,
                "decisions": f"{len(sent)} ({len(during)} sent during the pause)",
                "statuses": realtime.statuses(sent),
                "decision_ms_before": realtime.latency(before),
                "decision_ms_during_pause": realtime.latency(during),
                "decision_ms_after": realtime.latency(after),
                "decision_p99_ms_during_pause": realtime.ms(during_p99),
                "most_in_flight": most,
                "slow_after_pause_until_s": round(max(slow_after), 2) if slow_after else 0.0,
                "decisions_lost": f"{kept['lost']}/{kept['accepted']} accepted",
                "resumed": f"{resumed}/{kept['accepted']}",
            }
        )
        checks[f"p99 during pause < {BUDGET_P99_MS:.0f} ms"] = during_p99 * 1000 < BUDGET_P99_MS
        checks["no pile-up"] = most <= int(rate) + 10
        checks["0 5xx"] = not any(s.status >= 500 for s in sent)
        checks["all 2xx"] = kept["accepted"] == len(sent)
        checks["0 lost decisions"] = kept["lost"] == 0
        checks["every accepted decision resumed"] = resumed == kept["accepted"]
        time.sleep(0.1)
    return Outcome(24, CASE.title, all(checks.values()), figures, checks)


CASE = Case(24, "Redis slow (CLIENT PAUSE)", run, budget_s=240)
