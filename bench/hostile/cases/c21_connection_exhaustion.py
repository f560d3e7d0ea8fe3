"""Case 21: Postgres connection exhaustion.

A cluster with a lowered `max_connections`; daphne's pool times out after 2 s. Idle
connections of an ordinary role take every slot left, and daphne's own backends are
terminated, so its pool cannot get a connection. Meanwhile reviewers load the inbox and
POST decisions. Expect: every request answers fast (503 within the pool timeout plus a
margin, never a hang), no decision half-applied (a refused POST leaves no Decision), and
once the connections are released the service answers again and the decisions, posted
again with the same decision ids, resume their runs (ledger 1).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections import Counter
from typing import Any

import httpx

from bench.hostile.case import Case, Options, Outcome
from bench.hostile.rig import Rig, crash_rig, spread, wait_until
from bench.live import load

log = logging.getLogger(__name__)
TITLE = "Connection exhaustion"
POOL_TIMEOUT_S = 2.0
MARGIN_S = 3.0


async def _burst(
    rig: Rig, items: list[dict[str, Any]], ids: dict[int, str], gets: int
) -> list[Any]:
    """`gets` inbox loads and one decision POST per item, all at once: (kind, status, s)."""
    base, reviewer = rig.server.base, rig.reviewer

    async def get(http: httpx.AsyncClient) -> tuple[str, int, float]:
        started = time.monotonic()
        try:
            response = await http.get("/", headers=reviewer.http_headers(base))
            status = response.status_code
        except httpx.HTTPError:
            status = 0
        return "get", status, time.monotonic() - started

    async def post(http: httpx.AsyncClient, item: dict[str, Any]) -> tuple[str, int, float]:
        started = time.monotonic()
        try:
            status = (await load.decide(http, reviewer, base, item, ids[item["id"]])).status
        except httpx.HTTPError:
            status = 0
        return "post", status, time.monotonic() - started

    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        tasks = [get(http) for _ in range(gets)] + [post(http, i) for i in items]
        return list(await asyncio.gather(*tasks))


def run(options: Options) -> Outcome:
    decisions = 3 if options.quick else 6
    gets = 6 if options.quick else 20
    out = Outcome(21, TITLE, False)
    server_env = {"BEAMWEAVER_DB_POOL_TIMEOUT": str(POOL_TIMEOUT_S), "PGAPPNAME": "web"}
    with crash_rig(
        workers=1,
        keep=options.keep,
        cluster_settings={"max_connections": 30, "superuser_reserved_connections": 5},
        server_env=server_env,
        app_role=True,
    ) as rig:
        threads = rig.start_runs(decisions, "send_email", "c21")
        items = rig.wait_pending(threads)
        ids = {i["id"]: uuid.uuid4().hex for i in items}
        before = rig.get("/").status_code
        with rig.cluster.hold_connections(None, database="hostile") as held:
            for _ in range(20):  # the pool reconnects at once: take each freed slot
                if not rig.cluster.terminate("web") and not rig.cluster.backends("web"):
                    break
                rig.cluster.top_up(held, database="hostile")
            exhausted = rig.cluster.free_slots()
            web_backends = rig.cluster.backends("web")
            results = asyncio.run(_burst(rig, items, ids, gets))
            recorded = int(rig.scalar("SELECT count(*) FROM bw_review_decision") or 0)
            accepted_during = sum(1 for k, s, _ in results if k == "post" and 200 <= s < 300)
        released = time.monotonic()
        wait_until(lambda: rig.get("/").status_code == 200, 60, "the inbox to answer again", 0.1)
        recovered = time.monotonic() - released
        again = [rig.decide(i, ids[i["id"]]) for i in items]
        for thread in threads:
            rig.wait_status(thread, ("completed",), 60)
        applied = rig.effects_by_thread()
        counts = rig.decisions(threads)
        latencies = [s for _, _, s in results]
        statuses = Counter(f"{k} {s}" for k, s, _ in results)
        out.checks = {
            "inbox answered before the fault": before == 200,
            "every request answered within pool timeout + margin (no hang)": max(latencies)
            <= POOL_TIMEOUT_S + MARGIN_S,
            "refused requests answered 503": all(s == 503 or 200 <= s < 300 for _, s, _ in results),
            "no half-applied decision (Decisions == POSTs accepted)": recorded == accepted_during,
            "service recovered after release": recovered < 30,
            "retried decisions accepted (same ids)": all(200 <= s < 300 for s in again),
            "one Decision per interrupt": all(counts.get(t) == 1 for t in threads),
            "ledger 1 per logical action": all(applied.get(t) == 1 for t in threads),
        }
        out.figures = {
            "max_connections": 30,
            "connections held": len(held),
            "slots left while held": exhausted,
            "daphne backends while held": web_backends,
            "pool timeout (s)": POOL_TIMEOUT_S,
            "requests during exhaustion": len(results),
            "answers": dict(statuses),
            "latency during exhaustion (s)": spread(latencies),
            "release -> inbox answers (s)": round(recovered, 2),
            "lost decisions": f"{sum(1 for t in threads if counts.get(t) != 1)}/{len(threads)}",
        }
    out.passed = all(out.checks.values())
    return out


CASE = Case(21, TITLE, run, budget_s=150)
