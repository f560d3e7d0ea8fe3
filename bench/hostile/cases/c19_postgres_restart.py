"""Case 19: Postgres restarted in immediate mode mid-run and mid-decision.

Two workers and daphne on a throwaway cluster; per round, N paused threads get their
approvals POSTed concurrently (paced over about a second) while the cluster is restarted
with `pg_ctl -m immediate restart` shortly after the first POST leaves. Each reviewer
retries a failed POST (5xx or a dropped connection) with the same client decision id
until it is accepted, bounded in time. Expect: every in-flight decision either
committed or answered with a retryable error; one Decision per interrupt; workers
reconnect by themselves (same processes); every run resumes (0 lost, ledger 1 each).
Figures: Postgres accepting again -> first accepted decision and first resumed run.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections import Counter
from typing import Any

import httpx

from bench.hostile.case import Case, Options, Outcome
from bench.hostile.rig import Rig, crash_rig, spread
from bench.live import load

log = logging.getLogger(__name__)
TITLE = "Postgres restart mid-run and mid-decision"
RETRY_FOR_S = 40.0


async def _decide_all(
    rig: Rig, items: list[dict[str, Any]], restart_after: float
) -> tuple[list[dict[str, Any]], float]:
    """Every item approved (retrying); per item its attempts, statuses and accept time;
    and the wall time Postgres accepted connections again after the restart."""
    base, reviewer = rig.server.base, rig.reviewer
    ready: dict[str, float] = {}

    def restart() -> None:
        time.sleep(restart_after)
        rig.cluster.restart()
        ready["at"] = time.time()

    restarter = threading.Thread(target=restart, daemon=True)

    async def one(http: httpx.AsyncClient, item: dict[str, Any]) -> dict[str, Any]:
        client_id, statuses = uuid.uuid4().hex, []
        deadline = time.monotonic() + RETRY_FOR_S
        while time.monotonic() < deadline:
            try:
                status = (await load.decide(http, reviewer, base, item, client_id)).status
            except httpx.HTTPError:
                status = 0
            statuses.append(status)
            if 200 <= status < 300 or status == 409:
                return {"thread": item["thread"], "statuses": statuses, "at": time.time()}
            await asyncio.sleep(0.2)
        return {"thread": item["thread"], "statuses": statuses, "at": None}

    async with httpx.AsyncClient(base_url=base, timeout=20) as http:
        restarter.start()
        results, _ = await load.paced(len(items) / 1.0, len(items), lambda i: one(http, items[i]))
    restarter.join(90)
    return results, ready.get("at", 0.0)


def run(options: Options) -> Outcome:
    rounds, per_round = (1, 10) if options.quick else (3, 20)
    out = Outcome(19, TITLE, False)
    first_decision, first_resume, answered = [], [], Counter()
    threads_all: list[str] = []
    with crash_rig(workers=2, keep=options.keep) as rig:
        pids = {n: rig.proc(n).pid for n in rig.alive_workers()}
        for r in range(rounds):
            threads = rig.start_runs(per_round, "send_email", f"c19-r{r}")
            threads_all += threads
            items = rig.wait_pending(threads)
            results, ready_at = asyncio.run(_decide_all(rig, items, 0.3))
            for res in results:
                answered.update(str(s) for s in res["statuses"])
            accepted = [res["at"] for res in results if res["at"] and res["at"] >= ready_at]
            if accepted:
                first_decision.append(min(accepted) - ready_at)
            stuck = rig.settle(threads, 60)
            finished = rig.scalar(
                "SELECT extract(epoch FROM min(finished_at)) FROM bw_run WHERE kind = 'resume' "
                "AND thread_id = ANY(%s) AND finished_at >= to_timestamp(%s)",
                threads,
                ready_at,
            )
            if finished is not None:
                first_resume.append(float(finished) - ready_at)
            log.info(
                "round %d: restarted; %d/%d runs resumed", r, per_round - len(stuck), per_round
            )
        applied = rig.effects_by_thread()
        decisions = rig.decisions(threads_all)
        same_workers = all(
            rig.proc(n).pid == pid and rig.proc(n).poll() is None for n, pid in pids.items()
        )
        retryable = {"0", "502", "503", "504"}
        out.checks = {
            "every decision committed in the end": all(decisions.get(t) == 1 for t in threads_all),
            "failures were retryable (503 or dropped), never another 4xx/5xx": all(
                s in retryable or s.startswith("2") or s == "409" for s in answered
            ),
            "0 lost (every run resumed and completed)": all(
                rig.thread_status(t) == "completed" for t in threads_all
            ),
            "ledger 1 per logical action": all(applied.get(t) == 1 for t in threads_all),
            "workers reconnected without a restart": same_workers,
            "no forked checkpoint chain": rig.forked_chains() == 0,
        }
        out.figures = {
            "restarts": rounds,
            "decisions in flight per restart": per_round,
            "answers (HTTP status: count; 0 = connection dropped)": dict(answered),
            "Postgres accepting -> first accepted decision (s)": spread(first_decision),
            "Postgres accepting -> first resumed run finished (s)": spread(first_resume),
            "lost decisions": f"{sum(1 for t in threads_all if decisions.get(t) != 1)}/{len(threads_all)}",
            "double-executed": f"{sum(1 for t in threads_all if applied.get(t, 0) > 1)}/{len(threads_all)}",
        }
        out.notes += rig.notes
        out.notes += [f"{r['thread']}: {r['statuses']}" for r in results if len(r["statuses"]) > 1]
    out.passed = all(out.checks.values())
    return out


CASE = Case(19, TITLE, run, budget_s=240)
