"""Case 49: chaos soak, scaled to one 2-core machine, for `--minutes` (quick: 2 minutes).

Scale (reliability.md asks for 2,000 paused threads, 40 reviewers and 3 workers for 30
minutes; this box has 2 cores shared by daphne, the workers, Postgres, Redis and the
harness): a pool of 2,000 paused threads (`--paused`) of the ledger agent (quick 60) kept
topped up as they are decided, 8 reviewers, 3 worker processes (quick: 2) with one
thread each, interrupts taken at `RATE` per second (3; quick 2), each raced by 2
reviewers (two POSTs at once, distinct client decision ids), 10 % followed by a replay of
the winner's POST (same client decision id), 5 % preceded by a stale POST (a digest the
reviewer never saw). A POST answered 5xx or not at all is retried with the same client
decision id (up to 3 times, 1 s apart), as a browser's retry would.

Faults on the throwaway cluster of `bench.hostile.rig` and a throwaway Redis: SIGKILL of
a worker every 20 s (one holding a running run when there is one) (a replacement starts at once); then, once per 10-minute cycle
(`minutes / 10` cycles, at least one): Redis down 60 s (quick: 10 s), Postgres `pg_ctl -m
immediate restart`, and a backend-kill burst (every app backend terminated each second
for 20 s; quick: 10 s).

The ledger check at the end (after decisions stop and resumes drain): decisions accepted
vs stored and applied (resume run succeeded), tool actions vs executed twice (the tool
service counts applied effects per idempotency key), stale or duplicate POSTs tried vs
accepted, interrupts with two decisions, forked checkpoint chains; recovery times
(worker kill → its runs claimed elsewhere; Postgres back → first 2xx decision and first
resumed run; Redis back → first push at an inbox socket); decision POST latency.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

from bench.hostile.case import Case, Options, Outcome
from bench.hostile.redis import ThrowawayRedis
from bench.hostile.rig import Rig, crash_rig, spread
from bench.hostile.sockets import SocketFleet, first_seen
from bench.live import load
from bench.live.session import Reviewer, create_reviewer
from bench.stats import summarize_ms

log = logging.getLogger(__name__)

KILL_EVERY_S = 20.0
REVIEWERS = 8
RETRIES = 3


@dataclass
class Tally:
    posts: list[load.Sent] = field(default_factory=list)
    accepted: set[str] = field(default_factory=set)
    """Client decision ids answered 2xx (replays of them included: same id)."""
    races: int = 0
    race_both_2xx: int = 0
    replays: int = 0
    replays_2xx: int = 0
    stale_tried: int = 0
    stale_accepted: int = 0
    stale_refused_409: int = 0
    errors: int = 0
    faults: list[tuple[str, float, float]] = field(default_factory=list)
    """(kind, start, end) wall-clock times."""


async def _post(
    http: httpx.AsyncClient,
    reviewer: Reviewer,
    base: str,
    item: dict[str, Any],
    tally: Tally,
    client_id: str | None = None,
) -> load.Sent:
    """One decision POST, retried on 5xx or no answer with the same client decision id."""
    client_id = client_id or uuid.uuid4().hex
    sent = load.Sent(time.time(), time.time(), 0, client_id)
    for attempt in range(RETRIES + 1):
        try:
            sent = await load.decide(http, reviewer, base, item, client_id=client_id)
        except httpx.HTTPError:
            sent = load.Sent(sent.sent, time.time(), 0, client_id)
        tally.posts.append(sent)
        if 200 <= sent.status < 500:
            break
        tally.errors += 1
        if attempt < RETRIES:
            await asyncio.sleep(1.0)
    if 200 <= sent.status < 300:
        tally.accepted.add(client_id)
    return sent


async def _race(
    http: httpx.AsyncClient,
    team: list[Reviewer],
    base: str,
    item: dict[str, Any],
    tally: Tally,
    rng: random.Random,
) -> None:
    a, b, c = rng.sample(team, 3)
    if rng.random() < 0.05:
        tally.stale_tried += 1
        stale = await _post(http, c, base, {**item, "digest": "0" * 64}, tally)
        tally.stale_accepted += 200 <= stale.status < 300
        tally.stale_refused_409 += stale.status == 409
    tally.races += 1
    first, second = await asyncio.gather(
        _post(http, a, base, item, tally), _post(http, b, base, item, tally)
    )
    ok = [s for s in (first, second) if 200 <= s.status < 300]
    tally.race_both_2xx += len(ok) == 2
    if ok and rng.random() < 0.10:
        winner = a if ok[0] is first else b
        tally.replays += 1
        again = await _post(http, winner, base, item, tally, client_id=ok[0].ref)
        tally.replays_2xx += 200 <= again.status < 300


async def _reviewers(
    rig: Rig, team: list[Reviewer], rate: float, seconds: float, tally: Tally, seed: int
) -> None:
    """Take a pending item at `rate` per second and race it, for `seconds`."""
    rng = random.Random(seed)
    base = rig.server.base
    taken: set[int] = set()
    tasks: set[asyncio.Task[None]] = set()
    queue: list[dict[str, Any]] = []
    async with load.client(base) as http:
        start = time.monotonic()
        tick = 0
        while time.monotonic() - start < seconds:
            delay = start + tick / rate - time.monotonic()
            tick += 1
            if delay > 0:
                await asyncio.sleep(delay)
            if not queue:
                with contextlib.suppress(Exception):
                    fresh = await asyncio.to_thread(rig.pending_items)
                    queue = [i for i in fresh if i["id"] not in taken]
                    rng.shuffle(queue)
                if not queue:
                    continue
            item = queue.pop()
            taken.add(item["id"])
            task = asyncio.create_task(_race(http, team, base, item, tally, rng))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        await asyncio.gather(*tasks, return_exceptions=True)


class Supply(threading.Thread):
    """Keeps about `pool` threads paused or queued: starts runs as items get decided."""

    def __init__(self, rig: Rig, pool: int, stop: threading.Event) -> None:
        super().__init__(daemon=True)
        self.rig, self.pool, self.stop_event = rig, pool, stop
        self.started_runs = 0
        self.batches = 0

    def top_up(self) -> None:
        waiting = int(
            self.rig.scalar(
                "SELECT (SELECT count(*) FROM bw_review_item WHERE status = 'pending') + "
                "(SELECT count(*) FROM bw_run WHERE status IN ('queued', 'running'))"
            )
        )
        want = min(50, self.pool - waiting)
        if want > 0:
            # A fresh tag per batch: a batch cut short by a fault must not make the next
            # one reuse its thread ids (they may still have their run queued).
            self.batches += 1
            self.rig.start_runs(want, "send_email", f"soak{self.batches}")
            self.started_runs += want

    def run(self) -> None:
        from django.db import connection

        while not self.stop_event.wait(2.0):
            try:
                self.top_up()
            except Exception as exc:  # Postgres away: try again next tick
                log.info("supply: %s", type(exc).__name__)
                with contextlib.suppress(Exception):
                    connection.close()


class Faults(threading.Thread):
    """The fault schedule, in a thread: worker kills every 20 s, the cycle's big faults."""

    def __init__(
        self,
        rig: Rig,
        redis: ThrowawayRedis,
        seconds: float,
        quick: bool,
        tally: Tally,
        seed: int,
    ) -> None:
        super().__init__(daemon=True)
        self.rig, self.redis, self.seconds, self.quick, self.tally = (
            rig,
            redis,
            seconds,
            quick,
            tally,
        )
        self.rng = random.Random(seed)
        self.kills: list[tuple[str, float, list[str]]] = []
        self.pg_ready: list[float] = []
        self.redis_up: list[float] = []
        self.stop_event = threading.Event()
        self.release = threading.Event()
        """Set after the drain: the thread lives until then, because the workers it started
        get SIGTERM when it ends (`setpriv --pdeathsig` fires on the parent thread's exit)."""
        cycles = max(1, round(seconds / 600))
        length = seconds / cycles
        self.plan: list[tuple[float, str]] = []
        for c in range(cycles):
            self.plan += [
                (c * length + 0.15 * length, "redis"),
                (c * length + 0.45 * length, "postgres"),
                (c * length + 0.70 * length, "backends"),
            ]

    def kill_one(self) -> None:
        alive = self.rig.alive_workers()
        if len(alive) < 2:
            return
        busy = {
            str(r[0])
            for r in self.rig.query("SELECT lease_owner FROM bw_run WHERE status = 'running'")
        }
        # A worker in the middle of a run when there is one (runs are short: a blind pick
        # mostly hits an idle worker, which tests nothing but the respawn).
        victim = self.rng.choice(sorted(busy & set(alive)) or alive)
        running = [
            str(r[0])
            for r in self.rig.query(
                "SELECT id FROM bw_run WHERE status = 'running' AND lease_owner = %s", victim
            )
        ]
        at = time.time()
        self.rig.kill(victim)
        self.kills.append((victim, at, running))
        self.rig.spawn_worker(wait=False)

    def redis_down(self) -> None:
        down = 10.0 if self.quick else 60.0
        start = self.redis.shutdown()
        self.stop_event.wait(down)
        self.redis_up.append(self.redis.start())
        self.tally.faults.append(("redis", start, self.redis_up[-1]))

    def postgres(self) -> None:
        start = time.time()
        ready = self.rig.cluster.restart()
        self.pg_ready.append(time.time() - (time.monotonic() - ready))
        self.tally.faults.append(("postgres", start, self.pg_ready[-1]))

    def backends(self) -> None:
        burst = 10.0 if self.quick else 20.0
        start = time.time()
        while time.time() - start < burst and not self.stop_event.is_set():
            for name in ("worker-%", "beamweaver%"):
                with contextlib.suppress(Exception):
                    self.rig.cluster.terminate(name)
            self.stop_event.wait(1.0)
        self.tally.faults.append(("backends", start, time.time()))

    def run(self) -> None:
        self.schedule()
        self.release.wait(600)

    def schedule(self) -> None:
        begin = time.monotonic()
        next_kill = KILL_EVERY_S
        plan = list(self.plan)
        while not self.stop_event.is_set():
            elapsed = time.monotonic() - begin
            if elapsed >= self.seconds:
                return
            try:
                if plan and elapsed >= plan[0][0]:
                    _, kind = plan.pop(0)
                    log.info("fault: %s at %.0f s", kind, elapsed)
                    getattr(self, {"redis": "redis_down"}.get(kind, kind))()
                elif elapsed >= next_kill:
                    next_kill += KILL_EVERY_S
                    self.kill_one()
            except Exception as exc:
                log.warning("fault step failed: %r", exc)
            self.stop_event.wait(0.2)


class ConnectionPeaks(threading.Thread):
    """Samples the cluster's client backends by `application_name` every second until
    `stop`: the peak per process (daphne, each worker) and of the whole cluster."""

    def __init__(self, rig: Rig, stop: threading.Event) -> None:
        super().__init__(name="soak-connection-peaks", daemon=True)
        self.rig, self.stop = rig, stop
        self.peak: dict[str, int] = {}
        self.total = 0

    def run(self) -> None:
        while not self.stop.wait(1.0):
            try:
                rows = self.rig.cluster.query(
                    "SELECT application_name, count(*) FROM pg_stat_activity "
                    "WHERE backend_type = 'client backend' GROUP BY 1"
                )
            except Exception:  # the cluster is restarting: the next sample counts
                continue
            self.total = max(self.total, sum(n for _, n in rows))
            for name, n in rows:
                self.peak[name] = max(self.peak.get(name, 0), n)

    def report(self) -> dict[str, Any]:
        from beamweaver_core.postgres.pool_size import WEB_POOL_SIZE, worker_pool_size

        workers = [n for name, n in self.peak.items() if name.startswith("worker")]
        by_kind = {
            "daphne": [self.peak.get("beamweaver-daphne", 0), WEB_POOL_SIZE],
            "worker (most of any)": [max(workers, default=0), worker_pool_size(1)],
        }
        return {
            "by_kind": by_kind,
            "by_name": dict(sorted(self.peak.items())),
            "cluster": self.total,
        }


def _recoveries(rig: Rig, faults: Faults) -> dict[str, Any]:
    """Per run a killed worker held: seconds from the SIGKILL to that run finishing on
    another worker (the sweeper re-queues the same run once its lease expires)."""
    out: list[float] = []
    for _victim, at, runs in faults.kills:
        for run_id in runs:
            finished = rig.scalar(
                "SELECT extract(epoch FROM finished_at)::float8 FROM bw_run WHERE id = %s "
                "AND status IN ('succeeded', 'interrupted')",
                run_id,
            )
            if finished is not None:
                out.append(max(0.0, float(finished) - at))
    return spread(out)


def run(options: Options) -> Outcome:
    minutes = 2.0 if options.quick else options.minutes
    seconds = minutes * 60
    pool = 60 if options.quick else options.paused
    rate = 2.0 if options.quick else 3.0
    workers = 2 if options.quick else 3
    tally = Tally()
    checks: dict[str, bool] = {}
    figures: dict[str, Any] = {
        "scale": {
            "minutes": minutes,
            "paused_pool": pool,
            "reviewers": REVIEWERS,
            "workers": workers,
            "interrupts_per_s": rate,
            "racers_per_interrupt": 2,
            "replays": "10 %",
            "stale": "5 %",
            "kill_every_s": KILL_EVERY_S,
            "fault_cycles": max(1, round(seconds / 600)),
            "redis_down_s": 10 if options.quick else 60,
            "backend_burst_s": 10 if options.quick else 20,
        }
    }
    with ThrowawayRedis() as redis:
        os.environ["BENCH_REDIS_URL"] = redis.url
        with crash_rig(workers=workers, keep=options.keep) as rig:
            team = [create_reviewer(f"soak-{k}") for k in range(REVIEWERS)]
            rig.start_runs(pool, "send_email", "soak-setup")
            # the runs pause at the workers' pace (~20/s here): allow for a bigger pool
            deadline = time.monotonic() + max(600.0, pool / 10)
            while len(rig.pending_items()) < pool * 0.9 and time.monotonic() < deadline:
                time.sleep(1.0)
            figures["paused_at_start"] = len(rig.pending_items())
            stop = threading.Event()
            supply = Supply(rig, pool, stop)
            faults = Faults(rig, redis, seconds, options.quick, tally, options.seed)
            peaks = ConnectionPeaks(rig, stop)
            peaks.start()
            with SocketFleet(
                rig.server.ws_base,
                rig.server.base,
                rig.reviewer.cookie,
                ["/ws/inbox/"] * 3,
                rig.work_dir,
            ) as fleet:
                fleet.wait_ready()
                supply.start()
                faults.start()
                asyncio.run(_reviewers(rig, team, rate, seconds, tally, options.seed))
                stop.set()
                faults.stop_event.set()
                supply.join(30)
                # Drain: every accepted decision's resume runs to its end.
                accepted = sorted(tally.accepted)
                drained = _wait_applied(rig, accepted, 180.0)
                faults.release.set()
                faults.join(60)
                events = fleet.stop()
                figures["workers_alive_at_end"] = len(rig.alive_workers())
                peaks.join(10)
                figures["peak_connections"] = peaks.report()
                figures["server_errors_logged"] = _server_errors(rig.log_text("daphne"))
            figures.update(_ledger(rig, tally, accepted, drained, faults, events))
    f = figures
    checks["0 lost decisions"] = f["decisions_lost"] == 0
    checks["0 tool actions executed twice"] = f["tool_actions_executed_twice"] == 0
    checks["every applied decision executed its tool"] = f["applied_without_effect"] == 0
    checks["0 stale or duplicate accepted"] = (
        f["stale_accepted"] == 0
        and f["race_both_accepted"] == 0
        and f["interrupts_decided_twice"] == 0
    )
    checks["0 forked chains"] = f["forked_chains"] == 0
    checks["faults all ran"] = len(tally.faults) == 3 * f["scale"]["fault_cycles"]
    checks["every process within its pool size"] = all(
        peak <= limit for peak, limit in f["peak_connections"]["by_kind"].values()
    )
    return Outcome(49, CASE.title, all(checks.values()), figures, checks)


def _server_errors(text: str) -> dict[str, int]:
    """The last line of each traceback daphne logged for an HTTP request, counted."""
    out: dict[str, int] = {}
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if "Internal Server Error" not in line:
            continue
        for tail in lines[index + 1 : index + 400]:
            if (
                tail
                and not tail.startswith((" ", "Traceback", "During", "The above"))
                and ":" in tail
            ):
                if tail[:4].isdigit():  # the next log record: no exception line found
                    break
                key = tail[:160]
                out[key] = out.get(key, 0) + 1
        # the exception chain's lines all count; keep the report short
    return dict(sorted(out.items(), key=lambda kv: -kv[1])[:6])


APPLIED = """
SELECT d.client_decision_id, r.status, i.thread_id,
       extract(epoch FROM r.finished_at)::float8, extract(epoch FROM d.created_at)::float8,
       left(r.error, 300), r.attempts, r.lease_owner
  FROM bw_review_decision d JOIN bw_review_item i ON i.id = d.item_id
  LEFT JOIN bw_run r ON r.id = d.resume_run_id
 WHERE d.client_decision_id = ANY(%s)
"""


def _wait_applied(rig: Rig, accepted: list[str], timeout: float) -> list[tuple[Any, ...]]:
    deadline = time.monotonic() + timeout
    while True:
        try:
            rows = rig.query(APPLIED, accepted)
        except Exception:
            rows = []
        done = [r for r in rows if r[1] == "succeeded"]
        if len(done) == len(accepted) or time.monotonic() > deadline:
            return rows
        time.sleep(1.0)


def _ledger(
    rig: Rig,
    tally: Tally,
    accepted: list[str],
    rows: list[tuple[Any, ...]],
    faults: Faults,
    events: list[list[Any]],
) -> dict[str, Any]:
    stored = {r[0]: r for r in rows}
    applied = [r for r in rows if r[1] == "succeeded"]
    effects = rig.effects_by_thread()
    decided_threads = {r[2] for r in applied}
    twice = sum(1 for n in effects.values() if n > 1)
    without = sum(1 for t in decided_threads if effects.get(t, 0) == 0)
    decided_twice = int(
        rig.scalar(
            "SELECT count(*) FROM (SELECT item_id FROM bw_review_decision GROUP BY item_id "
            "HAVING count(*) > 1) t"
        )
    )
    statuses: dict[str, int] = {}
    for s in tally.posts:
        statuses[str(s.status)] = statuses.get(str(s.status), 0) + 1
    in_fault = [s for s in tally.posts if any(a - 1 <= s.sent <= b + 5 for _, a, b in tally.faults)]
    calm = [s for s in tally.posts if s not in in_fault]
    span = max((s.sent for s in tally.posts), default=0) - min(
        (s.sent for s in tally.posts), default=0
    )
    first_decision = []
    first_resume = []
    for ready in faults.pg_ready:
        ok = [s.done for s in tally.posts if 200 <= s.status < 300 and s.sent >= ready]
        if ok:
            first_decision.append(min(ok) - ready)
        resumed = [r[3] for r in applied if r[3] is not None and r[3] >= ready]
        if resumed:
            first_resume.append(min(resumed) - ready)
    seen = first_seen(events)
    push_back = []
    for up in faults.redis_up:
        after = [t for t in seen.values() if t >= up]
        if after:
            push_back.append(min(after) - up)
    return {
        "decisions_accepted": len(accepted),
        "decisions_stored": len(stored),
        "decisions_applied": len(applied),
        "decisions_lost": len(accepted) - len(applied),
        "not_applied": [
            {"status": r[1], "attempts": r[6], "owner": r[7], "error": r[5]}
            for r in rows
            if r[1] != "succeeded"
        ][:5]
        + [{"status": "no decision row"}] * (len(accepted) - len(stored)),
        "tool_actions": f"{sum(effects.values())} effects over {len(effects)} threads",
        "tool_actions_executed_twice": twice,
        "tool_calls_retried_deduplicated": sum(rig.tools.requests().values())
        - sum(rig.tools.applied().values()),
        "applied_without_effect": without,
        "races": tally.races,
        "race_both_accepted": tally.race_both_2xx,
        "replays": f"{tally.replays_2xx}/{tally.replays} answered 2xx (same decision)",
        "stale_tried": tally.stale_tried,
        "stale_accepted": tally.stale_accepted,
        "stale_refused_409": tally.stale_refused_409,
        "stale_or_duplicate": f"{tally.stale_accepted + tally.race_both_2xx}/{tally.stale_tried + tally.races} accepted",
        "interrupts_decided_twice": decided_twice,
        "forked_chains": rig.forked_chains(),
        "post_statuses": dict(sorted(statuses.items())),
        "posts_retried_after_5xx_or_no_answer": tally.errors,
        "post_rate_per_s": round(len(tally.posts) / span, 2) if span else None,
        "decision_post_ms_all": summarize_ms([s.latency_s for s in tally.posts if s.status]),
        "decision_post_ms_outside_faults": summarize_ms([s.latency_s for s in calm if s.status]),
        "worker_kills": len(faults.kills),
        "worker_kill_to_run_finished_s": _recoveries(rig, faults),
        "postgres_restarts": len(faults.pg_ready),
        "postgres_back_to_first_decision_s": spread(first_decision),
        "postgres_back_to_first_resumed_run_s": spread(first_resume),
        "redis_outages": len(faults.redis_up),
        "redis_back_to_first_push_s": spread(push_back),
        "faults": [(k, round(b - a, 1)) for k, a, b in tally.faults],
    }


CASE = Case(49, "Chaos soak", run, budget_s=2400)
