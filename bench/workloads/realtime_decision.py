"""Workload 7b, decision POST → resume run started, on the live server.

Setup: `warmup + decisions` runs of a graph that pauses at once are started (through the
start-run form, by the requesting user) and left pending. Then `reviewers` other users
(nobody may approve a run they started) approve them in turn at `rate` per second
overall, open loop, each with the POST the item page's htmx form sends (CSRF token,
interrupt id, the digest it showed, a fresh client decision id). Spreading the decisions
over reviewers keeps each under the product's rate limit (20 decisions per 10 s per
reviewer), as a team would be. For every decision:

- POST latency: from sending the request to its answer (the decision panel);
- POST → resume started: the resume run's `started_at` (set by the claim, Postgres
  `now()`) minus the wall-clock time the POST was sent.

The first `warmup` decisions are left out. `clients` inbox pages stay connected meanwhile
(each decision is pushed to them), as a reviewer's other tab would.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from bench import pg
from bench.live import load
from bench.live.session import Reviewer, create_reviewer
from bench.live.spy import ServerProfile
from bench.live.stack import Stack, live_stack
from bench.stats import summarize_ms

DEFAULTS = {
    "mode": "single",
    "decisions": 200,
    "rate": 5.0,
    "warmup": 20,
    "clients": 1,
    "reviewers": 5,
    "setup_rate": 20.0,
    "drain_s": 30.0,
    "spy": "",
    "spy_idle": False,
    "keep": False,
}

_PENDING_ITEMS = """
SELECT id, interrupt_id, digest FROM bw_review_item WHERE status = 'pending' ORDER BY id
"""
_RESUMES = """
SELECT d.client_decision_id, extract(epoch FROM r.started_at)::float8,
       extract(epoch FROM r.created_at)::float8
  FROM bw_review_decision d JOIN bw_run r ON r.id = d.resume_run_id
 WHERE d.client_decision_id = ANY(%s)
"""
_OUTCOMES = """
SELECT r.status, count(*) FROM bw_review_decision d JOIN bw_run r ON r.id = d.resume_run_id
 WHERE d.client_decision_id = ANY(%s) GROUP BY r.status
"""
_STARTED = """
SELECT count(*) FROM bw_review_decision d JOIN bw_run r ON r.id = d.resume_run_id
 WHERE d.client_decision_id = ANY(%s) AND r.started_at IS NOT NULL
"""


async def _decide_all(
    stack: Stack, deciders: list[Reviewer], items: list[dict[str, Any]], rate: float
) -> tuple[list[load.Sent], float]:
    base = stack.server.base
    async with load.client(base) as http:
        return await load.paced(
            rate,
            len(items),
            lambda i: load.decide(http, deciders[i % len(deciders)], base, items[i]),
        )


def _wait_started(url: str, sent: list[load.Sent], timeout: float) -> int:
    ids = [s.ref for s in sent]
    return load.wait_for_count(url, _STARTED, len(ids), timeout, (ids,))


def _measure(stack: Stack, p: dict[str, Any]) -> dict[str, Any]:
    url, warmup, n = stack.database_url, int(p["warmup"]), int(p["decisions"])
    asyncio.run(
        load.start_runs(stack.server.base, stack.reviewer, warmup + n, float(p["setup_rate"]), "d")
    )
    if load.wait_for_count(url, load.PENDING, warmup + n, 120) < warmup + n:
        raise RuntimeError("the setup runs did not all pause within 120 s")
    with pg.connect(url) as conn:
        items = [
            {"id": r[0], "interrupt_id": r[1], "digest": r[2]}
            for r in conn.execute(_PENDING_ITEMS).fetchall()
        ]
    deciders = [create_reviewer(f"bench-decider-{k}") for k in range(int(p["reviewers"]))]
    warm, _ = asyncio.run(_decide_all(stack, deciders, items[:warmup], float(p["rate"])))
    _wait_started(url, warm, 30)
    time.sleep(1.0)

    spy = (
        ServerProfile(stack.server.pids(), Path(p["spy"]), idle=bool(p["spy_idle"])).start()
        if p["spy"]
        else None
    )
    cpu_before = stack.cpu_seconds()
    sent, behind = asyncio.run(_decide_all(stack, deciders, items[warmup:], float(p["rate"])))
    started = _wait_started(url, sent, float(p["drain_s"]))
    cpu_after = stack.cpu_seconds()
    profiles = spy.stop() if spy else []

    time.sleep(1.0)  # let the last resumed runs finish
    with pg.connect(url) as conn:
        outcomes = dict(conn.execute(_OUTCOMES, ([s.ref for s in sent],)).fetchall())
        resumes = {
            r[0]: (r[1], r[2]) for r in conn.execute(_RESUMES, ([s.ref for s in sent],)).fetchall()
        }
    to_started = [resumes[s.ref][0] - s.sent for s in sent if resumes.get(s.ref, (None,))[0]]
    to_queued = [resumes[s.ref][1] - s.sent for s in sent if s.ref in resumes]
    cpu = {k: round(cpu_after[k] - cpu_before[k], 2) for k in cpu_before}
    statuses: dict[str, int] = {}
    for s in sent:
        statuses[str(s.status)] = statuses.get(str(s.status), 0) + 1
    span = sent[-1].sent - sent[0].sent if len(sent) > 1 else 0.0
    return {
        "mode": p["mode"],
        "resume_started_ms": summarize_ms(to_started),
        "post_ms": summarize_ms([s.latency_s for s in sent]),
        "resume_queued_ms": summarize_ms(to_queued),
        "decisions": {
            "sent": len(sent),
            "statuses": statuses,
            "resumes_started": started,
            "resumed_runs": {str(k): int(v) for k, v in outcomes.items()},
            "reviewers": len(deciders),
            "sent_per_s": round((len(sent) - 1) / span, 2) if span > 0 else None,
            "generator_behind_ms": round(behind * 1000, 2),
        },
        "server_cpu_s": cpu,
        "server_cpu_ms_per_decision": round(sum(cpu.values()) * 1000 / max(1, len(sent)), 2),
        "profiles": profiles,
    }


def run(engine: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Measure decision → resume on the live server in `params["mode"]`."""
    p = {**DEFAULTS, **params}
    with live_stack(str(p["mode"]), int(p["clients"]), keep=bool(p["keep"])) as stack:
        return _measure(stack, p)
